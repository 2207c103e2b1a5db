"""Stage 3, lower, which module and hop each inline message passing computes: a k-hop module
traced into (TAGConv, ChebConv, APPNPConv, a user's module with several `update_all` calls)
leaves one `update_all` per hop, and each becomes a layer of the generated inference. Named by
its update_all alone ("g.update_all (copy_u, sum)"), a layer does not say whose it is; named
by the module whose forward made it and the hop ("self.layers[0] (TAGConv), hop 2 of 2"), a
reviewer lines it up with the model. The module is the innermost one on the op's
nn_module_stack; forward's own update_all calls (no module) keep their plain name."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import torch
import torch.fx as fx

from gnn_codegen.ir import Op
from gnn_codegen.lower.accessors import accessor


def _module_of(node: fx.Node, model: torch.nn.Module) -> str:
    """`self.layers[0] (TAGConv)`: the innermost module whose forward made node, or ""."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return ""
    return f"{accessor(model, path)} ({type(module).__name__})" if path else ""


def with_hops(ops: list[Op], nodes: dict[str, fx.Node], model: torch.nn.Module) -> list[Op]:
    """ops with each inline update_all's module, and its hop among that module's update_all
    calls, in the order forward makes them."""
    within = {op.name: _module_of(nodes[op.name], model) for op in ops
              if op.mp is not None and op.mp.inline and op.name in nodes}
    # update_all calls are hops over the graph; apply_edges calls (per edge) are none
    hopping = {op.name for op in ops if op.name in within and op.accessor.endswith(".update_all")}
    hops = Counter(w for name, w in within.items() if w and name in hopping)
    seen: Counter[str] = Counter()
    out = []
    for op in ops:
        where = within.get(op.name, "")
        if op.mp is not None and where:
            seen[where] += op.name in hopping
            hop = seen[where] if op.name in hopping else 0
            op = replace(op, mp=replace(op.mp, within=where, hop=hop, hops=hops[where]))
        out.append(op)
    return out

"""Stage 3, lower, the user's module each op ran within: an op of PairNorm's forward, traced
into, is an op of `self.norm (PairNorm)`. Where the cut splits such a module's call over
several passes (it reads means over all nodes), the renderer writes those passes as one local
function named for the module (render/module_functions.py); this is how it knows whose they
are. The module is the innermost one on the op's fx nn_module_stack; a message-passing module
(a leaf of the trace, or written out) and forward's own lines give none."""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.fx as fx

from gnn_codegen.ir import Op
from gnn_codegen.lower.accessors import accessor


def _module_call(node: fx.Node, model: torch.nn.Module) -> tuple[str, str]:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ()
    path = list(stack.values())[-1][0]
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return ()
    return (accessor(model, path), type(module).__name__) if path else ()


def with_module_calls(ops: list[Op], nodes: dict[str, fx.Node], model: torch.nn.Module) -> list[Op]:
    """ops, each function or method op with the module it ran within (Op.module_call)."""
    return [replace(op, module_call=_module_call(nodes[op.name], model))
            if op.kind in ("function", "method") and not op.helper and op.name in nodes else op
            for op in ops]

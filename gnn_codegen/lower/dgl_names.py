"""Stage 3, lower, readable names for the locals of DGL's propagation modules: a module traced
into (ChebConv, TAGConv) leaves its values named by its own variables, which mean nothing
beside the user's model (`X_1`, `X_i`, `D_invsqrt`, `rst` for every hop). This table says, per
module class and DGL variable, what the value is: the Chebyshev terms `t1`, `t2`, ..., the hops
`hop1`, `hop2`, ..., the norm `norm`; `{hop}` is the number of the module's update_all calls
made before the value (with_hops in hops.py counts them alike), so every hop's value has a name
of its own, the same in every run; where two layers' values meet, the stored tensors are
`hop1_3` (layer 3's) and `hop1_src` (the rows sent on), render/method.py.

Only the propagation part of a module is named so: its values from its first op to its first
call of a module of its own (TAGConv's and ChebConv's Linear over the hops), after which `rst`
and `h` are the layer's result and keep their names. A value forward's own line names (the
user's `h = conv(g, h)`) keeps the user's name: only names from the module's own lines change,
and the value a DGL module returns takes the name the user's line gives it (with_callers_names):
TAGConv's `rst = self._activation(rst)` is the user's `h` of `h = layer(self.g, h)`."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import torch
import torch.fx as fx

from gnn_codegen.ir import Op
from gnn_codegen.lower.spelling import assigned_variable

# (module class, DGL's variable) -> the name of what it holds; {hop}: hops made before it
READABLE = {
    ("ChebConv", "X_1"): "t1",
    ("ChebConv", "X_i"): "t{hop}",
    ("ChebConv", "D_invsqrt"): "norm",
    ("TAGConv", "rst"): "hop{hop}",
}
# values of a module's lines after its first hop that read no hop: APPNPConv's teleport term
# `self._alpha * feat_0`, on the line `feat = (1 - self._alpha) * feat + self._alpha * feat_0`
# of every hop (simplify.py computes it once)
HOP_FREE = {("APPNPConv", "feat"): "teleport"}


def _innermost(node: fx.Node | None, model: torch.nn.Module) -> tuple[str, str]:
    """(path, class name) of the innermost module whose forward made node, or ("", "")."""
    stack = (node.meta.get("nn_module_stack") or {}) if node is not None else {}
    if not stack:
        return "", ""
    path = list(stack.values())[-1][0]
    try:
        return path, type(model.get_submodule(path)).__name__
    except AttributeError:
        return "", ""


def with_readable_names(ops: list[Op], nodes: dict[str, fx.Node], model: torch.nn.Module) -> list[Op]:
    """ops with the variables of the table's modules' propagation renamed (var and line_var)."""
    hops: Counter[str] = Counter()  # update_all calls made so far, per module
    done: set[str] = set()  # modules past their first call of a module of their own
    after_hops: set[str] = set()  # values that read a hop's
    out = []
    for op in ops:
        path, cls = _innermost(nodes.get(op.name), model)
        if op.kind == "mp" and op.mp is not None and op.mp.inline and op.accessor.endswith(".update_all"):
            hops[path] += 1
            after_hops.add(op.name)
        elif any(ref in after_hops for ref in op.refs()):
            after_hops.add(op.name)
        elif hops[path] and (cls, op.line_var) in HOP_FREE and not op.var:
            op = replace(op, line_var=HOP_FREE[(cls, op.line_var)])
        if op.kind == "module":  # TAGConv's self.lin: a module of its own, on the stack as itself
            done.update(p for p in hops if op.target.startswith(f"{p}."))
        if path and path not in done and any((cls, v) in READABLE for v in (op.var, op.line_var)):
            op = replace(op, var=_readable(cls, op.var, hops[path]), line_var=_readable(cls, op.line_var, hops[path]))
        out.append(op)
    return out


def _readable(cls: str, name: str, hop: int) -> str:
    """The table's name for DGL's `name`; a hop's name only after a hop (TAGConv's `rst` before
    its first is the layer's input, scaled to be sent: it keeps DGL's name)."""
    template = READABLE.get((cls, name))
    if not template or "{hop}" in template and hop == 0:
        return name
    return template.format(hop=hop)


def _called(node: fx.Node | None, model: torch.nn.Module) -> str:
    """The path of the DGL module whose call from the user's code made node, or ""."""
    stack = (node.meta.get("nn_module_stack") or {}) if node is not None else {}
    if not stack:
        return ""
    path = list(stack.values())[0][0]
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return ""
    return path if type(module).__module__.startswith("dgl.") else ""


def with_callers_names(ops: list[Op], nodes: dict[str, fx.Node], model: torch.nn.Module) -> list[Op]:
    """ops with the value each call of a DGL module traced into returns (its last op, before an
    op of another call or of the user's own code) named as the user's line names it, where
    that line assigns one variable: the library's name for it (`rst`) means nothing there."""
    calls = [_called(nodes.get(op.name), model) for op in ops]
    out = []
    for i, op in enumerate(ops):
        returned = bool(calls[i]) and (i + 1 == len(ops) or calls[i + 1] != calls[i])
        name = assigned_variable(op.location) if returned and op.library_line else ""
        out.append(replace(op, var=name) if name and op.var else op)
    return out

"""Stage 4, analysis, DGL's norm reshape: APPNPConv, TAGConv, SGConv and GraphConv shape a
norm of one number per node to broadcast over features of any rank,

    shp = norm.shape + (1,) * (feat.dim() - 1)
    norm = torch.reshape(norm, shp)

which the generated code printed as it is, a double take for a reviewer who knows the
features are rows of one vector. The rank of `feat` is known here (attributes: one row axis
and its trailing shape), so the reshape is `norm.unsqueeze(1)` where feat has two dimensions
and `norm` itself where it has one: the same tensor (a view of the same numbers, shaped
alike), without the shape arithmetic. Only for a norm of one number per row (a 1-D tensor of
node or edge rows); other ranks keep the reshape.

feat's rank is the caller's where it follows forward's input (a Linear keeps its input's
rank): TAGConv would take features of shape (N, 4, 16), and `norm.unsqueeze(1)` would then
broadcast wrongly. So the reshape is read so only where feat's rank is provably an input's
(forced_traits.py), and the program records that input's rank as an assumption, which the
generated method checks at entry (render/assumptions.py) as it checks forward's own decisions
on shapes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.analysis.forced_traits import equal_to_inputs
from gnn_codegen.ir import Assumption, Op, Program, Ref, StaticDecision, map_refs
from gnn_codegen.lower.simplify import computed_once

_RESHAPES = frozenset({"torch.reshape", "reshape", "view"})


def _function(program: Program, value: Any, target: str) -> Op | None:
    """The op value refers to, where it is a call of the function `target`."""
    if not isinstance(value, Ref):
        return None
    op = program.op(value.name)
    return op if op.kind == "function" and op.target == target and len(op.args) == 2 else None


def _ones_count(program: Program, value: Any, attrs: Attributes) -> tuple[int, str] | None:
    """(k, t) for `(1,) * (t.dim() - 1)` (or `(t.dim() - 1) * (1,)`) with t's rank known: k is
    rank - 1."""
    times = _function(program, value, "operator.mul")
    if times is None:
        return None
    ones, less = times.args if times.args[0] == (1,) else times.args[::-1]
    less_op = _function(program, less, "operator.sub")
    if ones != (1,) or less_op is None or less_op.args[1] != 1 or not isinstance(less_op.args[0], Ref):
        return None
    dim = program.op(less_op.args[0].name)
    if dim.kind != "method" or dim.target != "dim" or len(dim.args) != 1 or not isinstance(dim.args[0], Ref):
        return None
    rows = attrs[dim.args[0].name]
    return (len(rows.shape), dim.args[0].name) if rows.rows in ("node", "edge") else None


def _trailing_ones(op: Op, program: Program, attrs: Attributes) -> tuple[int, str] | None:
    """(k, t) where op reshapes a 1-D tensor of rows x to `x.shape + (1,) * k`, k being t's
    rank less one; else None."""
    if op.target not in _RESHAPES or op.kind not in ("function", "method") or len(op.args) != 2 or op.kwargs:
        return None
    tensor, shape = op.args
    add = _function(program, shape, "operator.add")
    if not isinstance(tensor, Ref) or attrs[tensor.name].rows not in ("node", "edge") or attrs[tensor.name].shape \
            or add is None:
        return None
    of = _function(program, add.args[0], "getattr")
    if of is None or of.args != (tensor, "shape"):
        return None
    return _ones_count(program, add.args[1], attrs)


def without_norm_reshapes(program: Program, attrs: Attributes) -> Program:
    """The program with each norm reshaped to broadcast over rows of known rank written as
    `norm.unsqueeze(1)` (or as norm itself), and the input rank that assumes recorded."""
    ranks: dict[str, str] | None = None
    aliases: dict[str, Ref] = {}
    ops: list[Op] = []
    decisions: list[StaticDecision] = []
    for op in program.ops:
        op = replace(op, args=map_refs(op.args, lambda r: aliases.get(r.name, r)),
                     kwargs=map_refs(op.kwargs, lambda r: aliases.get(r.name, r)))
        found = _trailing_ones(op, program, attrs)
        if found is not None and found[0] <= 1:
            ones, witness = found
            if ranks is None:
                ranks = equal_to_inputs(program, attrs, "rank")
            given = witness if witness in program.inputs else ranks.get(witness)
            if given is not None:
                decisions.append(_assumed(op, program, program.op(given).target, ones + 1, given != witness))
                if ones == 0:
                    aliases[op.name] = op.args[0]
                    continue
                op = replace(op, kind="method", target="unsqueeze", args=(op.args[0], 1))
        ops.append(op)
    if not decisions:
        return program
    program = replace(program, static_decisions=program.static_decisions + tuple(decisions))
    return computed_once(program.with_ops(tuple(ops), output=map_refs(program.output, lambda r: aliases.get(r.name, r))))


def _assumed(op: Op, program: Program, param: str, rank: int, intermediate: bool) -> StaticDecision:
    """The assumption a reshape read as an unsqueeze makes: forward's input `param` of `rank`
    dimensions, said at the module that reshapes (the user's line where known)."""
    later = program.ops[program.ops.index(op):]
    within = next((o.mp.within for o in later if o.mp is not None and o.mp.within), "")
    module = within[within.find("(") + 1:-1] if within.endswith(")") else "DGL"  # `self.x (APPNPConv)`
    where = op.location or f"{module}'s norm reshape"
    return StaticDecision("norm.shape + (1,) * (feat.dim() - 1)", where, rank,
                          (Assumption(param, "ndim", rank),), intermediate)

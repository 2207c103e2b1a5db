"""Stage 4, analysis, messages weighted by one: APPNPConv without edge weights makes
`torch.ones(g.num_edges(), 1)` and sends `fn.u_mul_e("h", "w", "m")`, so the generated code
built a tensor of ones per batch and multiplied every message by it. Multiplying a float32 by
1.0 is exact (NaN, infinities and -0.0 included), so where the weights are such ones and the
source rows float32 with at least as many trailing dimensions (the product keeps their shape
and dtype), the message is `fn.copy_u("h", "m")`, as a person writes it."""

from __future__ import annotations

from dataclasses import replace

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.ir import Op, Program, Ref
from gnn_codegen.lower.simplify import computed_once

_WEIGHTED = {"u_mul_e": (0, 1), "e_mul_u": (1, 0)}  # message -> (source field, weight field) positions


def _ones_per_edge(ref: object, graph: Ref, program: Program) -> tuple[int, ...] | None:
    """The trailing shape of `torch.ones(graph.num_edges(), 1, ...)` (through `.to(...)` of a
    device or tensor, which keeps its float32), or None where ref is not that."""
    while isinstance(ref, Ref) and program.op(ref.name).kind == "method" and program.op(ref.name).target == "to" \
            and not program.op(ref.name).kwargs and len(program.op(ref.name).args) == 2 \
            and _is_device(program.op(ref.name).args[1], program):
        ref = program.op(ref.name).args[0]
    if not isinstance(ref, Ref):
        return None
    op = program.op(ref.name)
    if op.kind != "function" or op.target != "torch.ones" or op.kwargs or not op.args:
        return None
    count, *rest = op.args
    counts_edges = isinstance(count, Ref) and program.op(count.name).kind == "method" \
        and program.op(count.name).target in ("num_edges", "number_of_edges") and program.op(count.name).args == (graph,)
    if not counts_edges or not all(type(d) is int and d == 1 for d in rest):
        return None
    return tuple(rest)


def _is_device(value: object, program: Program) -> bool:
    """`feat.device` (fx's getattr): a move, never a cast."""
    if not isinstance(value, Ref):
        return False
    op = program.op(value.name)
    return op.kind == "function" and op.target == "getattr" and len(op.args) == 2 and op.args[1] == "device"


def _unweighted(op: Op, program: Program, attrs: Attributes) -> Op:
    if op.kind != "mp" or op.mp is None or not op.mp.inline or len(op.args) != 5:
        return op
    graph, message, reduce, *fields = op.args
    if not isinstance(message, tuple) or message[0] not in _WEIGHTED:
        return op
    source, weight = _WEIGHTED[message[0]]
    ones = _ones_per_edge(fields[weight], graph, program)
    rows = fields[source]
    if ones is None or not isinstance(rows, Ref) or attrs[rows.name].dtype != "torch.float32" \
            or len(attrs[rows.name].shape) < len(ones):
        return op
    key = message[1 + source]
    mp = replace(op.mp, roles=(None, None, "src"))
    return replace(op, args=(graph, ("copy_u", key, message[-1]), reduce, rows), mp=mp,
                   class_name=op.class_name.replace(message[0], "copy_u", 1))


def without_unit_weights(program: Program, attrs: Attributes) -> Program:
    """The program with messages weighted by ones per edge sent as copies of the source rows."""
    ops = tuple(_unweighted(op, program, attrs) for op in program.ops)
    return program if ops == program.ops else computed_once(program.with_ops(ops))

"""Render, one stage's shared constants: the values a layer's function reads more than once
that depend on no node's rows (constants, weights, casts of them to a tensor's dtype and
device) -> the ones to compute once, as a local of their own, instead of writing their
expression again at every reader.

Such values are "inline" (analysis/attributes.py): they have no rows, so the renderer writes
them inside the expression that reads them. Read twice, that is the same value computed twice
and written out twice: ChebConv's `re_norm = 2.0 / lambda_max`, read by `-re_norm * h` and by
`X_0 * (re_norm - 1)`, came out as `2.0 / torch.tensor([2.0], dtype=torch.float32).to(feat)
.unsqueeze(-1)` four times per layer. Only values whose result is the same whichever rows the
batch has are shared: a shape (`h.shape[0]`: source rows or destination rows, by reader) or a
tensor sized by a row count is left where each reader writes it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from gnn_codegen.analysis.attributes import _takes_only_dtype_and_device
from gnn_codegen.analysis.sized_tensors import is_factory, row_count_of
from gnn_codegen.ir import Op, Program, iter_refs, reads_device

# what a tensor's attribute says that is the same for every batch of its rows
_ROW_FREE_ATTRIBUTES = ("dtype", "device")


def shared_constants(program: Program, inline: frozenset[str], readers: Iterable[str]) -> tuple[str, ...]:
    """The inline values that `readers` (a stage's ops, in order) would write out more than once
    and that depend on no node's rows, in the program's order (each after what it reads)."""
    occurrences = Counter[str]()
    for name in readers:
        for ref in program.op(name).refs():
            if ref in inline:
                occurrences[ref] += 1
    shared: list[str] = []
    free: dict[str, bool] = {}
    # readers come after what they read: counting backwards, a value's count is final when
    # its turn comes, and a shared value's expression is written once, so its own reads count once
    for op in reversed(program.ops):
        count = occurrences[op.name]
        if op.name not in inline or not count:
            continue
        named = count > 1 and _worth_a_name(program, op) and _row_free(program, inline, op.name, free)
        if named:
            shared.append(op.name)
        for ref in op.refs():
            if ref in inline:
                occurrences[ref] += 1 if named else count
    return tuple(reversed(shared))


def inline_reads(program: Program, inline: frozenset[str], op: Op) -> list[str]:
    """The inline values `op`'s expression writes, through the inline values it reads, each
    after what it reads."""
    seen: list[str] = []

    def visit(name: str) -> None:
        if name in inline and name not in seen:
            for ref in program.op(name).refs():
                visit(ref)
            seen.append(name)

    for ref in op.refs():
        visit(ref)
    return seen


def _worth_a_name(program: Program, op: Op) -> bool:
    """A computation, not an access: `self.w` or `h.dtype` read twice reads as well as a name."""
    if op.kind not in ("function", "method", "module"):
        return False
    return not reads_device(program, op) and not (op.kind == "function" and op.target == "getattr")


def _row_free(program: Program, inline: frozenset[str], name: str, free: dict[str, bool]) -> bool:
    """Whether the inline value `name` is the same for every batch: it reads weights, constants
    and other such values, and of a tensor with rows only its dtype and device."""
    if name not in free:
        op = program.op(name)
        witness = list(iter_refs(op.args[1:])) if _takes_only_dtype_and_device(op) else []
        attribute = op.kind == "function" and op.target == "getattr" and op.args[1:] in tuple((a,) for a in _ROW_FREE_ATTRIBUTES)
        result = not (is_factory(op) and row_count_of(op, program) is not None)
        for ref in op.refs():
            kind = program.op(ref).kind
            if ref in inline:
                result = result and _row_free(program, inline, ref, free)
            elif kind == "graph" or (kind != "attr" and ref not in witness and not attribute):
                result = False  # the graph's or the batch's rows: per batch, per reader
        free[name] = result
    return free[name]

"""Stage 4, analysis, prefixes that are the whole tensor: GCN2Conv reads its initial residual as
`feat_0[: feat.size(0)]`, the destination rows of a block's source rows. Where the layer's
function holds feat_0 and feat on the same rows (both the batch's destination rows, say), the
prefix is feat_0 itself, and printing the slice made a reviewer check the shapes. The renderer
asks here whether a slice's count is `t.size(0)` or `t.shape[0]` of a tensor t of the rows the
sliced tensor has (node rows, or edge rows): then, where its function reads t and the sliced
tensor on the same rows, it prints the tensor. The program keeps the slice, so the cut places
it as before (simplify.py reads `[: g.num_dst_nodes()]` the same way, for the program)."""

from __future__ import annotations

from typing import Any

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.analysis.sized_tensors import prefix_count
from gnn_codegen.ir import Op, Program, Ref


def row_count_of_tensor(ref: Any, program: Program) -> str | None:
    """The tensor whose row count ref is (`t.size(0)`, `t.shape[0]`), or None."""
    if not isinstance(ref, Ref):
        return None
    op = program.op(ref.name)
    if op.kind == "method" and op.target == "size" and len(op.args) == 2 and op.args[1] == 0 \
            and isinstance(op.args[0], Ref):
        return op.args[0].name
    if op.kind == "function" and op.target == "operator.getitem" and op.args[1:] == (0,) \
            and isinstance(op.args[0], Ref):
        shape = program.op(op.args[0].name)
        if shape.kind == "function" and shape.target == "getattr" and shape.args[1:] == ("shape",) \
                and isinstance(shape.args[0], Ref):
            return shape.args[0].name
    return None


def whole_prefix(op: Op, program: Program, attrs: Attributes) -> tuple[Ref, str] | None:
    """(the sliced tensor, the op that counts the rows: `t.size(0)`) where the sliced tensor and
    t have the same kind of rows, so that where both are read on the same rows the slice is the
    whole tensor; else None."""
    count = prefix_count(op)
    counted = row_count_of_tensor(count, program)
    sliced = op.args[0] if op.args else None
    if counted is None or not isinstance(sliced, Ref):
        return None
    rows = attrs[sliced.name].rows
    return (sliced, count.name) if rows in ("node", "edge") and attrs[counted].rows == rows else None

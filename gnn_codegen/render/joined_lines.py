"""Render, which values a layer function writes inside their reader's expression rather than on
a line of their own: a stage's ops and what reads them -> the values to nest, so that a line
of the user's forward (`F.relu(self.conv(g, h))`), or of a library module traced into (DGL's
ChebConv, `X_1 = -re_norm * h + X_0 * (re_norm - 1)`), stays one line.

A value is nested where it is read once, by an op of its own line on the same rows; never a
stored value, a tuple, or a value gnn-codegen made (write_out.py). The ops of a library module
forward is traced into all come from the user's one line that calls it: theirs is the same line
only where the library's line is the same too (APPNPConv's `src_norm = th.pow(...)` one line,
its `th.reshape(src_norm, shp)` another).

Its reader is the next op, or a later one where every op between is nested too, into that
reader or an op between (DGL's line computes `-re_norm * h`, then `X_0 * (re_norm - 1)`, then
their sum: the first product is read by the sum, not by the op after it), and none of them
changes a tensor in place: Python then computes the line's values in the order they were
traced, left operand first. The writer may ask for the next op alone (adjacent_only), where a
line joined so comes out longer than black's."""

from __future__ import annotations

from collections import Counter

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.cut.plan import Stage, value_deps
from gnn_codegen.ir import Program


def written_inside_readers(program: Program, inline: frozenset[str], attrs: Attributes, stage: Stage,
                           uses: Counter[str], special: set[str], adjacent_only: bool) -> tuple[set[str], bool]:
    """The stage's values to write inside their reader's expression (uses: readers per value in
    the stage; special: values written otherwise, never nested nor a reader of one), and
    whether any of them is read by another op than the next (a joined line)."""
    ops = [program.op(p.name) for p in stage.ops]
    space = {p.name: p.space for p in stage.ops}
    read_at: dict[str, int] = {}  # a value's first reader in the stage, by position
    for j, reader in enumerate(ops):
        for name in value_deps(program, inline, (reader.args, tuple(v for _, v in reader.kwargs))):
            read_at.setdefault(name, j)
    result: set[str] = set()
    joined = False
    # backwards: what lies between a value and its reader is decided before the value
    for i in range(len(ops) - 1, -1, -1):
        op, j = ops[i], read_at.get(ops[i].name, -1)
        if j <= i:
            continue
        reader, between = ops[j], ops[i + 1:j]
        if (uses[op.name] == 1 and op.location and op.location == reader.location
                and op.library_line == reader.library_line
                and not op.note and not reader.note
                and op.name not in stage.stores and op.name not in special and reader.name not in special
                and attrs[op.name].rows != "tuple" and space[op.name] == space[reader.name]
                and not (between and adjacent_only)
                and all(b.name in result and read_at[b.name] <= j for b in between)
                and not any(b.mutates for b in (op, *between, reader))):
            result.add(op.name)
            joined = joined or bool(between)
    return result, joined

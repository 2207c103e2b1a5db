"""Render, a loop whose last layer stores fewer tensors than the others (issue 37): every layer
of a ChebConv, TAGConv or SAGEConv stack but the last stores its result and the rows the next
layer sends from (`h, h_src`), the last its result alone. The loop calls one function for all:
in the last round it returns its result and None for each tensor it does not store (the
runtime's map returns None for a None result), so the loop's call binds the same names in
every round, `h, h_src = batches.map(...)`, as the user's loop reads, one call per layer."""

from __future__ import annotations

from dataclasses import replace

from gnn_codegen.render.last_copies import Ending


def padded(ending: Ending, count: int, total: int) -> Ending:
    """The last layer's ending returning its `count` tensors and None for the rest of the
    `total` the others return: `return h` -> `return h, None`."""
    lines = list(ending.last)
    at = max(i for i, line in enumerate(lines) if line.lstrip().startswith("return "))
    nones = ", None" * (total - count)
    lines[at:] = ["".join(line if i == 0 else " " + line.strip() for i, line in enumerate(lines[at:])) + nones]
    return replace(ending, last=tuple(lines))

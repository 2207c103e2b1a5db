"""Render, a layer's call: its parameters bound by name to the rows they take (issue 37).

The runtime's `map` calls a layer function with keyword arguments, so the call says, for each
parameter, which tensor it reads and on which rows: `source_rows=dict(h1=h1)` (the block's
source nodes' rows of h1), `destination_rows=dict(h1_dst=h1)` (the batch's own rows),
`edge_rows=dict(w=edge_weight)` (its in-edges' rows). A reviewer reads the binding next to the
function's `def`, not by lining up positions; homogeneous and heterogeneous calls spell it alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def map_bindings(kinds: Iterable[tuple[str, Sequence[tuple[str, str]]]]) -> list[str]:
    """[(keyword, [(parameter, tensor expression)])] -> the call's keyword arguments, a kind
    with no parameter left out: `source_rows=dict(h1=h1)`."""
    return [f"{keyword}=dict({', '.join(f'{param}={tensor}' for param, tensor in bound)})"
            for keyword, bound in kinds if bound]

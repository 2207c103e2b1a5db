"""Render, a stored tensor that is an item of a list of per-graph rows, `feat1[2]` (graph_rows.py):
the name a layer's parameter takes for it is the list's, `feat1`."""

from __future__ import annotations

import re

# an item of a list of per-graph rows, as the method reads it: `feat1[2]`
ITEM = re.compile(r"^(\w+)\[(\d+)\]$")


def parameter_base(buffer_name: str, lists: set[str]) -> str:
    """The name a layer's parameter takes for a stored tensor: the list's for an item of one of
    `lists` (per-graph rows), `feat1` for `feat1[2]`; else the tensor's (a loop's list of each
    layer's rows, `feats_by_layer[0]`, keeps its item's: `feats_by_layer_0`)."""
    item = ITEM.match(buffer_name)
    return item.group(1) if item and item.group(1) in lists else buffer_name

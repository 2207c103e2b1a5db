"""Render, a stored tensor that is an item of a list of per-graph rows, `feat1[2]` (graph_rows.py):
the name a layer's parameter takes for it is the list's, `feat1`."""

from __future__ import annotations

import re

# an item of a list of per-graph rows, as the method reads it: `feat1[2]`
ITEM = re.compile(r"^(\w+)\[(\d+)\]$")


def parameter_base(buffer_name: str) -> str:
    """The name a layer's parameter takes for a stored tensor: the list's for an item of one,
    `feat1` for `feat1[2]`."""
    item = ITEM.match(buffer_name)
    return item.group(1) if item else buffer_name

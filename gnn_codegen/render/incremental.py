"""Rendering, incremental re-inference (issue 39): the parameters `changed` and `keep_layers` of a
homogeneous inference and what its runtime is given of them (what they do: the runtime's
docstring, templates/batches.py.j2). The machinery is the runtime's (templates/incremental.py.j2)."""

from __future__ import annotations


def runtime_arguments(changed: str, keep_layers: str, derived: bool = False) -> str:
    """What the runtime's constructor is given after storage. derived: its graph is one forward
    derives from its graph (a metapath graph), whose in-edges are not those `changed` names:
    every row is recomputed, still exact."""
    return f", {changed}, {keep_layers}" + (", derived=True" if derived else "")


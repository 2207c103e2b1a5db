"""Rendering, incremental re-inference (issue 39): the parameters `changed` and `keep_layers` of a
homogeneous inference, what its runtime is given of them, and the docstring paragraph that says
what they do. The machinery is the runtime's (templates/incremental.py.j2)."""

from __future__ import annotations


def runtime_arguments(changed: str, keep_layers: str, derived: bool = False) -> str:
    """What the runtime's constructor is given after storage. derived: its graph is one forward
    derives from its graph (a metapath graph), whose in-edges are not those `changed` names:
    every row is recomputed, still exact."""
    return f", {changed}, {keep_layers}" + (", derived=True" if derived else "")


def paragraph(changed: str, keep_layers: str, storage: str, nodes: str, g: str) -> str:
    return (
        f"{keep_layers}=True (with {storage}): every layer's results stay in {storage} with a manifest, for "
        f"later calls with {changed}=: the nodes (IDs) whose input rows or in-edges (added, removed, their "
        f"edge data) differ in this {g} (the same nodes), or \"auto\" (found from hashes the manifest "
        "kept). Only the rows they reach, layer by layer, are recomputed (every row from a reduction over "
        f"all nodes or a result per edge on, or on a graph derived from {g}) and the kept layers updated; "
        f"the result is a new one, as a full run's. A node left out of {changed} is the caller's error. "
        f"A {storage} that does not match this module, the parameters or {g}'s node count, or left "
        f"unfinished: ValueError (run a full inference with {keep_layers}=True). Not with {nodes}=."
    )

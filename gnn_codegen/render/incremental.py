"""Rendering, incremental re-inference (issue 39): the parameters `changed` and `keep_layers` of a
homogeneous inference and what its runtime is given of them (what they do: the runtime's
docstring, templates/batches.py.j2). The machinery is the runtime's (templates/incremental.py.j2)."""

from __future__ import annotations


def runtime_arguments(changed: str, keep_layers: str, derived: bool = False) -> str:
    """What the runtime's constructor is given after storage, by keyword. derived: its graph is
    one forward derives from its graph (a metapath graph), whose in-edges are not those `changed`
    names: every row is recomputed, still exact."""
    return f", changed={changed}, keep_layers={keep_layers}" + (", derived=True" if derived else "")


def runtime_call(runtime: str, graph: str, batch_size: str, device: str, max_memory: str, progress: str,
                 storage: str) -> str:
    """The runtime's constructor called on the model and `graph`, then the method's parameters
    it shares by keyword: seven of them by position would read as a list a reviewer counts (the
    arguments are the method's names, which may differ from the parameters', `device_2`)."""
    return (f"{runtime}(self, {graph}, batch_size={batch_size}, device={device}, max_memory={max_memory}, "
            f"progress={progress}, storage={storage}")

"""The runtime every generated module carries (templates/batches.py.j2), rendered and loaded
into this process: the probe (probe.py) runs a module on blocks the way the generated code
does, through the same class."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gnn_codegen.render.templating import exec_template


@lru_cache(maxsize=1)
def _runtime() -> dict[str, Any]:
    return exec_template("batches.py.j2", __name__, runtime="FullNeighbourBatches",
                         dist_runtime="DistributedBatches")


@lru_cache(maxsize=1)
def _block_as_graph() -> dict[str, Any]:
    return exec_template("block_as_graph.py.j2", __name__, block_as_graph="block_as_graph")


def runtime_class() -> Any:
    return _runtime()["FullNeighbourBatches"]


def block_as_graph(block: Any) -> Any:
    """The generated `_block_as_graph` (block_as_graph.py): a block as a graph over its sources."""
    return _block_as_graph()["block_as_graph"](block)

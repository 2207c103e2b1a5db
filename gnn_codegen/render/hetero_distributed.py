"""The heterogeneous generated `inference` on DistDGL: for the programs the distributed runtime
(templates/dist_hetero_batches.py.j2) does not run yet, why, which the method's entry says in
the ValueError that refuses a DistGraph (gnn_codegen/render/distributed.py writes the lines)."""

from __future__ import annotations

from typing import Any


def hetero_not_distributed(renderer: Any) -> str | None:
    """Why the heterogeneous program of a HeteroRenderer does not run on a DistGraph yet (None:
    it does). The runtime there builds blocks from the DistGraph's in-edges and pulls node rows;
    it does not yet pull edge data by relation or build each batch's subgraph for a layer of the
    user's."""
    traced = renderer.traced
    if traced.edge_data:
        name, key, _ = traced.edge_data[0]
        return f"forward reads edge data of its graph ({name}: the edges' {key!r} by relation)"
    for stage in range(1, renderer.plan.num_stages + 1):
        if renderer.on_subgraphs(stage):
            return f"layer {stage} is a heterogeneous layer of yours, run on each batch's subgraph"
    return None

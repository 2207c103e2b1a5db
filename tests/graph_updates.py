"""Updates of a graph and inputs as users make them between two runs of inference (a few nodes'
features redrawn, a few edges added and removed), with the nodes they change: for the tests of
incremental re-inference (tests/test_incremental.py, tests/test_differential.py)."""

from __future__ import annotations

import dgl
import torch

from gnn_codegen.verify.harness import _tables  # the model's tables read as node features
from gnn_codegen.trace.metapaths import rows_graph
from gnn_codegen.trace.several_graphs import first_graph


def updated(generated, g, inputs, seed: int, features: int = 3, added: int = 4, removed: int = 4,
             self_loops: bool = False):
    """g and inputs after an update as users make them: a few nodes' input rows redrawn, a few
    edges added and removed (edge inputs follow their edges, new edges get new rows). Returns
    them and the nodes the update changed (input rows, or in-edges). Tables of the model read as
    node features stay: they are parameters, and other parameters need a full run."""
    tables = _tables(generated.program)
    gen = torch.Generator().manual_seed(seed)
    if not isinstance(g, dgl.DGLGraph) or not g.is_homogeneous:  # several graphs, metapaths: features only
        added = removed = 0
    # the graph whose nodes are forward's rows
    n = first_graph(rows_graph(generated.program, g)).num_nodes()
    e = g.num_edges() if added + removed else -1
    rows = torch.randperm(n, generator=gen)[:features]
    if not added + removed:
        src = dst = torch.zeros(0, dtype=torch.int64)
    else:
        src, dst = g.edges()
    kept = torch.ones(len(src), dtype=torch.bool)
    gone = torch.randperm(len(src), generator=gen)[:removed]
    if self_loops:  # GATConv: no node left without in-edges
        gone = gone[src[gone] != dst[gone]]
    kept[gone] = False
    new_src = torch.randint(0, n, (added,), generator=gen)
    new_dst = torch.randint(0, n, (added,), generator=gen)
    changed = torch.unique(torch.cat([rows, dst[gone], new_dst]))
    new_inputs = []
    for name, t in zip(generated.program.inputs, inputs, strict=True):
        t = t.clone()
        if name in tables:
            pass
        elif len(t) == e and added + removed:  # an edge input: its kept edges' rows, then new ones
            fresh = t[torch.randint(0, e, (added,), generator=gen)] if added else t[:0]
            t = torch.cat([t[kept], fresh])
        elif len(t) == n and t.is_floating_point():
            t[rows] = torch.randn(t[rows].shape, generator=gen, dtype=t.dtype)
        elif len(t) == n:  # IDs, types: other values of the same kind
            t[rows] = t[torch.randint(0, n, (len(rows),), generator=gen)]
        new_inputs.append(t)
    if not added + removed:
        return g, new_inputs, torch.unique(rows)
    new = dgl.graph((torch.cat([src[kept], new_src]), torch.cat([dst[kept], new_dst])), num_nodes=n)
    for key, value in g.ndata.items():
        new.ndata[key] = value
    for key, value in g.edata.items():
        new.edata[key] = torch.cat([value[kept], value[:added]])
    return new, new_inputs, changed


def updated_hetero(g: dgl.DGLHeteroGraph, inputs: dict[str, dict[str, torch.Tensor]], seed: int,
                   features: int = 3, added: int = 3, removed: int = 3
                   ) -> tuple[dgl.DGLHeteroGraph, dict[str, dict[str, torch.Tensor]], dict[str, torch.Tensor]]:
    """A heterograph and its features by name and node type (verify.hetero.random_inputs') after
    an update as users make them: a few nodes' rows of each type redrawn, a few edges added and
    removed in every other relation (from the seed's on). Returns them and the nodes the update
    changed, by type (input rows, or in-edges of any relation)."""
    gen = torch.Generator().manual_seed(seed)
    changed: dict[str, list[torch.Tensor]] = {t: [] for t in g.ntypes}
    new_inputs = {}
    for name, by_type in inputs.items():
        new_inputs[name] = {}
        for ntype, t in by_type.items():
            t = t.clone()
            rows = torch.randperm(len(t), generator=gen)[:features]
            t[rows] = torch.randn(t[rows].shape, generator=gen, dtype=t.dtype)
            new_inputs[name][ntype] = t
            changed[ntype].append(rows)
    edges = {}
    for i, rel in enumerate(g.canonical_etypes):
        src, dst = g.edges(etype=rel)
        if (i + seed) % 2:  # this relation stays as it was
            edges[rel] = (src, dst)
            continue
        kept = torch.ones(len(src), dtype=torch.bool)
        gone = torch.randperm(len(src), generator=gen)[:removed]
        kept[gone] = False
        new_src = torch.randint(0, g.num_nodes(rel[0]), (added,), generator=gen)
        new_dst = torch.randint(0, g.num_nodes(rel[2]), (added,), generator=gen)
        edges[rel] = (torch.cat([src[kept], new_src]), torch.cat([dst[kept], new_dst]))
        changed[rel[2]] += [dst[gone], new_dst]
    new = dgl.heterograph(edges, num_nodes_dict={t: g.num_nodes(t) for t in g.ntypes})
    ids = {t: torch.unique(torch.cat(parts)) if parts else torch.zeros(0, dtype=torch.int64)
           for t, parts in changed.items()}
    return new, new_inputs, ids

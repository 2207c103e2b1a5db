"""Heterogeneous models in forms people write beyond DGL's examples (issue 35, mechanisms 1, 2
and 8): forward's feature dict as a default of None, and the like. Our own code, small widths."""

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class OptionalFeaturesRGCN(nn.Module):
    """A trainer-facing forward: a flag before the features, which default to None because the
    training loop passes them by keyword (`model(g, feats=batch_feats)`); the flag picks a
    hidden layer's output for embedding export."""

    def __init__(self, in_size, hid_size, out_size, rel_names):
        super().__init__()
        self.conv1 = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(in_size, hid_size) for rel in rel_names},
                                           aggregate="sum")
        self.conv2 = dglnn.HeteroGraphConv({rel: dglnn.SAGEConv(hid_size, out_size, "mean") for rel in rel_names},
                                           aggregate="mean")

    def forward(self, graph, return_hidden=False, feats=None, **unused):
        hidden = {ntype: F.relu(h) for ntype, h in self.conv1(graph, feats).items()}
        if return_hidden:
            return hidden
        return self.conv2(graph, hidden)


class MetapathViewEncoder(nn.Module):
    """A metapath view in the style of self-supervised heterogeneous encoders (HeCo's mp
    encoder): a projection per node type over whatever types the feature dict holds
    (`feats.items()`), each metapath graph made in forward (not cached), its convolution's result
    filed under the graph's destination type (`mg.dsttypes[0]`) from the source type's rows
    (`h[mg.srctypes[0]]`), then averaged per type."""

    def __init__(self, in_dims, hid_size, metapaths):
        super().__init__()
        self.metapaths = {name: [tuple(e) if isinstance(e, list) else e for e in path]
                          for name, path in metapaths.items()}
        self.proj = nn.ModuleDict({ntype: nn.Linear(dim, hid_size) for ntype, dim in in_dims.items()})
        self.convs = nn.ModuleDict({name: dglnn.GraphConv(hid_size, hid_size, norm="right", allow_zero_in_degree=True)
                                    for name in self.metapaths})

    def forward(self, g, feats):
        h = {ntype: F.elu(self.proj[ntype](x)) for ntype, x in feats.items()}
        per_type = {}
        for name, path in self.metapaths.items():
            mg = dgl.metapath_reachable_graph(g, path)
            per_type.setdefault(mg.dsttypes[0], []).append(self.convs[name](mg, h[mg.srctypes[0]]))
        return {ntype: torch.stack(zs, dim=1).mean(1) for ntype, zs in per_type.items()}


class MetapathTypesOfATensor(nn.Module):
    """The same reading of a metapath graph's types with the features as one tensor: nothing
    names the node type, so the result's key cannot be known."""

    def __init__(self, size):
        super().__init__()
        self.conv = dglnn.GraphConv(size, size, allow_zero_in_degree=True)

    def forward(self, g, h):
        mg = dgl.metapath_reachable_graph(g, ["pa", "ap"])
        return {mg.dsttypes[0]: self.conv(mg, h)}


class SqueezedHeads(nn.Module):
    """Single-head GAT per relation whose head axis is dropped with `h.squeeze()` (no dim), as
    OpenHGNN's RGAT writes it, or the dim named (`squeeze_dim=-1`)."""

    def __init__(self, size, rel_names, squeeze_dim=None):
        super().__init__()
        self.squeeze_dim = squeeze_dim
        self.conv = dglnn.HeteroGraphConv({rel: dglnn.GATConv(size, size, 1, allow_zero_in_degree=True)
                                           for rel in rel_names})

    def forward(self, g, h_dict):
        out = {}
        for ntype, h in self.conv(g, h_dict).items():
            out[ntype] = h.squeeze() if self.squeeze_dim is None else h.squeeze(self.squeeze_dim)
        return out


class PerRelationTowers(nn.Module):
    """A tower of HeteroGraphConv per relation pair, each run on the subgraph of its relations
    (`dgl.edge_type_subgraph(g, [...])`), as recommendation libraries write it."""

    def __init__(self, size, pairs):
        super().__init__()
        self.pairs = [[tuple(r) for r in pair] for pair in pairs]
        self.towers = nn.ModuleList(
            dglnn.HeteroGraphConv({rel[1]: dglnn.GraphConv(size, size, allow_zero_in_degree=True) for rel in pair})
            for pair in self.pairs)

    def forward(self, g, h_dict):
        out = {}
        for pair, tower in zip(self.pairs, self.towers):
            out.update(tower(dgl.edge_type_subgraph(g, pair), h_dict))
        return out


class CollatedBatchGCN(nn.Module):
    """A homogeneous model fed a collated dict as benchmark pipelines write it
    (`forward(self, g, batch)`, `batch["feat"]`, an optional positional encoding tested with
    `"pe" in batch`): the dict's keys are decided while tracing, as node types are."""

    def __init__(self, in_size, pe_size, hid_size, out_size):
        super().__init__()
        self.pe = nn.Linear(pe_size, in_size)
        self.conv1 = dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, batch):
        h = batch["feat"]
        if "pe" in batch:
            h = h + self.pe(batch["pe"])
        h = F.relu(self.conv1(g, h))
        return self.conv2(g, h)


class PurchaseSubgraphSAGE(nn.Module):
    """Two HeteroGraphConv layers of SAGEConv on the subgraph of the purchase relations
    (`dgl.edge_type_subgraph(g, ["plays", "played_by"])`, edge type names), on the whole graph,
    given the features of the two types they join; a graph with other relations into those
    types from types without features."""

    def __init__(self, size=4):
        super().__init__()
        self.layer1 = dglnn.HeteroGraphConv({r: dglnn.SAGEConv(size, size, "mean") for r in ("plays", "played_by")})
        self.layer2 = dglnn.HeteroGraphConv({r: dglnn.SAGEConv(size, size, "mean") for r in ("plays", "played_by")})

    def forward(self, g, feats):
        sub = dgl.edge_type_subgraph(g, ["plays", "played_by"])
        h = {t: feats[t] for t in sub.ntypes}
        h = {t: F.relu(v) for t, v in self.layer1(sub, h).items()}
        return self.layer2(sub, h)


class TypePairGCN(nn.Module):
    """The subgraph of two node types (`g.node_type_subgraph(["user", "game"])`, the method form),
    a HeteroGraphConv of GraphConv over its relations, the features of those types picked from a
    dict over more types."""

    def __init__(self, size=4, rel_names=("plays", "played_by")):
        super().__init__()
        self.conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(size, size, allow_zero_in_degree=True)
                                           for r in rel_names})

    def forward(self, g, feats):
        sg = g.node_type_subgraph(["user", "game"])
        return self.conv(sg, {"user": feats["user"], "game": feats["game"]})


class StackedOutOfOrder(nn.Module):
    """Refused: a HeteroGraphConv that stacks its relations' results, on a subgraph listing the
    relations into user in another order than the graph's."""

    def __init__(self, size=4):
        super().__init__()
        self.conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(size, size, allow_zero_in_degree=True)
                                           for r in ("follows", "played_by")}, aggregate="stack")

    def forward(self, g, feats):
        sub = dgl.edge_type_subgraph(g, [("user", "follows", "user"), ("game", "played_by", "user")])
        return {t: v.flatten(1) for t, v in self.conv(sub, feats).items()}


class CitationSubgraphGCN(nn.Module):
    """Built with a GraphConv for every relation of an ogbn-mag-like graph, run on the subgraph
    of the two relations into papers (`dgl.edge_type_subgraph(g, ["cites", "writes"])`), its
    features read from the graph for every type: the fields' go to no module that reads them."""

    def __init__(self, size=4, rel_names=("cites", "writes", "has_topic")):
        super().__init__()
        self.conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(size, size, norm="right", allow_zero_in_degree=True)
                                           for r in rel_names})

    def forward(self, g):
        h = {t: g.nodes[t].data["feat"] for t in g.ntypes}
        return self.conv(dgl.edge_type_subgraph(g, ["cites", "writes"]), h)

"""Models that derive graphs and graph values in forward from the graph they are given, written
the way third-party DGL code writes them (issue 35, items 3 and 5): method forms and chains of
graph transforms, the transform imported by name, self-loops added inside a layer, degrees
normalising by hand, features made from the node count, a heterograph made homogeneous first."""

import dgl
import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl import add_self_loop


class MethodFormSelfLoops(nn.Module):
    """`g = g.add_self_loop()` before a two-layer GCN."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size)
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, x):
        g = g.add_self_loop()
        return self.conv2(g, F.relu(self.conv1(g, x)))


class ReloopedGAT(nn.Module):
    """Self-loops replaced, as a chain of methods, before GAT: heads concatenated, then averaged."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, heads=2):
        super().__init__()
        self.gat1 = dglnn.GATConv(in_size, hid_size, heads)
        self.gat2 = dglnn.GATConv(hid_size * heads, out_size, 1)

    def forward(self, g, x):
        g = g.remove_self_loop().add_self_loop()
        h = F.elu(self.gat1(g, x).flatten(1))
        return self.gat2(g, h).mean(1)


class ImportedSelfLoop(nn.Module):
    """`from dgl import add_self_loop`, called by its bare name."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size)
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, x):
        g = add_self_loop(g)
        return self.conv2(g, F.relu(self.conv1(g, x)))


class SimpleThenLooped(nn.Module):
    """Parallel edges merged, then self-loops: two statements, each rebinding g."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.sage1 = dglnn.SAGEConv(in_size, hid_size, "gcn")
        self.sage2 = dglnn.SAGEConv(hid_size, out_size, "mean")

    def forward(self, g, x):
        g = dgl.to_simple(g)
        g = dgl.remove_self_loop(g)
        g = dgl.add_self_loop(g)
        return self.sage2(g, F.relu(self.sage1(g, x)))


class HandNormGCN(nn.Module):
    """A GCN written with update_all, normalised by hand by in-degrees on the looped graph."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.lin1 = nn.Linear(in_size, hid_size)
        self.lin2 = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        g = dgl.add_self_loop(g)
        norm = torch.pow(g.in_degrees().float().clamp(min=1), -0.5).unsqueeze(-1)
        h = x
        for i, lin in enumerate([self.lin1, self.lin2]):
            with g.local_scope():
                g.ndata["h"] = lin(h) * norm
                g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                h = g.ndata["h"] * norm
            if i == 0:
                h = F.relu(h)
        return h


class NormStoredOnGraph(nn.Module):
    """The norm computed in forward and kept in g.ndata, read back by every round."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.lins = nn.ModuleList([nn.Linear(in_size, hid_size), nn.Linear(hid_size, out_size)])

    def forward(self, g, x):
        g.ndata["norm"] = torch.pow(g.in_degrees().float().clamp(min=1), -0.5).unsqueeze(1)
        h = x
        for lin in self.lins:
            with g.local_scope():
                g.ndata["h"] = lin(h) * g.ndata["norm"]
                g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                h = g.ndata["h"] * g.ndata["norm"]
        return h


class LoopedLayer(nn.Module):
    """A user's layer that adds self-loops to whatever graph it is given."""

    def __init__(self, in_size, out_size):
        super().__init__()
        self.conv = dglnn.GraphConv(in_size, out_size)

    def forward(self, graph, feat):
        graph = dgl.add_self_loop(graph)
        return self.conv(graph, feat)


class LoopsInsideLayers(nn.Module):
    """Self-loops added inside each of the user's layers, traced into."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.layers = nn.ModuleList([LoopedLayer(in_size, hid_size), LoopedLayer(hid_size, out_size)])

    def forward(self, g, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i != len(self.layers) - 1:
                h = F.relu(h)
        return h


class DegreesBesideLoops(nn.Module):
    """GraphConv on dgl.add_self_loop(g), the in-degrees of g itself scaling the hidden rows."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size, norm="none")
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, x):
        sg = dgl.add_self_loop(g)
        deg = g.in_degrees().float().clamp(min=1).unsqueeze(1)
        h = F.relu(self.conv1(sg, x)) / deg
        return self.conv2(sg, h)


class Featureless(nn.Module):
    """A graph without features: a constant one per node, as structural baselines start."""

    def __init__(self, hid_size=6, out_size=3):
        super().__init__()
        self.conv1 = dglnn.GraphConv(1, hid_size)
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g):
        x = torch.ones(g.num_nodes(), 1)
        g = dgl.add_self_loop(g)
        return self.conv2(g, F.relu(self.conv1(g, x)))


class EmbeddingByNodeCount(nn.Module):
    """A learnt embedding per node, looked up by torch.arange of the looped graph's node count
    and added to the features."""

    def __init__(self, num_nodes=300, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, in_size)
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, out_size, "mean")

    def forward(self, g, x):
        sg = dgl.add_self_loop(g)
        h = x + self.emb(torch.arange(sg.number_of_nodes()))
        bias = torch.zeros((g.num_nodes(), 6), dtype=torch.float32)
        return self.conv2(sg, F.relu(self.conv1(sg, h)) + bias)


class HomogeneousRGCN(nn.Module):
    """An entity classifier over a heterograph made homogeneous first: the features of every
    type in one tensor, relation weights by dgl.ETYPE."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, num_rels=3):
        super().__init__()
        self.conv1 = dglnn.RelGraphConv(in_size, hid_size, num_rels, regularizer="basis", num_bases=2,
                                        self_loop=True)
        self.conv2 = dglnn.RelGraphConv(hid_size, out_size, num_rels, self_loop=True)

    def forward(self, hg):
        g = dgl.to_homogeneous(hg, ndata=["feat"])
        h = g.ndata["feat"]
        etype = g.edata[dgl.ETYPE]
        h = F.relu(self.conv1(g, h, etype))
        return self.conv2(g, h, etype)


class HomogeneousGATByType(nn.Module):
    """A GAT over a heterograph made homogeneous (store_type by default), with self-loops, a
    node-type embedding added to the features read from dgl.NTYPE."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, num_ntypes=2):
        super().__init__()
        self.type_emb = nn.Embedding(num_ntypes, in_size)
        self.gat1 = dglnn.GATConv(in_size, hid_size, 2)
        self.gat2 = dglnn.GATConv(hid_size * 2, out_size, 1)

    def forward(self, hg):
        g = dgl.to_homogeneous(hg, ndata=["feat"])
        g = dgl.add_self_loop(g)
        h = g.ndata["feat"] + self.type_emb(g.ndata[dgl.NTYPE])
        h = F.elu(self.gat1(g, h).flatten(1))
        return self.gat2(g, h).squeeze(1)


class ConvertsTwice(nn.Module):
    """Refused: the heterograph made homogeneous, and made homogeneous again."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.conv = dglnn.GraphConv(in_size, out_size, allow_zero_in_degree=True)

    def forward(self, hg):
        g = dgl.to_homogeneous(hg, ndata=["feat"])
        g2 = dgl.to_homogeneous(hg, ndata=["feat"])
        return self.conv(g, g.ndata["feat"]) + self.conv(g2, g2.ndata["feat"])


class PaperSubgraphSAGE(nn.Module):
    """Citation layers on the papers of a heterograph: the subgraph of one node type, as a
    method, its features passed beside the graph."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.sage1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.sage2 = dglnn.SAGEConv(hid_size, out_size, "mean")

    def forward(self, g, x):
        pg = g.node_type_subgraph(["paper"])
        return self.sage2(pg, F.relu(self.sage1(pg, x)))


class CitesSubgraphGCN(nn.Module):
    """GCN on one relation of a heterograph, with self-loops, its features read from the
    relation's papers."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size)
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, hg):
        g = dgl.edge_type_subgraph(hg, [("paper", "cites", "paper")])
        g = dgl.add_self_loop(g)
        h = g.ndata["feat"]
        return self.conv2(g, F.relu(self.conv1(g, h)))


class AuthorPaperSubgraph(nn.Module):
    """Refused: the subgraph of a relation between two node types (a bipartite graph)."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.conv = dglnn.GraphConv(in_size, out_size, allow_zero_in_degree=True)

    def forward(self, hg, x):
        g = hg.edge_type_subgraph([("author", "writes", "paper")])
        return self.conv(g, x)


class TypedFeatsRGCN(nn.Module):
    """A tensor per node type set on the heterograph inside a local scope, made homogeneous with
    that field, an RGCN over dgl.ETYPE after the scope, and the rows of one category picked
    back with a boolean mask on dgl.NTYPE (issue 35, mechanism 8 with 3)."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, num_rels=4, category=1):
        super().__init__()
        self.category = category
        self.conv1 = dglnn.RelGraphConv(in_size, hid_size, num_rels, self_loop=True)
        self.conv2 = dglnn.RelGraphConv(hid_size, out_size, num_rels, self_loop=True)

    def forward(self, hg, feats):
        with hg.local_scope():
            hg.ndata["x"] = feats
            g = dgl.to_homogeneous(hg, ndata=["x"])
        etype = g.edata[dgl.ETYPE]
        h = F.relu(self.conv1(g, g.ndata["x"], etype))
        h = self.conv2(g, h, etype)
        return h[g.ndata[dgl.NTYPE] == self.category]


class TypedFeatsGAT(nn.Module):
    """Features by type set on the heterograph, made homogeneous, self-loops added, a learnt
    embedding of each node's type added, two GAT layers, and a dict by type built in a loop over
    hg.ntypes with `torch.where(...)[0]`."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, num_ntypes=3):
        super().__init__()
        self.type_emb = nn.Embedding(num_ntypes, in_size)
        self.gat1 = dglnn.GATConv(in_size, hid_size, 2)
        self.gat2 = dglnn.GATConv(hid_size * 2, out_size, 1)

    def forward(self, hg, x_dict):
        hg.ndata["feat"] = x_dict
        g = dgl.to_homogeneous(hg, ndata=["feat"])
        g = dgl.add_self_loop(g)
        ntype = g.ndata[dgl.NTYPE]
        h = g.ndata["feat"] + self.type_emb(ntype)
        h = F.elu(self.gat1(g, h).flatten(1))
        h = self.gat2(g, h).mean(1)
        out = {}
        for i, name in enumerate(hg.ntypes):
            out[name] = h[torch.where(ntype == i)[0]]
        return out


class ResidualAttentionLayer(nn.Module):
    """Attention whose scores mix in the previous layer's, which it keeps on the graph as
    g.edata["a"] (residual attention, in the style of OpenHGNN's SimpleHGNConv)."""

    def __init__(self, in_size, out_size, beta=0.1):
        super().__init__()
        self.fc = nn.Linear(in_size, out_size)
        self.attn = nn.Linear(2 * out_size, 1)
        self.beta = beta

    def forward(self, g, h):
        z = self.fc(h)
        g.ndata["z"] = z
        g.apply_edges(lambda edges: {"e": self.attn(torch.cat([edges.src["z"], edges.dst["z"]], 1))})
        a = dgl.ops.edge_softmax(g, g.edata.pop("e"))
        if "a" in g.edata:
            a = a * (1 - self.beta) + g.edata["a"] * self.beta
        g.edata["a"] = a
        g.update_all(dgl.function.u_mul_e("z", "a", "m"), dgl.function.sum("m", "out"))
        return g.ndata.pop("out")


class ResidualAttentionNet(nn.Module):
    """Refused naming the field: two ResidualAttentionLayers on one graph, the second reading
    the scores the first left on it."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.layer1 = ResidualAttentionLayer(in_size, hid_size)
        self.layer2 = ResidualAttentionLayer(hid_size, out_size)

    def forward(self, g, x):
        g = dgl.add_self_loop(g)
        return self.layer2(g, F.relu(self.layer1(g, x)))


# --- the graph of one relation, g[relation], of a heterograph of one node type (relation_graphs.py)


class RelationSumGCN(nn.Module):
    """A GraphConv per relation (symmetric norm: each relation graph's own out-degrees), run on
    `g[etype]` for each of `g.etypes`, the relations' results summed, as a user writes an
    R-GCN of their own on a multi-relational graph of one node type."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, etypes=("follows", "likes", "replies")):
        super().__init__()
        self.layer1 = nn.ModuleDict({e: dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True) for e in etypes})
        self.layer2 = nn.ModuleDict({e: dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True) for e in etypes})

    def forward(self, g, x):
        h = 0
        for etype in g.etypes:
            h = h + self.layer1[etype](g[etype], x)
        h = F.relu(h)
        out = [self.layer2[etype](g[etype], h) for etype in g.etypes]
        return torch.stack(out).sum(0)


class MeanAggregator(nn.Module):
    """A user's own mean over in-neighbours, then a linear of [self, mean]."""

    def __init__(self, in_size, out_size):
        super().__init__()
        self.fc = nn.Linear(2 * in_size, out_size)

    def forward(self, graph, feat):
        with graph.local_scope():
            graph.ndata["h"] = feat
            graph.update_all(fn.copy_u("h", "m"), fn.mean("m", "neigh"))
            return self.fc(torch.cat([feat, graph.ndata["neigh"]], -1))


class RelationChainSAGE(nn.Module):
    """One aggregator per relation, the relations taken one after another (each relation's
    result the next one's input), unpacking `g.canonical_etypes` and indexing
    `g[srctype, etype, dsttype]`."""

    def __init__(self, in_size=8, hid_size=6, num_relations=2):
        super().__init__()
        self.aggs = nn.ModuleList(MeanAggregator(in_size if i == 0 else hid_size, hid_size)
                                  for i in range(num_relations))

    def forward(self, g, x):
        h = x
        for agg, (srctype, etype, dsttype) in zip(self.aggs, g.canonical_etypes):
            h = F.relu(agg(g[srctype, etype, dsttype], h))
        return h


class NamedRelationGAT(nn.Module):
    """Two relations named in forward (`g["cites"]`, `g["similar"]`): a GAT on each, the heads
    averaged, the two concatenated; no type list read."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.cites = dglnn.GATConv(in_size, out_size, 2, allow_zero_in_degree=True)
        self.similar = dglnn.GATConv(in_size, out_size, 2, allow_zero_in_degree=True)

    def forward(self, g, x):
        return torch.cat([self.cites(g["cites"], x).mean(1), self.similar(g["similar"], x).mean(1)], -1)


class TwoTypeRelationConv(nn.Module):
    """Refused: the relation graph of a heterograph of two node types (its nodes are one type's)."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.conv = dglnn.GraphConv(in_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, x):
        return self.conv(g["cites"], x)

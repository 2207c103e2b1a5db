"""User layers that read and write `g.ndata` (and `g.edata`) on the graph they are given, as
benchmarking-gnns, RecHub and many tutorials write them: on a block, with its two node types,
`g.ndata` is ambiguous, so each runs on the block as a graph over its source nodes
(gnn_codegen/analysis/block_as_graph.py). Our own code, in those styles."""

import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F


def gated_message(edges):
    """A Python message, as tutorials write one: the source row times a learnt edge gate."""
    return {"m": edges.src["h"] * edges.data["gate"]}


class MeanLayer(nn.Module):
    """ndata written, a mean over in-neighbours through update_all, ndata read back; BatchNorm
    and a residual inside the layer, no local scope."""

    def __init__(self, in_dim, out_dim, residual=True):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.bn = nn.BatchNorm1d(out_dim)
        self.residual = residual and in_dim == out_dim

    def forward(self, g, h):
        h_in = h
        g.ndata["h"] = self.linear(h)
        g.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
        h = g.ndata["h"]
        h = F.relu(self.bn(h))
        if self.residual:
            h = h_in + h
        return h


class MeanNet(nn.Module):
    """Two MeanLayers in a ModuleList, a Linear head."""

    def __init__(self, in_dim, hidden_dim, n_classes):
        super().__init__()
        self.embedding = nn.Linear(in_dim, hidden_dim)
        self.layers = nn.ModuleList([MeanLayer(hidden_dim, hidden_dim) for _ in range(2)])
        self.head = nn.Linear(hidden_dim, n_classes)

    def forward(self, g, x):
        h = self.embedding(x)
        for layer in self.layers:
            h = layer(g, h)
        return self.head(h)


class GatedEdgeLayer(nn.Module):
    """Edge state in and out: apply_edges with a Python function on edges.src/dst, a learnt gate
    per edge, a Python message reading it, a sum and a sum of gates; returns (h, e)."""

    def __init__(self, dim):
        super().__init__()
        self.src_lin = nn.Linear(dim, dim)
        self.dst_lin = nn.Linear(dim, dim)
        self.edge_lin = nn.Linear(dim, dim)
        self.self_lin = nn.Linear(dim, dim)

    def forward(self, g, h, e):
        g.ndata["h"] = h
        g.ndata["s"] = self.src_lin(h)
        g.ndata["d"] = self.dst_lin(h)
        g.edata["e"] = self.edge_lin(e)
        g.apply_edges(lambda edges: {"e_new": edges.src["s"] + edges.dst["d"] + edges.data["e"]})
        g.edata["gate"] = torch.sigmoid(g.edata["e_new"])
        g.update_all(gated_message, fn.sum("m", "num"))
        g.update_all(fn.copy_e("gate", "m"), fn.sum("m", "den"))
        h = self.self_lin(g.ndata["h"]) + g.ndata["num"] / (g.ndata["den"] + 1e-6)
        e = g.edata["e_new"]
        return F.relu(h), F.relu(e)


class GatedEdgeNet(nn.Module):
    """(h, e) threaded through two GatedEdgeLayers, the edge state from an edge feature."""

    def __init__(self, in_dim, edge_dim, hidden_dim, n_classes):
        super().__init__()
        self.embed_h = nn.Linear(in_dim, hidden_dim)
        self.embed_e = nn.Linear(edge_dim, hidden_dim)
        self.layers = nn.ModuleList([GatedEdgeLayer(hidden_dim) for _ in range(2)])
        self.head = nn.Linear(hidden_dim, n_classes)

    def forward(self, g, x, w):
        h = self.embed_h(x)
        e = self.embed_e(w)
        for layer in self.layers:
            h, e = layer(g, h, e)
        return self.head(h)


class EdgeScoresNet(nn.Module):
    """One GatedEdgeLayer whose edge output is forward's result beside the nodes'."""

    def __init__(self, in_dim, edge_dim, hidden_dim):
        super().__init__()
        self.embed_h = nn.Linear(in_dim, hidden_dim)
        self.embed_e = nn.Linear(edge_dim, hidden_dim)
        self.layer = GatedEdgeLayer(hidden_dim)

    def forward(self, g, x, w):
        h, e = self.layer(g, self.embed_h(x), self.embed_e(w))
        return h, e.sum(-1)


class SumAggregatorLayer(nn.Module):
    """GIN-style: (1 + eps) h plus the sum of in-neighbours, written through g.ndata with a
    Python message function, then an MLP."""

    def __init__(self, dim):
        super().__init__()
        self.eps = nn.Parameter(torch.tensor([0.1]))
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, g, h):
        g.ndata["h"] = h
        g.update_all(lambda edges: {"m": edges.src["h"]}, fn.sum("m", "neigh"))
        return self.mlp((1 + self.eps) * g.ndata["h"] + g.ndata["neigh"])


class SumAggregatorNet(nn.Module):
    def __init__(self, in_dim, hidden_dim, n_classes):
        super().__init__()
        self.conv1 = SumAggregatorLayer(in_dim)
        self.conv2 = SumAggregatorLayer(in_dim)
        self.out = nn.Linear(in_dim, n_classes)

    def forward(self, g, x):
        h = torch.relu(self.conv1(g, x))
        return self.out(self.conv2(g, h))


class OutDegreeNormLayer(nn.Module):
    """Reads its graph's out-degrees (a symmetric norm), which a block, given as a graph or not,
    counts only inside the block: given the whole graph's while it runs on each block as a graph
    (write_out.py's with_graph_out_degrees)."""

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, g, h):
        norm = g.out_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
        g.ndata["h"] = self.lin(h) * norm
        g.update_all(lambda edges: {"m": edges.src["h"]}, fn.sum("m", "h"))
        return g.ndata["h"]


class OutDegreeNormNet(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = OutDegreeNormLayer(dim)

    def forward(self, g, x):
        return self.conv(g, x)


class TwoRoundsLayer(nn.Module):
    """Two rounds of propagation through g.ndata, with a Python message (not traced into): a
    node's result reads its 2-hop in-neighbourhood, so stays refused."""

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, g, h):
        g.ndata["h"] = self.lin(h)
        for _ in range(2):
            g.update_all(lambda edges: {"m": edges.src["h"]}, fn.mean("m", "h"))
        return g.ndata["h"]


class TwoRoundsNet(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = TwoRoundsLayer(dim)

    def forward(self, g, x):
        return self.conv(g, x)


class UnusedEdgeInputNet(nn.Module):
    """benchmarking-gnns' nets take `e` in forward whatever the layers read: here none does."""

    def __init__(self, in_dim, n_classes):
        super().__init__()
        self.layer = SumAggregatorLayer(in_dim)
        self.out = nn.Linear(in_dim, n_classes)

    def forward(self, g, h, e):
        return self.out(self.layer(g, h))


class MailboxSoftmaxLayer(nn.Module):
    """GAT as benchmarking-gnns writes a head: Python attention on edges, a Python reduce with a
    softmax over the mailbox. On a batch whose nodes have no in-edges DGL runs no Python reduce,
    so g.ndata["h"] would be missing: the runtime adds a node with in-edges to such a batch."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)
        self.attn = nn.Linear(2 * dim, 1, bias=False)

    def forward(self, g, h):
        g.ndata["z"] = self.fc(h)
        g.apply_edges(lambda edges: {"e": F.leaky_relu(self.attn(torch.cat([edges.src["z"], edges.dst["z"]], 1)))})
        g.update_all(lambda edges: {"z": edges.src["z"], "e": edges.data["e"]},
                     lambda nodes: {"h": (F.softmax(nodes.mailbox["e"], 1) * nodes.mailbox["z"]).sum(1)})
        return g.ndata["h"]


class MailboxSoftmaxNet(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = MailboxSoftmaxLayer(dim)

    def forward(self, g, x):
        return self.conv(g, x)


def median_reduce(nodes):
    """A reduce function at module level, as DGL's tutorials write one: the median of the mailbox."""
    return {"agg": nodes.mailbox["m"].median(dim=1).values}


class MedianBlockLayer(nn.Module):
    """A layer written for blocks (srcdata / dstdata, a destination slice), reducing with a Python
    function: no field for nodes without in-edges on g (zeros there, DGL's frame), and none at all
    on a block without edges."""

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(2 * dim, dim)

    def forward(self, block, h):
        with block.local_scope():
            h_dst = h[: block.num_dst_nodes()]
            block.srcdata["h"] = h
            block.update_all(fn.copy_u("h", "m"), median_reduce)
            return self.lin(torch.cat([h_dst, block.dstdata["agg"]], dim=1))


class MedianBlockNet(nn.Module):
    def __init__(self, dim, n_classes):
        super().__init__()
        self.layers = nn.ModuleList([MedianBlockLayer(dim), MedianBlockLayer(dim)])
        self.out = nn.Linear(dim, n_classes)

    def forward(self, blocks, x):
        h = x
        for layer, block in zip(self.layers, blocks):
            h = torch.relu(layer(block, h))
        return self.out(h)


class MinApplyLayer(nn.Module):
    """A min reduce with an apply function that reads it, as a user writes a 'soft floor': on g
    the apply function sees -inf where a node has no in-edges (DGL sets 0 only after it ran), on a
    block without edges it would see 0."""

    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def apply(self, nodes):
        return {"out": torch.exp(nodes.data["low"] * self.scale) + nodes.data["h"]}

    def forward(self, g, h):
        with g.local_scope():
            g.srcdata["h"] = h
            g.update_all(fn.copy_u("h", "m"), fn.min("m", "low"), self.apply)
            return g.dstdata["out"]


class MinApplyNet(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.conv = MinApplyLayer(dim)

    def forward(self, g, x):
        return self.conv(g, torch.tanh(self.inp(x)))


class TwoAggregatesLayer(nn.Module):
    """Written for blocks (srcdata / dstdata): a source norm by the graph's out-degrees, then two
    update_all calls that both read the layer's input (a sum, and a max in a Python reduce,
    PNA-like): one hop, not two rounds."""

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(2 * dim, dim)

    def forward(self, graph, feat):
        with graph.local_scope():
            norm = graph.out_degrees().float().clamp(min=1).rsqrt().unsqueeze(-1)
            graph.srcdata["h"] = feat * norm
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
            graph.update_all(fn.copy_u("h", "m"), lambda nodes: {"x": nodes.mailbox["m"].amax(1)})
            return self.lin(torch.cat([graph.dstdata["s"], graph.dstdata["x"]], dim=-1))


class TwoAggregatesNet(nn.Module):
    def __init__(self, dim, n_classes):
        super().__init__()
        self.conv1 = TwoAggregatesLayer(dim)
        self.conv2 = TwoAggregatesLayer(dim)
        self.out = nn.Linear(dim, n_classes)

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        return self.out(F.relu(self.conv2(g, h)) + h)

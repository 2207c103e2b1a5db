"""Models that compute values per edge inline in forward with `g.apply_edges`, with a Python
edge function or a built-in, as DGL's tutorials and benchmarking-gnns write them. For
tests/test_edge_functions.py (issue 35, item 5)."""

import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttentionWeightedGCN(nn.Module):
    """A score per edge from both ends' projected features (DGL's link-prediction tutorial's
    `apply_edges` with a Python function, here a lambda), made positive and used as the edge
    weights of a GraphConv."""

    def __init__(self, in_feats=5, hidden=6, n_classes=3):
        super().__init__()
        self.proj = nn.Linear(in_feats, hidden)
        self.conv1 = dglnn.GraphConv(in_feats, hidden, norm="right", allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hidden, n_classes, allow_zero_in_degree=True)

    def forward(self, g, x):
        with g.local_scope():
            g.ndata["z"] = self.proj(x)
            g.apply_edges(lambda edges: {"s": (edges.src["z"] * edges.dst["z"]).sum(-1)})
            w = torch.sigmoid(g.edata["s"])
        h = F.relu(self.conv1(g, x, edge_weight=w))
        return self.conv2(g, h)


class DotScoreThenMean(nn.Module):
    """`g.apply_edges(fn.u_dot_v("h", "h", "score"))` (a built-in), the scores then averaged
    into each destination: `update_all(fn.copy_e("score", "m"), fn.mean("m", "avg"))`."""

    def __init__(self, in_feats=5, hidden=4):
        super().__init__()
        self.conv = dglnn.SAGEConv(in_feats, hidden, "mean")

    def forward(self, g, x):
        h = torch.tanh(self.conv(g, x))
        with g.local_scope():
            g.ndata["h"] = h
            g.apply_edges(fn.u_dot_v("h", "h", "score"))
            g.edata["score"] = torch.exp(-g.edata["score"])
            g.update_all(fn.copy_e("score", "m"), fn.mean("m", "avg"))
            return torch.cat([h, g.ndata["avg"]], dim=1)


class EdgeCountingFunction(nn.Module):
    """An edge function that reads how many edges there are: no row of an edge."""

    def __init__(self, in_feats=5):
        super().__init__()
        self.conv = dglnn.GraphConv(in_feats, 3, allow_zero_in_degree=True)

    def forward(self, g, x):
        with g.local_scope():
            g.ndata["x"] = x
            g.apply_edges(lambda edges: {"w": edges.src["x"][:, 0] / edges.batch_size()})
            return self.conv(g, x, edge_weight=g.edata["w"])

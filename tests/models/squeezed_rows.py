"""Models that drop size-1 axes as people write it (issue 35, item 1): `h.squeeze()` with no
dim after a layer whose width or head count is 1, `logits.view(-1)` / `.flatten()` of a score
per node, `h.squeeze()` in a per-type dict of a heterogeneous model. Which axes are of size 1 is
fixed by the model's widths; the node axis is too on a graph (or a node type) of one node,
where forward's result loses its rows' axis."""

import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class BinaryGAT(nn.Module):
    """A GAT for a binary label (fraud, churn): one output per head on the last layer, heads
    averaged, `h.mean(1).squeeze()` for a logit per node, as BCEWithLogitsLoss takes it."""

    def __init__(self, in_feats, hidden, heads):
        super().__init__()
        self.gat1 = dglnn.GATConv(in_feats, hidden, heads, allow_zero_in_degree=True)
        self.gat2 = dglnn.GATConv(hidden * heads, 1, heads, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = F.elu(self.gat1(g, x)).flatten(1)
        h = self.gat2(g, h)
        return h.mean(1).squeeze()


class ScoredSAGE(nn.Module):
    """A score per node from a Linear(hidden, 1), flattened with `.view(-1)` and, after a
    sigmoid, `.flatten()` (a link-prediction or anomaly scorer's head)."""

    def __init__(self, in_feats, hidden):
        super().__init__()
        self.sage = dglnn.SAGEConv(in_feats, hidden, "mean")
        self.score = nn.Linear(hidden, 1)

    def forward(self, g, x):
        h = F.relu(self.sage(g, x))
        logits = self.score(h).view(-1)
        return logits, torch.sigmoid(self.score(h)).flatten()


class TypedScores(nn.Module):
    """A heterogeneous scorer: HeteroGraphConv of GraphConv, then a score per node of each type
    (`self.score(h).squeeze()` in a dict comprehension), as recommendation code writes a
    click-through logit per user and item."""

    def __init__(self, size, rel_names):
        super().__init__()
        self.conv = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(size, size, allow_zero_in_degree=True)
                                           for rel in rel_names}, aggregate="sum")
        self.score = nn.Linear(size, 1)

    def forward(self, g, feats):
        h = self.conv(g, feats)
        return {ntype: self.score(F.relu(x)).squeeze() for ntype, x in h.items()}


class SqueezedGCN(nn.Module):
    """`h.squeeze()` on a hidden layer with no axis of size 1 (it squeezes nothing but on one
    node), then `torch.squeeze(...)` as a function of a GraphConv to one channel."""

    def __init__(self, in_feats, hidden):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hidden, 1, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x)).squeeze()
        return torch.sigmoid(torch.squeeze(self.conv2(g, h)))


class HeteroBatchOfOne(nn.Module):
    """A heterogeneous encoder ported from code that kept a batch axis of one graph: each type's
    rows `.squeeze(0)` after the layer (a no-op on many rows, as GGD's), then a Linear."""

    def __init__(self, size, rel_names):
        super().__init__()
        self.conv = dglnn.HeteroGraphConv({rel: dglnn.SAGEConv(size, size, "mean") for rel in rel_names})
        self.out = nn.Linear(size, 2)

    def forward(self, g, feats):
        h = self.conv(g, feats)
        return {ntype: self.out(F.elu(x).squeeze(0)) for ntype, x in h.items()}


class EdgeScorer(nn.Module):
    """A score per edge (link prediction's dot-free scorer): `u_add_v` of a Linear(hidden, 1)
    per node, `g.edata["s"].squeeze()` for a logit per edge."""

    def __init__(self, in_feats, hidden):
        super().__init__()
        self.sage = dglnn.SAGEConv(in_feats, hidden, "mean")
        self.w = nn.Linear(hidden, 1)

    def forward(self, g, x):
        h = F.relu(self.sage(g, x))
        with g.local_scope():
            g.ndata["h"] = self.w(h)
            g.apply_edges(fn.u_add_v("h", "h", "s"))
            return g.edata["s"].squeeze()

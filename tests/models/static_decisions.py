"""Models that decide in Python on what a value is, as third-party DGL code writes them: a
projection only when the input is not yet as wide as the hidden layers, a residual only where
a layer keeps the width, an embedding for integer inputs and a Linear for float ones, GAT heads
flattened when there are any. For tests/test_static_decisions.py (issue 35, item 1)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class SAGEWithInputProjection(nn.Module):
    """Project the features only if they are not already as wide as the hidden layers."""

    def __init__(self, in_feats=16, hidden=8, n_classes=3):
        super().__init__()
        self.hidden = hidden
        self.proj = nn.Linear(in_feats, hidden)
        self.convs = nn.ModuleList([dglnn.SAGEConv(hidden, hidden, "mean"), dglnn.SAGEConv(hidden, n_classes, "mean")])

    def forward(self, g, x):
        if x.size(1) != self.hidden:
            x = self.proj(x)
        h = x
        for i, conv in enumerate(self.convs):
            h = conv(g, h)
            if i != len(self.convs) - 1:
                h = F.relu(h)
        return h


class ResidualGCN(nn.Module):
    """benchmarking-gnns' habit: a residual connection wherever a layer keeps the width."""

    def __init__(self, in_dim=6, hidden_dims=(6, 10, 10), residual=True):
        super().__init__()
        self.residual = residual
        dims = [in_dim, *hidden_dims]
        self.layers = nn.ModuleList(
            [dglnn.GraphConv(a, b, activation=F.relu, allow_zero_in_degree=True) for a, b in zip(dims[:-1], dims[1:])]
        )

    def forward(self, g, h):
        for layer in self.layers:
            h_in = h
            h = layer(g, h)
            if self.residual and h.shape == h_in.shape:
                h = h_in + h
        return h


class AtomOrFeatureEncoder(nn.Module):
    """Integer inputs are IDs to embed, float inputs features to project."""

    def __init__(self, num_ids=50, in_feats=7, hidden=8, out_feats=3):
        super().__init__()
        self.emb = nn.Embedding(num_ids, hidden)
        self.lin = nn.Linear(in_feats, hidden)
        self.conv = dglnn.GraphConv(hidden, out_feats, allow_zero_in_degree=True)

    def forward(self, g, feat):
        if feat.dtype == torch.long:
            h = self.emb(feat)
        else:
            h = self.lin(feat)
        return self.conv(g, h)


class GATFlattenHeads(nn.Module):
    """Heads concatenated where a layer has several, whatever width each head has."""

    def __init__(self, in_feats=5, hidden=4, heads=3, out_feats=2):
        super().__init__()
        self.heads = heads
        self.gat1 = dglnn.GATConv(in_feats, hidden, heads, allow_zero_in_degree=True)
        self.gat2 = dglnn.GATConv(hidden * heads, out_feats, 1, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = self.gat1(g, x)
        if h.dim() == 3:
            h = h.flatten(1)
        h = F.elu(h)
        h = self.gat2(g, h)
        if h.ndim == 3 and h.shape[1] == 1:
            h = h.squeeze(1)
        return h


class ClassifierOnFloats(nn.Module):
    """Cast to float only where the input is not already."""

    def __init__(self, in_feats=6, out_feats=3):
        super().__init__()
        self.conv = dglnn.SAGEConv(in_feats, out_feats, "gcn")

    def forward(self, g, x):
        if not x.is_floating_point():
            x = x.float()
        return self.conv(g, x)


class SkipIfPositive(nn.Module):
    """A test of the values: refused, as it depends on the data."""

    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        if (h > 0).any():
            h = h - h.mean(0)
        return h


class BranchOnRowCount(nn.Module):
    """A test of how many nodes a value has: a test of the graph, refused."""

    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        if h.shape[0] > 10:
            h = F.relu(h)
        return h


class GCNOnGraphFeatures(nn.Module):
    """Features read from the graph, projected when they are not as wide as the hidden layer."""

    def __init__(self, in_feats=16, hidden=8, n_classes=3):
        super().__init__()
        self.hidden = hidden
        self.proj = nn.Linear(in_feats, hidden)
        self.conv1 = dglnn.GraphConv(hidden, hidden, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hidden, n_classes, allow_zero_in_degree=True)

    def forward(self, g):
        h = g.ndata["feat"]
        if h.shape[-1] != self.hidden:
            h = self.proj(h)
        h = F.relu(self.conv1(g, h))
        return self.conv2(g, h)


class EntityEmbeddingGCN(nn.Module):
    """Node embeddings as features (RGCN's entity classification), a residual where the widths
    agree."""

    def __init__(self, num_nodes=40, dim=6, out_feats=6):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, dim)
        self.conv = dglnn.GraphConv(dim, out_feats, allow_zero_in_degree=True)

    def forward(self, g):
        x = self.emb.weight
        h = self.conv(g, x)
        if h.shape[-1] == x.shape[-1]:
            h = h + x
        return h


class WeightedRelationGCN(nn.Module):
    """Edge weights, and a convolution over the edges of one type: neither changes a shape."""

    def __init__(self, in_feats=5, hidden=7):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hidden, hidden, allow_zero_in_degree=True)
        self.out = nn.Linear(hidden, 2)

    def forward(self, g, x, w):
        h = F.relu(self.conv1(g, x, edge_weight=w))
        cites = g.edge_subgraph(g.edata["etype"] == 1, relabel_nodes=False)
        h2 = self.conv2(cites, h)
        if h2.shape == h.shape:
            h2 = h2 + h
        return self.out(h2)


class FlattenWhateverTheHeads(nn.Module):
    """Per-head outputs reshaped from their shape, read with len(), int() and a loop over it."""

    def __init__(self, in_feats=5, hidden=4, heads=2, out_feats=3):
        super().__init__()
        self.gat = dglnn.GATConv(in_feats, hidden, heads, allow_zero_in_degree=True)
        self.out = nn.Linear(hidden * heads, out_feats)

    def forward(self, g, x):
        h = self.gat(g, x)
        if len(h.shape) > 2:
            width = 1
            for d in h.shape[1:]:
                width = width * int(d)
            h = h.reshape(-1, width)
        return self.out(h)


class NormalisedThenTested(nn.Module):
    """The input scaled by a degree norm written by hand before the first convolution, then tests
    of a hidden value's width and dtype (found by the differential test: the input's width was
    not followed through `x * norm`, so both tests were refused)."""

    def __init__(self, in_feats=4, hidden=4, out_feats=5):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_feats, hidden, "mean")
        self.conv2 = dglnn.SAGEConv(hidden, hidden, "mean")
        self.proj = nn.Linear(out_feats, out_feats)

    def forward(self, g, x):
        x = x * torch.pow(g.in_degrees().float().clamp(min=1), -0.5).unsqueeze(1)
        h = self.conv2(g, self.conv1(g, x))
        if h.shape[-1] == self.proj.in_features:
            h = self.proj(h)
        if h.dtype == torch.float32:
            h = torch.tanh(h)
        return h


class NormalisedThenPropagated(nn.Module):
    """As NormalisedThenTested, with a multi-hop module first (SGConv, traced into rather than
    called): the width its Linear declares is followed back through `x * norm` to the input
    (found by the differential test: the test of h1's width was refused, asking for
    --feat-dims)."""

    def __init__(self):
        super().__init__()
        self.conv1 = dglnn.SGConv(4, 4, k=2, allow_zero_in_degree=True)
        self.lin2 = nn.Linear(5, 5)
        self.conv3 = dglnn.SAGEConv(4, 4, "mean")

    def forward(self, g, x):
        x = x * torch.pow(g.in_degrees().float().clamp(min=1), -0.5).unsqueeze(1)
        h1 = self.conv1(g, x)
        h2 = h1
        if h2.shape[-1] == 5:
            h2 = self.lin2(h2)
        return self.conv3(g, h2)
import dgl.function as fn  # noqa: E402  (below, so the line numbers the tests name above stay)


class EdgeGatedHeadsProp(nn.Module):
    """A propagation module of the user's that weighs messages by an edge field the training
    script put on the graph (`g.edata["coef"]`, a number per edge and head) and sums the heads by
    a loop over their count, `range(h.shape[1])`: the count follows from the field's shape."""

    def __init__(self, in_feats=5, hidden=4, heads=2):
        super().__init__()
        self.heads, self.hidden = heads, hidden
        self.fc = nn.Linear(in_feats, hidden * heads)

    def forward(self, g, x):
        with g.local_scope():
            g.ndata["ft"] = self.fc(x).view(-1, self.heads, self.hidden)
            g.update_all(fn.u_mul_e("ft", "coef", "m"), fn.sum("m", "ft"))
            h = g.ndata["ft"]
            out = 0
            for i in range(h.shape[1]):
                out = out + h[:, i]
            return out


class EdgeGatedHeads(nn.Module):
    """Two of those, with a Linear between: forward itself never reads the edge field."""

    def __init__(self, in_feats=5, hidden=4, heads=2, n_classes=3):
        super().__init__()
        self.prop1 = EdgeGatedHeadsProp(in_feats, hidden, heads)
        self.prop2 = EdgeGatedHeadsProp(hidden, hidden, heads)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, g, x):
        h = F.relu(self.prop1(g, x))
        return self.out(self.prop2(g, h))

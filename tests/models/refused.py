"""Models gnn-codegen must refuse, each for one reason (tests/test_refusals.py)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.prop = dglnn.GatedGraphConv(4, 4, 2, n_etypes=2)

    def forward(self, g, x, etypes):
        return self.prop(g, self.lin(x), etypes)


class ControlFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        if h.sum() > 0:
            h = F.relu(h)
        return h


class MixesRows(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        return torch.cumsum(h, dim=0)


class NothingPerNode(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, g, x):
        return self.lin.weight * 2.0  # whatever the graph and x: nothing per node (an MLP is generated)


class Readout(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")
        self.pool = dglnn.SumPooling()

    def forward(self, g, x):
        return self.pool(g, self.conv(g, x))


class DenseAdjacency(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.DenseGraphConv(8, 4)

    def forward(self, g, x):
        return self.conv(g.adj().to_dense(), x)


class Heterogeneous(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.HeteroGraphConv({"follows": dglnn.GraphConv(8, 4), "buys": dglnn.GraphConv(8, 4)})

    def forward(self, g, x):
        return self.conv(g, {"user": x, "item": x})["user"]


class LoopsOverNodeTypes(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleDict({"user": dglnn.SAGEConv(8, 4, "mean")})

    def forward(self, g, x):
        for ntype in g.ntypes:
            x = self.convs[ntype](g, x)
        return x


class TwoGraphs(nn.Module):  # exact since issue 35 (several graphs): test_defaults_and_graphs.py
    def __init__(self):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(8, 6, "mean")
        self.conv2 = dglnn.SAGEConv(6, 4, "mean")

    def forward(self, g1, g2, x):
        return self.conv2(g2, self.conv1(g1, x))


class AssignsIntoATensor(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        h[:, 0] = 0.0
        return h


class InlineApplyEdges(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, g, x):
        import dgl.function as fn

        with g.local_scope():
            g.ndata["h"] = self.lin(x)
            g.apply_edges(fn.u_dot_v("h", "h", "s"))
            return g.edata["s"]


class ChangedThroughASliceReadAgain(nn.Module):
    """Unlike Dropout's result (the whole tensor itself), a slice is part of h: the change is
    h's, which a later line reads, and the layer-wise loop keeps each value apart."""

    def __init__(self):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(4, 4, "mean")
        self.conv2 = dglnn.SAGEConv(4, 4, "mean")

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        h[:, :2].mul_(2.0)
        return self.conv2(g, h)


class NormalisesComputedWeights(nn.Module):
    """Edge weights an MLP computes from edge features, which APPNPConv normalises by sums over
    each node's edges: those need every edge's weight before the first batch."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.edge_mlp = nn.Linear(3, 1)
        self.prop = dglnn.APPNPConv(3, alpha=0.1)

    def forward(self, g, x, efeat):
        w = torch.sigmoid(self.edge_mlp(efeat)).squeeze(-1)
        return self.prop(g, self.lin(x), edge_weight=w)


class MaxWithIndices(nn.Module):
    """h.max(0) returns the largest row values and their nodes' positions: the positions are not
    among the reductions over all nodes written out (h.amax(0) is)."""

    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        return h / h.max(0).values


def on_meta_device():
    """Built on the meta device to size it cheaply: weights without values."""
    with torch.device("meta"):
        return MaxWithIndices()

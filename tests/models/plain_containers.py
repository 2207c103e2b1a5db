"""Models that keep their modules in plain Python lists, tuples and dicts instead of
nn.ModuleList / nn.ModuleDict, as research code often does (BWGNN's `self.conv = []` and
`.append`, per-relation heads in a dict). PyTorch does not register them, forward calls them
all the same. For tests/test_plain_containers.py (issue 35)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class SAGEInDict(nn.Module):
    """Layers by name in a plain dict, a LayerNorm between them by name too."""

    def __init__(self, in_feats=8, hidden=16, n_classes=4):
        super().__init__()
        self.layers = {"first": dglnn.SAGEConv(in_feats, hidden, "mean"),
                       "second": dglnn.SAGEConv(hidden, n_classes, "mean")}
        self.norms = {"first": nn.LayerNorm(hidden)}

    def forward(self, g, x):
        h = F.relu(self.norms["first"](self.layers["first"](g, x)))
        return self.layers["second"](g, h)


class GCNWithPlainSkips(nn.Module):
    """Convolutions in a tuple, a skip projection per layer appended to a plain list, zipped."""

    def __init__(self, in_feats=8, hidden=12, n_layers=3):
        super().__init__()
        dims = [in_feats] + [hidden] * n_layers
        self.convs = tuple(dglnn.GraphConv(a, b, allow_zero_in_degree=True) for a, b in zip(dims[:-1], dims[1:]))
        self.skips = []
        for a, b in zip(dims[:-1], dims[1:]):
            self.skips.append(nn.Linear(a, b, bias=False))

    def forward(self, g, x):
        h = x
        for conv, skip in zip(self.convs, self.skips):
            h = F.relu(conv(g, h)) + skip(h)
        return h


class Encoder(nn.Module):
    """A registered submodule that keeps its own layers in a plain list."""

    def __init__(self, in_feats, hidden):
        super().__init__()
        self.layers = [dglnn.GATConv(in_feats, hidden, num_heads=2, allow_zero_in_degree=True),
                       dglnn.GATConv(2 * hidden, hidden, num_heads=1, allow_zero_in_degree=True)]

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, h).flatten(1)
            if i < len(self.layers) - 1:
                h = F.elu(h)
        return h


class EncoderHoldingAList(nn.Module):
    """The plain list one level down: `self.encoder.layers[0]`."""

    def __init__(self, in_feats=8, hidden=6, n_classes=3):
        super().__init__()
        self.encoder = Encoder(in_feats, hidden)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, g, x):
        return self.head(self.encoder(g, x))


class PlainListOfActivations(nn.Module):
    """Modules without weights in a plain list: nothing is left out of the state_dict."""

    def __init__(self, in_feats=8, hidden=8):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_feats, hidden, "gcn")
        self.conv2 = dglnn.SAGEConv(hidden, hidden, "gcn")
        self.acts = [nn.ReLU(), nn.Tanh()]

    def forward(self, g, x):
        return self.acts[1](self.conv2(g, self.acts[0](self.conv1(g, x))))


class DropoutInAPlainList(nn.Module):
    """A Dropout in a plain list: model.eval() never reaches it, so forward drops at random."""

    def __init__(self, in_feats=8, hidden=8):
        super().__init__()
        self.conv = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)
        self.post = [nn.Sequential(nn.Linear(hidden, hidden), nn.Dropout(0.5))]

    def forward(self, g, x):
        return self.post[0](self.conv(g, x))


class PerViewHeads(nn.Module):
    """Two graphs over the same nodes (two views, mlcg-fd's style): every convolution of a plain
    list on each, a head per view in a plain list indexed by the view, the views' results taken
    by index: forward's own Python fixes the number of graphs, not its convolutions."""

    def __init__(self, in_feats=8, hidden=8, n_views=2, n_filters=3):
        super().__init__()
        self.filters = [dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True) for _ in range(n_filters)]
        self.heads = [nn.Linear(hidden, hidden) for _ in range(n_views)]

    def forward(self, graphs, x):
        views = []
        for v in range(len(graphs)):
            h = torch.stack([conv(graphs[v], x) for conv in self.filters], dim=1).sum(1)
            views.append(self.heads[v](F.relu(h)))
        return torch.cat((views[0], views[1]), dim=1)


class ModulesMixedWithNames(nn.Module):
    """A plain list that holds a module and a string: no ModuleList can stand for it."""

    def __init__(self, in_feats=8, hidden=8):
        super().__init__()
        self.conv = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)
        self.post = [nn.Linear(hidden, hidden), "relu"]

    def forward(self, g, x):
        return self.post[0](self.conv(g, x))


class RegisteredInAnotherOrder(nn.Module):
    """A plain list of modules the model also registers: their weights are in the state_dict."""

    def __init__(self, in_feats=8, hidden=8):
        super().__init__()
        self.convs = nn.ModuleList([dglnn.SAGEConv(in_feats, hidden, "mean"), dglnn.SAGEConv(hidden, hidden, "mean")])
        self.order = [self.convs[0], self.convs[1]]

    def forward(self, g, x):
        for conv in self.order:
            x = F.relu(conv(g, x))
        return x

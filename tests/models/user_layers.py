"""Models whose layers are a user's module of several convolutions, each on a graph forward
derives (render/user_layers.py), and a stack whose every layer starts the next one's skip:
their layers' labels and names say the user's layer and graph, and no counted local is bound
under another numbered name."""

import dgl
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class EdgeTypeGATLayer(nn.Module):
    """A GAT per edge type (forward's `etype == j` subgraph), the results summed onto a skip."""

    def __init__(self, in_size, out_size, num_etypes, heads=2):
        super().__init__()
        self.gats = nn.ModuleList(dglnn.GATConv(in_size, out_size // heads, heads, allow_zero_in_degree=True)
                                  for _ in range(num_etypes))
        self.skip = nn.Linear(in_size, out_size)
        self.out_size = out_size

    def forward(self, g, x):
        h = self.skip(x)
        for j, gat in enumerate(self.gats):
            subg = g.edge_subgraph(g.edata["etype"] == j, relabel_nodes=False)
            h = h + gat(subg, x).view(-1, self.out_size)
        return h


class EdgeTypeGAT(nn.Module):
    def __init__(self, in_size=8, hid_size=8, out_size=4, num_etypes=2):
        super().__init__()
        self.layers = nn.ModuleList([EdgeTypeGATLayer(in_size, hid_size, num_etypes),
                                     EdgeTypeGATLayer(hid_size, out_size, num_etypes)])

    def forward(self, g, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i == 0:
                h = F.elu(h)
        return h


class SkipEachLayer(nn.Module):
    """Each layer's skip from its input (`x_skip = skip(x)`), computed at the end of the layer
    before, where forward's `x_skip` of that layer is still live: the generated function holds
    two `x_skip`s, and returns the second, which the method binds as `x_skip2`."""

    def __init__(self, in_size=8, hid_size=16, out_size=3):
        super().__init__()
        self.convs = nn.ModuleList([dglnn.GraphConv(in_size, hid_size), dglnn.GraphConv(hid_size, hid_size),
                                    dglnn.GraphConv(hid_size, out_size)])
        self.skips = nn.ModuleList([nn.Linear(in_size, hid_size), nn.Linear(hid_size, hid_size),
                                    nn.Linear(hid_size, out_size)])

    def forward(self, g, x):
        for conv, skip in zip(self.convs, self.skips):
            x_skip = skip(x)
            x_skip = x_skip + conv(g, x)
            x = F.relu(x_skip)
        return x


class PairNorm(nn.Module):
    """PairNorm's "PN" mode: centred by the mean over all nodes, scaled by the mean row norm
    over all nodes, the scale applied first as its reference code writes it."""

    def __init__(self, scale=2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x - x.mean(dim=0)
        rownorm_mean = (1e-6 + x.pow(2).sum(dim=1).mean()).sqrt()
        return self.scale * x / rownorm_mean


class MeanAbsNorm(nn.Module):
    """A simpler normalisation: one mean over all nodes, read after the scale."""

    def __init__(self, scale=0.5):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return self.scale * x / x.abs().mean()


class NormAfterEachLayer(nn.Module):
    """Three GraphConvs, the user's normalisation module (one instance) after each of them."""

    def __init__(self, in_size=8, hid_size=16, out_size=4, norm="PairNorm"):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True),
                                     dglnn.GraphConv(hid_size, hid_size, allow_zero_in_degree=True),
                                     dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)])
        self.norm = PairNorm() if norm == "PairNorm" else MeanAbsNorm()

    def forward(self, g, h):
        for layer in self.layers:
            h = self.norm(F.relu(layer(g, h)))
        return h

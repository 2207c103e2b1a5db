"""Models whose user modules read values over all nodes, called between layers (issue 37,
render/module_functions.py): each call spans several passes over the nodes."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class PairNorm(nn.Module):
    """PairNorm (Zhao and Akoglu, ICLR 2020) as its reference code writes it: "PN" centres and
    scales by the mean row norm over all nodes (two reductions), "PN-SI" scales each row by its
    own norm (one reduction)."""

    def __init__(self, mode="PN", scale=1.0):
        super().__init__()
        self.mode = mode
        self.scale = scale

    def forward(self, x):
        col_mean = x.mean(dim=0)
        x = x - col_mean
        if self.mode == "PN":
            rownorm_mean = (1e-6 + x.pow(2).sum(dim=1).mean()).sqrt()
            return self.scale * x / rownorm_mean
        rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
        return self.scale * x / rownorm_individual


class GraphCentre(nn.Module):
    """A BatchNorm-like normalisation over all of the graph's nodes: centred by the column
    means, divided by the columns' root mean square after centring."""

    def forward(self, x):
        x = x - x.mean(dim=0)
        return x / (x.pow(2).mean(dim=0) + 1e-5).sqrt()


class WidthDependentNorm(nn.Module):
    """PairNorm that takes rows' absolute values first where they are wider than 8: its calls
    on rows 16 and 8 wide run different code."""

    def forward(self, x):
        if x.shape[1] > 8:
            x = x.abs()
        x = x - x.mean(dim=0)
        return x / (1e-6 + x.pow(2).sum(dim=1).mean()).sqrt()


class DeepPairNormGCN(nn.Module):
    """gcn_pairnorm's model: GraphConvs with PairNorm then relu between them."""

    def __init__(self, in_feats=8, n_hidden=16, n_classes=3, n_layers=3, norm_mode="PN"):
        super().__init__()
        sizes = [in_feats] + [n_hidden] * (n_layers - 1) + [n_classes]
        self.layers = nn.ModuleList(dglnn.GraphConv(a, b, allow_zero_in_degree=True)
                                    for a, b in zip(sizes, sizes[1:]))
        self.norm = PairNorm(norm_mode)

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i != len(self.layers) - 1:
                h = F.relu(self.norm(h))
        return h


class TwoGlobalNorms(nn.Module):
    """Five GraphConvs: PairNorm after the first and third, GraphCentre after the second and
    fourth."""

    def __init__(self, in_feats=8, n_hidden=16, n_classes=3):
        super().__init__()
        sizes = [in_feats] + [n_hidden] * 4 + [n_classes]
        self.layers = nn.ModuleList(dglnn.GraphConv(a, b, allow_zero_in_degree=True)
                                    for a, b in zip(sizes, sizes[1:]))
        self.pair_norm = PairNorm()
        self.centre = GraphCentre()

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i < len(self.layers) - 1:
                h = F.relu(self.pair_norm(h) if i % 2 == 0 else self.centre(h))
        return h


class NormOfTwoWidths(nn.Module):
    """WidthDependentNorm after layers 16 and 8 wide: its two calls differ."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.GraphConv(8, 16, allow_zero_in_degree=True),
                                     dglnn.GraphConv(16, 8, allow_zero_in_degree=True),
                                     dglnn.GraphConv(8, 3, allow_zero_in_degree=True)])
        self.norm = WidthDependentNorm()

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i < 2:
                h = F.relu(self.norm(h))
        return h

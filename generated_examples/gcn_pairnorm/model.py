"""A deep GCN with PairNorm between its layers (Zhao and Akoglu, "PairNorm: Tackling
Oversmoothing in GNNs", ICLR 2020), written in the style of the paper's reference code with
DGL's GraphConv. In its default mode, PairNorm centres every layer's output by the mean over
all nodes, then rescales it by the mean row norm over all nodes: two reductions over all nodes,
the second of rows the first made."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class PairNorm(nn.Module):
    def __init__(self, mode="PN", scale=1.0):
        super().__init__()
        assert mode in ("None", "PN", "PN-SI", "PN-SCS")
        self.mode = mode
        self.scale = scale

    def forward(self, x):
        if self.mode == "None":
            return x
        col_mean = x.mean(dim=0)
        if self.mode == "PN":
            x = x - col_mean
            rownorm_mean = (1e-6 + x.pow(2).sum(dim=1).mean()).sqrt()
            x = self.scale * x / rownorm_mean
        elif self.mode == "PN-SI":
            x = x - col_mean
            rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
            x = self.scale * x / rownorm_individual
        else:
            rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
            x = self.scale * x / rownorm_individual - col_mean
        return x


class DeepGCN(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, n_layers=3, dropout=0.5, norm_mode="PN", norm_scale=1.0):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.GraphConv(in_feats, n_hidden, allow_zero_in_degree=True))
        for _ in range(n_layers - 2):
            self.layers.append(dglnn.GraphConv(n_hidden, n_hidden, allow_zero_in_degree=True))
        self.layers.append(dglnn.GraphConv(n_hidden, n_classes, allow_zero_in_degree=True))
        self.norm = PairNorm(norm_mode, norm_scale)
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(g, h)
            if i != len(self.layers) - 1:
                h = F.relu(self.norm(h))
        return h

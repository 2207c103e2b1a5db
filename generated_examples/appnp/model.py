"""APPNP as DGL's examples/pytorch/appnp trains it: an MLP predicts from each node's own
features, then APPNPConv propagates the predictions k times with personalised PageRank (a
teleport back to the MLP's output with probability alpha every hop). The model keeps its
graph. Every hop is one layer of the generated inference; the teleport term is stored once."""

import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import APPNPConv


class APPNP(nn.Module):
    def __init__(self, g, in_feats, hiddens, n_classes, activation=F.relu, feat_drop=0.5,
                 edge_drop=0.5, alpha=0.1, k=10):
        super().__init__()
        self.g = g
        sizes = [in_feats, *hiddens, n_classes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.activation = activation
        # the example skips dropout altogether when its rate is 0
        self.feat_drop = nn.Dropout(feat_drop) if feat_drop else (lambda x: x)
        self.propagate = APPNPConv(k, alpha, edge_drop)

    def forward(self, features):
        h = self.feat_drop(features)
        for layer in self.layers[:-1]:
            h = self.activation(layer(h))
        h = self.layers[-1](self.feat_drop(h))
        return self.propagate(self.g, h)

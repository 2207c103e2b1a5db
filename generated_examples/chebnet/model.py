"""ChebNet (Defferrard et al., 2016) as DGL's model zoo (citation networks) builds it: the model
keeps its graph and stacks ChebConv layers, each a Linear over the Chebyshev terms T_0..T_{k-1}
of the scaled Laplacian applied to its input, with lambda_max given as 2 (the example's choice,
exact for the normalised Laplacian's bound). Every term past T_0 is one hop: one layer of the
generated inference each, the recurrence's earlier terms stored between them."""

import torch.nn as nn
from dgl.nn.pytorch.conv import ChebConv


class ChebNet(nn.Module):
    def __init__(self, g, in_feats, n_classes, n_hidden, n_layers, k, bias=True):
        super().__init__()
        self.g = g
        sizes = [in_feats] + [n_hidden] * n_layers + [n_classes]
        self.layers = nn.ModuleList(ChebConv(a, b, k, bias=bias) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, features):
        h = features
        for layer in self.layers:
            h = layer(self.g, h, [2])
        return h

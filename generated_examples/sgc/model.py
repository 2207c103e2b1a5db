"""SGC as DGL's examples/pytorch/sgc trains it: one SGConv that propagates k=2 hops of
symmetric-normalised aggregation, then its Linear. Every hop is one layer of the generated
inference, the Linear runs in the last one."""

import dgl.nn.pytorch as dglnn
import torch.nn as nn


class SGC(nn.Module):
    def __init__(self, in_feats, n_classes, k=2, bias=True):
        super().__init__()
        # cached=True (the example's choice) keeps the first graph's propagation for every later
        # call, which is only right for the one graph it was trained on
        self.net = dglnn.SGConv(in_feats, n_classes, k=k, cached=False, bias=bias)

    def forward(self, g, features):
        return self.net(g, features)

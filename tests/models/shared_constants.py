"""Models whose layers read a value of no rows more than once (a rate kept as a tensor, cast to
the features' dtype and device, as DGL's ChebConv does with lambda_max): each layer's function
computes it once (render/shared_constants.py)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import GraphConv


class MixedRateGCN(nn.Module):
    """GraphConv layers whose output is mixed with its activation by a rate, made from a list
    the way ChebConv makes re_norm from lambda_max, and read twice on one line."""

    def __init__(self, in_size, hid_size, out_size, rate=4.0):
        super().__init__()
        self.rate = [rate]
        self.convs = nn.ModuleList([GraphConv(in_size, hid_size), GraphConv(hid_size, out_size)])

    def forward(self, g, features):
        h = features
        for conv in self.convs:
            h = conv(g, h)
            mix = 1.0 / torch.tensor(self.rate).to(h).unsqueeze(-1)
            h = h * mix + F.relu(h) * (1 - mix)
        return h

"""GCNII as DGL's examples/pytorch/gcnii trains it: a Linear into the hidden width, then a deep
stack of GCN2Conv layers, each mixing one hop of normalised propagation with the initial
representation h0 (initial residual) and an identity-weighted projection, then a Linear out.
Each GCN2Conv is one layer of the generated inference; h0 is stored once for all of them."""

import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import GCN2Conv


class GCNII(nn.Module):
    def __init__(self, in_size, out_size, hidden_size, num_layers=8, alpha=0.1, lambda_=0.5,
                 dropout=0.6):
        super().__init__()
        self.fcs = nn.ModuleList([nn.Linear(in_size, hidden_size), nn.Linear(hidden_size, out_size)])
        self.convs = nn.ModuleList(
            GCN2Conv(hidden_size, layer=i + 1, alpha=alpha, lambda_=lambda_, activation=F.relu)
            for i in range(num_layers)
        )
        self.dropout = dropout

    def forward(self, graph, features):
        h = F.dropout(features, self.dropout, self.training)
        h = F.relu(self.fcs[0](h))
        h0 = h
        for conv in self.convs:
            h = F.dropout(h, self.dropout, self.training)
            h = conv(graph, h, h0)
        h = F.dropout(h, self.dropout, self.training)
        return self.fcs[-1](h)

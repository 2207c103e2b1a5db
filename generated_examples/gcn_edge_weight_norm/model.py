"""A GCN over a graph whose edges carry weights (co-purchase counts, interaction strengths), as
DGL's documentation of EdgeWeightNorm writes it: the weights in g.edata["w"] are normalised
symmetrically once per forward, then every GraphConv (built with norm="none") aggregates with
them. EdgeWeightNorm sums each node's weights over all of its edges, which a 1-hop block does
not hold, so the generated inference computes it once on the whole graph, at its top, and reads
the normalised weights per block by edge ID."""

import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import EdgeWeightNorm, GraphConv


class WeightedGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=3, dropout=0.5):
        super().__init__()
        self.edge_norm = EdgeWeightNorm(norm="both")
        sizes = [in_size] + [hid_size] * (num_layers - 1) + [out_size]
        self.layers = nn.ModuleList(
            GraphConv(a, b, norm="none", allow_zero_in_degree=True) for a, b in zip(sizes[:-1], sizes[1:])
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, features):
        norm_weight = self.edge_norm(g, g.edata["w"])
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(g, h, edge_weight=norm_weight)
            if i != len(self.layers) - 1:
                h = F.relu(h)
        return h

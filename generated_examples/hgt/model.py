"""HGT (Hu et al., "Heterogeneous Graph Transformer", 2020) with DGL's HGTConv, in the style of
DGL's examples/pytorch/hgt: node types are adapted to one width by a linear map of their own,
then each layer attends over every relation with type-specific keys, queries, values and
messages. The heterogeneous graph is made homogeneous beforehand (`g = dgl.to_homogeneous(hg,
ndata=["feat"])`), which sorts its nodes and edges by type and records the types as node and edge
data that forward reads (`g.ndata[dgl.NTYPE]`, `g.edata[dgl.ETYPE]`)."""

import dgl
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import HGTConv, TypedLinear


class HGT(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_ntypes, num_etypes, num_heads=4,
                 num_layers=2, dropout=0.2):
        super().__init__()
        self.adapt = TypedLinear(in_size, hid_size, num_ntypes)
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            self.layers.append(
                HGTConv(hid_size, hid_size // num_heads, num_heads, num_ntypes, num_etypes,
                        dropout=dropout, use_norm=True)
            )
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        ntype, etype = g.ndata[dgl.NTYPE], g.edata[dgl.ETYPE]
        h = F.gelu(self.adapt(x, ntype))
        for layer in self.layers:
            # the graph from dgl.to_homogeneous is sorted by type: the faster path
            h = layer(g, h, ntype, etype, presorted=True)
        return self.out(h)

"""A relational GAT on a homogeneous graph with edge types, written the way DGL's MAG240M
(OGB-LSC) example writes it for sampled training: forward takes a list of blocks, turns each
into a graph with `dgl.block_to_graph`, and runs one GATConv per edge type on the subgraph of
that type's edges (`edge_subgraph(..., relabel_nodes=False)`), summed onto a skip connection;
BatchNorm, ELU and an MLP head follow."""

import dgl
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv


class RGAT(nn.Module):
    def __init__(self, in_channels, out_channels, hidden_channels, num_etypes, num_layers=2,
                 num_heads=4, dropout=0.5):
        super().__init__()
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.skips = nn.ModuleList()
        for i in range(num_layers):
            width = in_channels if i == 0 else hidden_channels
            self.convs.append(
                nn.ModuleList(
                    [
                        GATConv(width, hidden_channels // num_heads, num_heads, allow_zero_in_degree=True)
                        for _ in range(num_etypes)
                    ]
                )
            )
            self.norms.append(nn.BatchNorm1d(hidden_channels))
            self.skips.append(nn.Linear(width, hidden_channels))
        self.mlp = nn.Sequential(
            nn.Linear(hidden_channels, hidden_channels),
            nn.BatchNorm1d(hidden_channels),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_channels, out_channels),
        )
        self.dropout = nn.Dropout(dropout)
        self.hidden_channels = hidden_channels
        self.num_etypes = num_etypes

    def forward(self, mfgs, x):
        for i in range(len(mfgs)):
            mfg = mfgs[i]
            x_dst = x[: mfg.num_dst_nodes()]
            mfg = dgl.block_to_graph(mfg)
            x_skip = self.skips[i](x_dst)
            for j in range(self.num_etypes):
                subg = mfg.edge_subgraph(mfg.edata["etype"] == j, relabel_nodes=False)
                x_skip += self.convs[i][j](subg, (x, x_dst)).view(-1, self.hidden_channels)
            x = self.norms[i](x_skip)
            x = F.elu(x)
            x = self.dropout(x)
        return self.mlp(x)

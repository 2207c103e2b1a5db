"""Models whose every layer adds a Linear skip of its input, the first layer's included, in the
style their authors wrote them: DGL's OGB-LSC MAG240M R-GAT baseline (examples/pytorch/ogb_lsc/
MAG240M/train.py: the first layer appended apart, `th` for torch, a skip then a GAT per edge
type on the edge type's subgraph of each block) and a residual GCN whose layers zip convolutions
with their skips."""

import dgl
import dgl.nn as dglnn
import torch as th
import torch.nn as nn
import torch.nn.functional as F


class RGAT(nn.Module):
    def __init__(self, in_channels=10, out_channels=3, hidden_channels=8, num_etypes=3, num_layers=2,
                 num_heads=2, dropout=0.5):
        super().__init__()
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.skips = nn.ModuleList()

        self.convs.append(nn.ModuleList([
            dglnn.GATConv(in_channels, hidden_channels // num_heads, num_heads, allow_zero_in_degree=True)
            for _ in range(num_etypes)
        ]))
        self.norms.append(nn.BatchNorm1d(hidden_channels))
        self.skips.append(nn.Linear(in_channels, hidden_channels))
        for _ in range(num_layers - 1):
            self.convs.append(nn.ModuleList([
                dglnn.GATConv(hidden_channels, hidden_channels // num_heads, num_heads, allow_zero_in_degree=True)
                for _ in range(num_etypes)
            ]))
            self.norms.append(nn.BatchNorm1d(hidden_channels))
            self.skips.append(nn.Linear(hidden_channels, hidden_channels))

        self.mlp = nn.Sequential(
            nn.Linear(hidden_channels, hidden_channels),
            nn.BatchNorm1d(hidden_channels),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_channels, out_channels)
        )
        self.dropout = nn.Dropout(dropout)

        self.hidden_channels = hidden_channels
        self.num_etypes = num_etypes

    def forward(self, mfgs, x):
        for i in range(len(mfgs)):
            mfg = mfgs[i]
            x_dst = x[:mfg.num_dst_nodes()]
            mfg = dgl.block_to_graph(mfg)
            x_skip = self.skips[i](x_dst)
            for j in range(self.num_etypes):
                subg = mfg.edge_subgraph(mfg.edata['etype'] == j, relabel_nodes=False)
                x_skip += self.convs[i][j](subg, (x, x_dst)).view(-1, self.hidden_channels)
            x = self.norms[i](x_skip)
            x = th.nn.functional.elu(x)
            x = self.dropout(x)
        return self.mlp(x)


class ResGCN(nn.Module):
    def __init__(self, in_feats=10, n_hidden=8, n_classes=3, n_layers=3, dropout=0.5):
        super().__init__()
        self.layers = nn.ModuleList()
        self.res_linears = nn.ModuleList()
        self.layers.append(dglnn.GraphConv(in_feats, n_hidden))
        self.res_linears.append(nn.Linear(in_feats, n_hidden))
        for _ in range(n_layers - 1):
            self.layers.append(dglnn.GraphConv(n_hidden, n_hidden))
            self.res_linears.append(nn.Linear(n_hidden, n_hidden))
        self.classify = nn.Linear(n_hidden, n_classes)
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, features):
        h = features
        for layer, res in zip(self.layers, self.res_linears):
            h = F.relu(layer(g, self.dropout(h)) + res(h))
        return self.classify(h)


class EdgeTypeGraphConv(nn.Module):
    """A widening GraphConv per edge type with norm="right": no work per source row, so no
    prologue; the first layer's skip stays in its first pass."""

    def __init__(self, in_size=4, hidden=8, out_size=3, num_etypes=2, num_layers=2):
        super().__init__()
        self.convs = nn.ModuleList()
        self.skips = nn.ModuleList()
        for i in range(num_layers):
            width = in_size if i == 0 else hidden
            self.convs.append(nn.ModuleList(
                dglnn.GraphConv(width, hidden, norm="right", allow_zero_in_degree=True) for _ in range(num_etypes)))
            self.skips.append(nn.Linear(width, hidden))
        self.out = nn.Linear(hidden, out_size)
        self.num_etypes = num_etypes

    def forward(self, g, x):
        for i in range(len(self.convs)):
            x_skip = self.skips[i](x)
            for j in range(self.num_etypes):
                subg = g.edge_subgraph(g.edata["etype"] == j, relabel_nodes=False)
                x_skip = x_skip + self.convs[i][j](subg, x)
            x = F.relu(x_skip)
        return self.out(x)

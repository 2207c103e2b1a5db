"""HAN (Wang et al., "Heterogeneous Graph Attention Network", WWW 2019) in the style of DGL's
examples/pytorch/han: each layer runs a GAT on the graph of each metapath (papers linked through
a shared author, or a shared subject: `dgl.metapath_reachable_graph`, made from the heterogeneous
graph the first time a layer sees it and cached), then weighs the metapaths by semantic
attention, a score per metapath averaged over all nodes and softmaxed over the metapaths. A
Linear classifies the papers."""

import dgl
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import GATConv


class MetapathAttention(nn.Module):
    """Semantic-level attention: how much each metapath's embedding counts, for all nodes alike."""

    def __init__(self, in_size, hidden_size=128):
        super().__init__()
        self.score = nn.Sequential(
            nn.Linear(in_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, 1, bias=False)
        )

    def forward(self, z):  # z: (N, M, D), an embedding per node and metapath
        importance = self.score(z).mean(0)  # (M, 1): averaged over all nodes
        beta = torch.softmax(importance, dim=0)
        beta = beta.expand((z.shape[0],) + beta.shape)  # (N, M, 1)
        return (beta * z).sum(1)


class HANLayer(nn.Module):
    def __init__(self, metapaths, in_size, out_size, num_heads, dropout):
        super().__init__()
        self.metapaths = [tuple(metapath) for metapath in metapaths]
        self.gats = nn.ModuleList(
            GATConv(in_size, out_size, num_heads, dropout, dropout, activation=F.elu,
                    allow_zero_in_degree=True)
            for _ in self.metapaths
        )
        self.attention = MetapathAttention(out_size * num_heads)
        self._graph = None
        self._metapath_graphs = {}

    def forward(self, g, h):
        if self._graph is not g:  # a new graph: its metapath graphs, once
            self._graph = g
            self._metapath_graphs = {
                metapath: dgl.metapath_reachable_graph(g, metapath) for metapath in self.metapaths
            }
        z = [
            gat(self._metapath_graphs[metapath], h).flatten(1)
            for gat, metapath in zip(self.gats, self.metapaths)
        ]
        return self.attention(torch.stack(z, dim=1))


class HAN(nn.Module):
    def __init__(self, metapaths, in_size, hidden_size, out_size, num_heads, dropout=0.6):
        super().__init__()
        self.layers = nn.ModuleList([HANLayer(metapaths, in_size, hidden_size, num_heads[0], dropout)])
        for previous, heads in zip(num_heads, num_heads[1:]):
            self.layers.append(
                HANLayer(metapaths, hidden_size * previous, hidden_size, heads, dropout)
            )
        self.predict = nn.Linear(hidden_size * num_heads[-1], out_size)

    def forward(self, g, h):
        for layer in self.layers:
            h = layer(g, h)
        return self.predict(h)

"""HAN-style models written otherwise than DGL's example (generated_examples/han): the metapath
graphs made in forward's own `for` loop on every call, three metapaths and three layers, the
semantic attention written inline. Each layer is a GAT per metapath graph and a weighted sum over
the metapaths whose weights are averaged over all nodes (render/user_layers.py,
render/user_layer_words.py)."""

import dgl
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import GATConv


class SemanticLayer(nn.Module):
    """A GAT per metapath graph, then the metapaths weighed by a score averaged over all nodes."""

    def __init__(self, num_metapaths, in_size, out_size, heads):
        super().__init__()
        self.convs = nn.ModuleList(GATConv(in_size, out_size, heads, activation=F.elu,
                                           allow_zero_in_degree=True) for _ in range(num_metapaths))
        self.project = nn.Linear(out_size * heads, 1, bias=False)

    def forward(self, graphs, h):
        outs = []
        for conv, mg in zip(self.convs, graphs):
            outs.append(conv(mg, h).flatten(1))
        stacked = torch.stack(outs, dim=1)  # (N, M, D)
        weights = torch.softmax(torch.tanh(self.project(stacked)).mean(0), dim=0)  # (M, 1)
        return (weights.unsqueeze(0) * stacked).sum(1)


class ThreeMetapathHAN(nn.Module):
    def __init__(self, in_size=6, hidden=4, out_size=3, heads=2,
                 metapaths=(("pa", "ap"), ("pf", "fp"), ("pv", "vp")), num_layers=3):
        super().__init__()
        self.metapaths = [list(m) for m in metapaths]
        sizes = [in_size] + [hidden * heads] * num_layers
        self.layers = nn.ModuleList(SemanticLayer(len(self.metapaths), sizes[k], hidden, heads)
                                    for k in range(num_layers))
        self.out = nn.Linear(hidden * heads, out_size)

    def forward(self, g, h):
        graphs = []
        for metapath in self.metapaths:
            graphs.append(dgl.metapath_reachable_graph(g, metapath))
        for layer in self.layers:
            h = layer(graphs, h)
        return self.out(h)

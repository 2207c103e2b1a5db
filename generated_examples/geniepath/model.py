"""GeniePath (Liu et al., AAAI 2019) in the style of DGL's examples/pytorch/geniepath: each layer
explores breadth with a GAT over the in-neighbours, then depth with an LSTM step per node whose
memory (h, c) is carried from layer to layer. The memory starts at zero for every node, with the
rows on its second dimension as nn.LSTM wants them: `torch.zeros(1, num_nodes, hid_dim)`."""

import torch
import torch.nn as nn
from dgl.nn import GATConv


class GeniePathLayer(nn.Module):
    def __init__(self, in_dim, hid_dim, heads=1, residual=False):
        super().__init__()
        self.breadth_func = GATConv(in_dim, hid_dim, num_heads=heads, residual=residual)
        self.depth_func = nn.LSTM(hid_dim, hid_dim)

    def forward(self, graph, x, h, c):
        x = torch.tanh(self.breadth_func(graph, x))
        x = torch.mean(x, dim=1)  # average over the heads
        x, (h, c) = self.depth_func(x.unsqueeze(0), (h, c))
        return x[0], (h, c)


class GeniePath(nn.Module):
    def __init__(self, in_dim, out_dim, hid_dim=16, num_layers=2, heads=1, residual=False):
        super().__init__()
        self.hid_dim = hid_dim
        self.linear1 = nn.Linear(in_dim, hid_dim)
        self.layers = nn.ModuleList(
            GeniePathLayer(hid_dim, hid_dim, heads=heads, residual=residual) for _ in range(num_layers)
        )
        self.linear2 = nn.Linear(hid_dim, out_dim)

    def forward(self, graph, x):
        h = torch.zeros(1, x.shape[0], self.hid_dim).to(x.device)
        c = torch.zeros(1, x.shape[0], self.hid_dim).to(x.device)
        x = self.linear1(x)
        for layer in self.layers:
            x, (h, c) = layer(graph, x, h, c)
        return self.linear2(x)

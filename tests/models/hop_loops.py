"""Stacks whose layers are hops of DGL's multi-hop modules (issue 37, a reviewer's chebnet,
tagcn and sgc): ChebConv and TAGConv stacks in the user's loop, the last layer with its
activation or without, SGConv's own hop loop, and two layers alike by chance written out one
by one (which stay apart)."""

import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import ChebConv, SGConv, TAGConv


class ChebStack(nn.Module):
    """ChebConvs of k hops in the user's loop; the last without an activation where asked."""

    def __init__(self, in_size, hid_size, out_size, k=2, n_layers=3, last_activation=False):
        super().__init__()
        sizes = [in_size] + [hid_size] * (n_layers - 1) + [out_size]
        self.layers = nn.ModuleList(
            ChebConv(a, b, k, activation=F.relu if last_activation or i < n_layers - 1 else None)
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])))

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = layer(g, h, [2])
        return h


class TagStack(nn.Module):
    """TAGConvs of k hops in the user's loop, the last without an activation (DGL's example)."""

    def __init__(self, in_size, hid_size, out_size, k=1, n_layers=3):
        super().__init__()
        sizes = [in_size] + [hid_size] * (n_layers - 1) + [out_size]
        self.layers = nn.ModuleList(
            TAGConv(a, b, k, activation=F.elu if i < n_layers - 1 else None)
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])))

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = layer(g, h)
        return h


class TwoChebsWrittenOut(nn.Module):
    """Two ChebConvs alike by chance, each called on its own line: not the user's loop."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.first = ChebConv(in_size, hid_size, 2)
        self.second = ChebConv(hid_size, hid_size, 2)
        self.third = ChebConv(hid_size, out_size, 2)

    def forward(self, g, x):
        h = self.first(g, x, [2])
        h = self.second(g, h, [2])
        return self.third(g, h, [2])


class SGCHops(nn.Module):
    """SGConv's own loop of k hops, the last ending with its fc."""

    def __init__(self, in_size, hid_size, out_size, k=2):
        super().__init__()
        self.net = SGConv(in_size, out_size, k=k)

    def forward(self, g, x):
        return self.net(g, x)

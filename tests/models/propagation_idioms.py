"""Propagation modules of dgl.nn as their users call them, for tests/test_propagation_idioms.py:
ChebConv with lambda_max given (the constants it builds per call), GCN2Conv's initial residual
traced into with edge weights (`feat_0[: feat.size(0)]`), TAGConv's and APPNPConv's norm reshape, SGConv's in-degree check."""

import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import APPNPConv, ChebConv, GCN2Conv, SGConv, TAGConv


class ChebTwoLayers(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k=3, lambda_max=2.0):
        super().__init__()
        self.convs = nn.ModuleList([ChebConv(in_size, hid_size, k), ChebConv(hid_size, out_size, k)])
        self.lambda_max = lambda_max

    def forward(self, g, x):
        h = self.convs[0](g, x, [self.lambda_max])
        return self.convs[1](g, F.relu(h), [self.lambda_max])


class InitialResidual(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.inp = nn.Linear(in_size, hid_size)
        self.conv1 = GCN2Conv(hid_size, layer=1, alpha=0.2, project_initial_features=False)
        self.conv2 = GCN2Conv(hid_size, layer=2, alpha=0.2, project_initial_features=False)
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h0 = F.relu(self.inp(x))
        h = F.relu(self.conv1(g, h0, h0))
        return self.out(self.conv2(g, h, h0))


class WeightedInitialResidual(InitialResidual):
    """InitialResidual over the graph's edge weights: GCN2Conv traced into (its EdgeWeightNorm
    over the whole graph), where without weights it is written out (trace/gcn2_write_out.py)."""

    def forward(self, g, x):
        w = g.edata["w"]
        h0 = F.relu(self.inp(x))
        h = F.relu(self.conv1(g, h0, h0, edge_weight=w))
        return self.out(self.conv2(g, h, h0, edge_weight=w))


class TopologyAdaptive(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = TAGConv(in_size, hid_size, k=2, activation=F.relu)
        self.conv2 = TAGConv(hid_size, out_size, k=1)

    def forward(self, g, x):
        return self.conv2(g, self.conv1(g, x))


class PersonalisedPageRank(nn.Module):
    def __init__(self, in_size, out_size, k=3):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)
        self.propagate = APPNPConv(k, 0.1)

    def forward(self, g, x):
        return self.propagate(g, self.lin(x))


class SimplifiedGCN(nn.Module):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.conv = SGConv(in_size, out_size, k=2)

    def forward(self, g, x):
        return self.conv(g, x)


class TopologyAdaptiveNamed(nn.Module):
    """TopologyAdaptive with its layers' results named: TAGConv's own name for them is `rst`."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = TAGConv(in_size, hid_size, k=2, activation=F.relu)
        self.conv2 = TAGConv(hid_size, out_size, k=1)

    def forward(self, g, x):
        hidden = self.conv1(g, x)
        logits = self.conv2(g, hidden)
        return logits


class ChebStack(nn.Module):
    """Three ChebConvs of k=3 in the user's loop, as DGL's model zoo stacks them."""

    def __init__(self, in_size, hid_size, out_size, k=3):
        super().__init__()
        sizes = [in_size, hid_size, hid_size, out_size]
        self.layers = nn.ModuleList(ChebConv(a, b, k) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = layer(g, h, [2])
        return h


class ChebTwoLambdas(nn.Module):
    """Two ChebConvs given another lambda_max each: each layer's re_norm is its own."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.convs = nn.ModuleList([ChebConv(in_size, hid_size, 3), ChebConv(hid_size, out_size, 3)])

    def forward(self, g, x):
        h = self.convs[0](g, x, [2.0])
        return self.convs[1](g, h, [4.0])

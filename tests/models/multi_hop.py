"""Models that propagate over several hops in one module call (issue: multi-hop propagation),
written the way DGL's examples write them; tests/test_multi_hop.py generates each and checks
it against forward."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import APPNPConv, ChebConv, EdgeWeightNorm, GatedGraphConv, GCN2Conv, GraphConv, SGConv, TAGConv


class NodeSelectionGGNN(nn.Module):
    """DGL's ggnn example (bAbI node selection): a GatedGraphConv over the annotations, then a
    score per node from its final state next to its annotation."""

    def __init__(self, annotation_size, out_feats, n_steps=4):
        super().__init__()
        self.ggnn = GatedGraphConv(annotation_size, out_feats, n_steps, n_etypes=1)
        self.output_layer = nn.Linear(annotation_size + out_feats, 1)

    def forward(self, graph, annotation):
        h = self.ggnn(graph, annotation)
        return self.output_layer(torch.cat([h, annotation], -1)).squeeze(-1)


class SampledAPPNP(nn.Module):
    """An MLP trained on sampled blocks, propagated with APPNP on the full graph after it:
    the MLP's output feeds k hops, and a skip of the MLP joins the result."""

    def __init__(self, in_size, hid_size, out_size, k=3):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_size, hid_size), nn.ReLU(), nn.Linear(hid_size, out_size))
        self.propagate = APPNPConv(k, alpha=0.15)
        self.skip = nn.Linear(in_size, out_size)

    def forward(self, g, x):
        return self.propagate(g, self.mlp(x)) + self.skip(x)


class ShallowGCNII(nn.Module):
    """GCNII with the initial residual from an input projection and the variant that
    projects the initial features with their own weight (project_initial_features=False)."""

    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.input_fc = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList(
            GCN2Conv(hid_size, layer=i + 1, alpha=0.2, lambda_=1.0, project_initial_features=False,
                     allow_zero_in_degree=True)
            for i in range(num_layers)
        )
        self.output_fc = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = h0 = F.relu(self.input_fc(x))
        for conv in self.convs:
            h = F.relu(conv(g, h, h0))
        return self.output_fc(h)


class SGCThenAPPNP(nn.Module):
    """Two multi-hop modules in a row: SGC's k=2 hops and its Linear, then APPNP's k=2."""

    def __init__(self, in_size, out_size):
        super().__init__()
        self.sgc = SGConv(in_size, out_size, k=2, allow_zero_in_degree=True)
        self.appnp = APPNPConv(2, alpha=0.3)

    def forward(self, g, x):
        return self.appnp(g, self.sgc(g, x))


class WeightedAPPNP(nn.Module):
    """DGL's appnp example on a graph whose edges carry weights (g.edata["weight"], a count of
    co-purchases, say): APPNPConv normalises them symmetrically (DGL's EdgeWeightNorm) before
    propagating."""

    def __init__(self, in_size, hid_size, out_size, k=4, alpha=0.1):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(in_size, hid_size), nn.Linear(hid_size, out_size)])
        self.feat_drop = nn.Dropout(0.5)
        self.propagate = APPNPConv(k, alpha, edge_drop=0.5)

    def forward(self, g, features):
        h = self.feat_drop(features)
        h = F.relu(self.layers[0](h))
        h = self.layers[1](self.feat_drop(h))
        return self.propagate(g, h, edge_weight=g.edata["weight"])


class WeightedSGC(nn.Module):
    """SGC (DGL's sgc example) given a weight per edge as forward's argument."""

    def __init__(self, in_size, out_size, k=2):
        super().__init__()
        self.sgc = SGConv(in_size, out_size, k=k, allow_zero_in_degree=True)

    def forward(self, g, features, edge_weight):
        return self.sgc(g, features, edge_weight=edge_weight)


class WeightedGCNII(nn.Module):
    """GCNII (DGL's gcnii example) propagating with the graph's edge weights."""

    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.fcs = nn.ModuleList([nn.Linear(in_size, hid_size), nn.Linear(hid_size, out_size)])
        self.convs = nn.ModuleList(
            GCN2Conv(hid_size, layer=i + 1, alpha=0.1, lambda_=0.5, allow_zero_in_degree=True)
            for i in range(num_layers)
        )

    def forward(self, graph, features):
        weight = graph.edata["w"]
        h = h0 = F.relu(self.fcs[0](features))
        for conv in self.convs:
            h = F.relu(conv(graph, h, h0, edge_weight=weight))
        return self.fcs[-1](h)


class WeightedTAGCN(nn.Module):
    """TAGConv layers (DGL's tagcn example) over weighted edges."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList([
            TAGConv(in_size, hid_size, k=2, activation=F.relu),
            TAGConv(hid_size, out_size, k=2),
        ])

    def forward(self, g, features, edge_weight):
        h = features
        for layer in self.layers:
            h = layer(g, h, edge_weight=edge_weight)
        return h


class NormalisedWeightGCN(nn.Module):
    """GraphConv without its own norm, given weights EdgeWeightNorm normalised (DGL's
    documentation of EdgeWeightNorm): norm="right" divides by each destination's weighted
    in-degree."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.edge_norm = EdgeWeightNorm(norm="right")
        self.conv1 = GraphConv(in_size, hid_size, norm="none", allow_zero_in_degree=True)
        self.conv2 = GraphConv(hid_size, out_size, norm="none", allow_zero_in_degree=True)

    def forward(self, g, x):
        norm_weight = self.edge_norm(g, g.edata["w"])
        h = F.relu(self.conv1(g, x, edge_weight=norm_weight))
        return self.conv2(g, h, edge_weight=norm_weight)


class ChebNetDefaultLambda(nn.Module):
    """ChebConv layers called without lambda_max, which DGL then takes as 2 for every graph of
    the batch (`[2] * graph.batch_size`): generated for one graph, and checked."""

    def __init__(self, in_size, hid_size, out_size, k=2):
        super().__init__()
        self.layers = nn.ModuleList([ChebConv(in_size, hid_size, k), ChebConv(hid_size, out_size, k)])

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i != len(self.layers) - 1:
                h = F.relu(h)
        return h


class TiedRoundsGCN(nn.Module):
    """One GraphConv applied `rounds` times with the same weights (weight-tied message passing,
    as in recurrent or "universal" GNNs), a residual and ReLU each round, then a Linear: the
    rounds before the last are one function of the round before, written once in a loop."""

    def __init__(self, in_size, hid_size, out_size, rounds=5):
        super().__init__()
        self.rounds = rounds
        self.encode = nn.Linear(in_size, hid_size)
        self.conv = GraphConv(hid_size, hid_size, allow_zero_in_degree=True)
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = self.encode(x)
        for _ in range(self.rounds):
            h = F.relu(self.conv(g, h)) + h
        return self.out(h)

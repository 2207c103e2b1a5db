"""Models that propagate over several hops in one module call (issue: multi-hop propagation),
written the way DGL's examples write them; tests/test_multi_hop.py generates each and checks
it against forward."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch.conv import APPNPConv, GatedGraphConv, GCN2Conv, SGConv


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

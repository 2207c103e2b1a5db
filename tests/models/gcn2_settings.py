"""GCNII stacks of DGL's GCN2Conv built with each of its settings, for
tests/test_gcn2_conv_helper.py: the projection of the initial features or not (weight2), bias or
not, an activation or none, allow_zero_in_degree, and edge weights."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {"none": None, "relu": F.relu, "elu": F.elu}
# GCN2Conv's settings the tests build it with, each as GCN2Stack's keyword arguments
SETTINGS = [
    {},
    {"project_initial_features": False},
    {"bias": False},
    {"activation": "relu"},
    {"activation": "elu", "bias": False, "project_initial_features": False},
    {"allow_zero_in_degree": True},
]


class GCN2Stack(nn.Module):
    """A Linear in, GCN2Convs with the settings given (one per layer: lambda_ / layer differs),
    a Linear out."""

    def __init__(self, in_size, hid_size, out_size, project_initial_features=True, bias=True, activation="none",
                 allow_zero_in_degree=False, num_layers=3):
        super().__init__()
        self.fc_in = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList(
            dglnn.GCN2Conv(hid_size, layer=i + 1, alpha=0.2, lambda_=0.7,
                           project_initial_features=project_initial_features, bias=bias,
                           activation=ACTIVATIONS[activation], allow_zero_in_degree=allow_zero_in_degree)
            for i in range(num_layers)
        )
        self.fc_out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = h0 = F.relu(self.fc_in(x))
        for conv in self.convs:
            h = conv(g, h, h0)
        return self.fc_out(h)


class WeightedGCN2Stack(GCN2Stack):
    """The same stack over weighted edges (GCN2Conv normalises them with EdgeWeightNorm)."""

    def forward(self, g, x, edge_weight):
        h = h0 = F.relu(self.fc_in(x))
        for conv in self.convs:
            h = conv(g, h, h0, edge_weight=edge_weight)
        return self.fc_out(h)

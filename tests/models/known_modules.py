"""One model per entry of gnn_codegen.analysis.known_modules: two layers of the same convolution, so the
second layer reads stored rows of the first (tests/test_known_modules.py)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn


def make_conv(kind, in_size, out_size):
    # activations as users pass them: a function the generated code can spell (torch.tanh), and
    # a module object it can reach only through GraphConv's private attribute
    if kind == "GraphConv-both-tanh":
        return dglnn.GraphConv(in_size, out_size, activation=torch.tanh, allow_zero_in_degree=True)
    if kind == "GraphConv-left-ReLU-no-bias":
        return dglnn.GraphConv(in_size, out_size, norm="left", bias=False, activation=nn.ReLU(),
                               allow_zero_in_degree=True)
    if kind == "SAGEConv-mean-tanh-LayerNorm":
        return dglnn.SAGEConv(in_size, out_size, "mean", activation=torch.tanh, norm=nn.LayerNorm(out_size))
    if kind.startswith("GraphConv-"):
        return dglnn.GraphConv(in_size, out_size, norm=kind.split("-")[1], allow_zero_in_degree=True)
    if kind.startswith("SAGEConv-"):
        return dglnn.SAGEConv(in_size, out_size, kind.split("-")[1])
    if kind == "GATConv":
        return nn.Sequential()  # replaced below: heads need flattening
    if kind == "GINConv":
        return dglnn.GINConv(nn.Linear(in_size, out_size), "sum")
    if kind == "GINConv-mean-learn-eps":
        return dglnn.GINConv(nn.Linear(in_size, out_size), "mean", learn_eps=True)
    if kind == "DotGatConv":
        return dglnn.DotGatConv(in_size, out_size, 1, allow_zero_in_degree=True)
    if kind == "EdgeConv":
        return dglnn.EdgeConv(in_size, out_size, allow_zero_in_degree=True)
    raise ValueError(kind)


class TwoConvs(nn.Module):
    def __init__(self, kind, in_size=6, hid_size=10, out_size=4):
        super().__init__()
        self.kind = kind
        self.conv2_in_size = hid_size * 3 if kind.startswith("GAT") else hid_size
        if kind == "GATConv-residual":  # a Linear residual and an activation, then an identity one
            self.conv1 = dglnn.GATConv(in_size, hid_size, 3, residual=True, activation=nn.ELU(),
                                       allow_zero_in_degree=True)
            self.conv2 = dglnn.GATConv(hid_size * 3, hid_size, 3, residual=True, bias=False,
                                       allow_zero_in_degree=True)
        elif kind in ("GATConv", "GATv2Conv"):
            cls = getattr(dglnn, kind)
            self.conv1 = cls(in_size, hid_size, 3, allow_zero_in_degree=True)
            self.conv2 = cls(hid_size * 3, out_size, 2, allow_zero_in_degree=True)
        else:
            self.conv1 = make_conv(kind, in_size, hid_size)
            self.conv2 = make_conv(kind, hid_size, out_size)

    def forward(self, g, x):
        h = self.conv1(g, x)
        h = torch.tanh(h.flatten(1))
        h = self.conv2(g, h)
        return h.flatten(1)

"""Models whose modules' forwards branch on their settings, as people write them: a PairNorm
with a mode switch between whole bodies, a layer built with and without its bias, and a
layer that applies its activation only when it has one. The generated code keeps each test or
says which branch it is (render/setting_branches.py)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModeNorm(nn.Module):
    def __init__(self, mode="PN", scale=1.0):
        super().__init__()
        self.mode = mode
        self.scale = scale

    def forward(self, x):
        if self.mode == "None":
            return x
        col_mean = x.mean(dim=0)
        if self.mode == "PN":
            x = x - col_mean
            rownorm_mean = (1e-6 + x.pow(2).sum(dim=1).mean()).sqrt()
            x = self.scale * x / rownorm_mean
        elif self.mode == "PN-SI":
            x = x - col_mean
            rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
            x = self.scale * x / rownorm_individual
        else:
            rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
            x = self.scale * x / rownorm_individual - col_mean
        return x


class NormedGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, mode="PN"):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)
        self.norm = ModeNorm(mode)

    def forward(self, g, x):
        h = F.relu(self.norm(self.conv1(g, x)))
        return self.conv2(g, h)


class ScaledIndividuallyGCN(NormedGCN):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__(in_size, hid_size, out_size, mode="PN-SI")


class ScaledAndCentredGCN(NormedGCN):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__(in_size, hid_size, out_size, mode="PN-SCS")


class MaybeBiased(nn.Module):
    """A layer whose forward tests its settings as DGL's GCN2Conv's did before gnn-codegen
    called a helper for it: `if self._bias:` and `if self._activation is not None:`."""

    def __init__(self, in_size, out_size, bias=True, activation=F.relu):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_size, out_size) / in_size**0.5)
        self._bias = bias
        if bias:
            self.bias = nn.Parameter(torch.randn(out_size) / 10)
        else:
            self.register_parameter("bias", None)
        self._activation = activation

    def forward(self, h):
        rst = h @ self.weight
        if self._bias:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return rst


class InitialResidualGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, bias=True):
        super().__init__()
        self.conv = dglnn.GraphConv(in_size, hid_size)
        self.layers = nn.ModuleList(MaybeBiased(hid_size, hid_size, bias) for _ in range(2))
        self.out = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, x):
        h = h0 = self.conv(g, x)
        for layer in self.layers:
            h = layer(h) + h0
        return self.out(g, h)


class InitialResidualGCNWithoutBias(InitialResidualGCN):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__(in_size, hid_size, out_size, bias=False)


class MaybeActivated(nn.Module):
    def __init__(self, in_size, out_size, activation=None):
        super().__init__()
        self.linear = nn.Linear(in_size, out_size)
        self.activation = activation

    def forward(self, h):
        h = self.linear(h)
        if self.activation is not None:
            h = self.activation(h)
        return h


class MLPThenGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, last_activation=F.elu):
        super().__init__()
        self.mlp = nn.ModuleList([MaybeActivated(in_size, hid_size, F.relu),
                                  MaybeActivated(hid_size, hid_size, last_activation)])
        self.conv = dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = x
        for layer in self.mlp:
            h = layer(h)
        return self.conv(g, h)


class MLPWithoutLastActivationThenGCN(MLPThenGCN):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__(in_size, hid_size, out_size, last_activation=None)

"""Third-party styles of settings and norms between layers (tests of render/setting_branches.py
and render/round_loops.py on code this repository did not write): a GCN layer with residual and
batch-norm flags as benchmarking-gnns writes its layers, PairNorms held one per layer in a
ModuleList and zipped with the convolutions, and a norm picked by name from a ModuleDict."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class GCNLayer(nn.Module):
    """A layer in benchmarking-gnns' style: flags fixed in the constructor, tested in forward."""

    def __init__(self, in_dim, out_dim, activation, dropout, batch_norm, residual=False):
        super().__init__()
        self.in_channels = in_dim
        self.out_channels = out_dim
        self.batch_norm = batch_norm
        self.residual = residual
        if in_dim != out_dim:
            self.residual = False
        self.batchnorm_h = nn.BatchNorm1d(out_dim)
        self.activation = activation
        self.dropout = nn.Dropout(dropout)
        self.conv = dglnn.GraphConv(in_dim, out_dim, allow_zero_in_degree=True)

    def forward(self, g, feature):
        h_in = feature  # to be used for residual connection
        h = self.conv(g, feature)
        if self.batch_norm:
            h = self.batchnorm_h(h)  # batch normalization
        if self.activation:
            h = self.activation(h)
        if self.residual:
            h = h_in + h  # residual connection
        h = self.dropout(h)
        return h


class MLPReadout(nn.Module):
    def __init__(self, input_dim, output_dim, L=2):
        super().__init__()
        layers = [nn.Linear(input_dim // 2**l, input_dim // 2 ** (l + 1), bias=True) for l in range(L)]
        layers.append(nn.Linear(input_dim // 2**L, output_dim, bias=True))
        self.FC_layers = nn.ModuleList(layers)
        self.L = L

    def forward(self, x):
        y = x
        for l in range(self.L):
            y = self.FC_layers[l](y)
            y = F.relu(y)
        y = self.FC_layers[self.L](y)
        return y


class GCNNet(nn.Module):
    """benchmarking-gnns' node-classification GCNNet: an embedding Linear, L GCNLayers, an MLP."""

    def __init__(self, in_dim=8, hidden_dim=16, out_dim=16, n_classes=3, L=4, batch_norm=True,
                 residual=True):
        super().__init__()
        self.embedding_h = nn.Linear(in_dim, hidden_dim)
        self.in_feat_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList([GCNLayer(hidden_dim, hidden_dim, F.relu, 0.0, batch_norm, residual)
                                     for _ in range(L - 1)])
        self.layers.append(GCNLayer(hidden_dim, out_dim, F.relu, 0.0, batch_norm, residual))
        self.MLP_layer = MLPReadout(out_dim, n_classes)

    def forward(self, g, h):
        h = self.embedding_h(h)
        h = self.in_feat_dropout(h)
        for conv in self.layers:
            h = conv(g, h)
        return self.MLP_layer(h)


class PairNorm(nn.Module):
    def __init__(self, mode="PN", scale=1):
        assert mode in ["None", "PN", "PN-SI", "PN-SCS"]
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
        if self.mode == "PN-SI":
            x = x - col_mean
            rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
            x = self.scale * x / rownorm_individual
        if self.mode == "PN-SCS":
            rownorm_individual = (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()
            x = self.scale * x / rownorm_individual - col_mean
        return x


class ZippedNormsGCN(nn.Module):
    """A norm per layer in a ModuleList, zipped with the convolutions; the last conv alone."""

    def __init__(self, in_feats=8, hidden=16, n_classes=3, n_layers=4, mode="PN"):
        super().__init__()
        sizes = [in_feats] + [hidden] * (n_layers - 1) + [n_classes]
        self.convs = nn.ModuleList(dglnn.GraphConv(a, b, allow_zero_in_degree=True)
                                   for a, b in zip(sizes, sizes[1:]))
        self.norms = nn.ModuleList(PairNorm(mode) for _ in range(n_layers - 1))

    def forward(self, g, x):
        for conv, norm in zip(self.convs[:-1], self.norms):
            x = conv(g, x)
            x = norm(x)
            x = F.relu(x)
        return self.convs[-1](g, x)


class NamedNormGCN(nn.Module):
    """The norm picked by a name given to the constructor, from a ModuleDict."""

    def __init__(self, in_feats=8, hidden=16, n_classes=3, n_layers=3, norm="pair"):
        super().__init__()
        self.norm_type = norm
        sizes = [in_feats] + [hidden] * (n_layers - 1) + [n_classes]
        self.convs = nn.ModuleList(dglnn.GraphConv(a, b, allow_zero_in_degree=True)
                                   for a, b in zip(sizes, sizes[1:]))
        self.norms = nn.ModuleDict({"pair": PairNorm("PN"), "pair_si": PairNorm("PN-SI"),
                                    "batch": nn.BatchNorm1d(hidden), "none": nn.Identity()})

    def forward(self, g, x):
        for i, conv in enumerate(self.convs):
            x = conv(g, x)
            if i < len(self.convs) - 1:
                x = F.relu(self.norms[self.norm_type](x))
        return x

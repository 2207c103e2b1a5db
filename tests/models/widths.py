"""Models that write widths from their constructor into forward, as users do: the width of
flattened attention heads kept as an attribute, a recurrent state's width, a TAGConv stack
whose Linear reads a concatenation of hops (lower/module_constants.py writes the ints as the
attributes; render/layer.py slices the Linear's weight by the parts' widths at run time); and
moves onto the device of tensors that are there already (analysis/device_moves.py)."""

import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv, GraphConv, TAGConv


class FlattenedHeads(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_heads=4):
        super().__init__()
        self.hid_size = hid_size
        self.conv1 = GATConv(in_size, hid_size // num_heads, num_heads)
        self.conv2 = GraphConv(hid_size, out_size)

    def forward(self, g, x):
        h = self.conv1(g, x).view(-1, self.hid_size)
        return self.conv2(g, F.relu(h))


class HeadsApart(nn.Module):
    """Heads and their width as two attributes: where both are 4, which 4 is which cannot be
    told, and both stay numbers."""

    def __init__(self, in_size, out_size, num_heads, head_size):
        super().__init__()
        self.num_heads, self.head_size = num_heads, head_size
        self.lin = nn.Linear(in_size, num_heads * head_size)
        self.conv = GraphConv(head_size, out_size)

    def forward(self, g, x):
        h = self.lin(x).view(-1, self.num_heads, self.head_size)
        return self.conv(g, h.mean(1))


class ZeroState(nn.Module):
    """A state that starts at zero for every node, as wide as the hidden layer."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.hid_dim = hid_size
        self.lin = nn.Linear(in_size, hid_size)
        self.conv = GraphConv(hid_size, out_size)

    def forward(self, g, x):
        state = torch.zeros(x.shape[0], self.hid_dim).to(x.device)
        h = F.relu(self.lin(x)) + state
        return self.conv(g, h)


class TAGStack(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes):
        super().__init__()
        self.layers = nn.ModuleList([TAGConv(in_feats, n_hidden, k=2, activation=F.relu),
                                     TAGConv(n_hidden, n_classes, k=2)])

    def forward(self, g, features):
        h = features
        for layer in self.layers:
            h = layer(g, h)
        return h


class NormMovedToFeatures(nn.Module):
    """A GCN norm written in forward, moved to the features' device as DGL's convs write it
    (`norm.to(feat.device)`): computed in a layer, where it is on the device already."""

    def __init__(self, in_size, out_size):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)

    def forward(self, g, x):
        h = self.lin(x)
        norm = g.in_degrees().float().clamp(min=1).pow(-0.5).to(h.device).unsqueeze(1)
        with g.local_scope():
            g.ndata["h"] = h * norm
            g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return g.ndata["h"] * norm


class ScaledTAG(nn.Module):
    """Features scaled by a learned vector before a TAGConv stack, with a norm of the user's
    own cast to the features: float16 features times a float32 scale are float32, so the
    features' dtype is not the stack's, and that norm stays apart from TAGConv's."""

    def __init__(self, in_feats, n_hidden, n_classes):
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, in_feats))
        self.layers = nn.ModuleList([TAGConv(in_feats, n_hidden, k=1, activation=F.relu),
                                     TAGConv(n_hidden, n_classes, k=1)])

    def forward(self, g, x):
        norm = g.in_degrees().to(x).clamp(min=1).pow(-0.5).unsqueeze(1)
        h = x * self.scale * norm
        for layer in self.layers:
            h = layer(g, h)
        return h

"""The models the benchmark runs, written the way a DGL user writes them (no gnn-codegen
anywhere): three-layer GraphSAGE-mean, GCN and GAT trained on sampled blocks
(`forward(self, blocks, x)`, called as `model([g] * 3, x)` on the full graph), and a
jumping-knowledge network trained on the full graph (`forward(self, g, x)`).

gnn-codegen reads this file: `gnn-codegen benchmarks/models.py:SAGE -o ... --init '{...}'`."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class SAGE(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.SAGEConv(in_size, hid_size, "mean"))
        for _ in range(num_layers - 2):
            self.layers.append(dglnn.SAGEConv(hid_size, hid_size, "mean"))
        self.layers.append(dglnn.SAGEConv(hid_size, out_size, "mean"))
        self.dropout = nn.Dropout(0.5)

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = F.relu(h)
                h = self.dropout(h)
        return h


class GCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.layers = nn.ModuleList()
        # GraphConv's default norm="both": divides by the source nodes' out-degrees too
        self.layers.append(dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True))
        for _ in range(num_layers - 2):
            self.layers.append(dglnn.GraphConv(hid_size, hid_size, allow_zero_in_degree=True))
        self.layers.append(dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True))
        self.dropout = nn.Dropout(0.5)

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = F.relu(h)
                h = self.dropout(h)
        return h


class GAT(nn.Module):
    def __init__(self, in_size, hid_size, out_size, heads=4, num_layers=3):
        super().__init__()
        self.layers = nn.ModuleList()
        # hid_size per layer in total: hid_size // heads per head, heads concatenated
        self.layers.append(dglnn.GATConv(in_size, hid_size // heads, heads, allow_zero_in_degree=True))
        for _ in range(num_layers - 2):
            self.layers.append(dglnn.GATConv(hid_size, hid_size // heads, heads, allow_zero_in_degree=True))
        self.layers.append(dglnn.GATConv(hid_size, out_size, heads, allow_zero_in_degree=True))

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = F.elu(h.flatten(1))
            else:
                h = h.mean(1)
        return h


class JKNet(nn.Module):
    """Jumping knowledge (Xu et al., 2018) with concatenation: every layer's output feeds the
    classifier."""

    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.SAGEConv(in_size, hid_size, "mean"))
        for _ in range(num_layers - 1):
            self.layers.append(dglnn.SAGEConv(hid_size, hid_size, "mean"))
        self.classify = nn.Linear(hid_size * num_layers, out_size)

    def forward(self, g, x):
        h = x
        outs = []
        for layer in self.layers:
            h = F.relu(layer(g, h))
            outs.append(h)
        return self.classify(torch.cat(outs, dim=1))


class APPNP(nn.Module):
    """APPNP (Gasteiger et al., 2019) as DGL's appnp example builds it: an MLP, then k = 10 hops
    of personalised-PageRank propagation (APPNPConv)."""

    def __init__(self, in_size, hid_size, out_size, k=10, alpha=0.1):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(in_size, hid_size), nn.Linear(hid_size, out_size)])
        self.dropout = nn.Dropout(0.5)
        self.propagate = dglnn.APPNPConv(k, alpha)

    def forward(self, g, x):
        h = F.relu(self.layers[0](self.dropout(x)))
        h = self.layers[1](self.dropout(h))
        return self.propagate(g, h)


class SGC(nn.Module):
    """SGC (Wu et al., 2019) as DGL's sgc example builds it: k = 2 hops of normalised
    propagation, then a Linear (SGConv)."""

    def __init__(self, in_size, out_size, k=2):
        super().__init__()
        self.conv = dglnn.SGConv(in_size, out_size, k=k, allow_zero_in_degree=True)

    def forward(self, g, x):
        return self.conv(g, x)

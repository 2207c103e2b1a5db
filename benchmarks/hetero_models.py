"""Heterogeneous models for benchmarks/hetero.py, on a graph shaped like ogbn-mag: papers with
features; authors, institutions and fields of study without, each from a learnt embedding (as
DGL's ogbn-mag examples do). Written as those examples write them."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class Embeddings(nn.Module):
    """A learnt row per node of each featureless type."""

    def __init__(self, num_nodes, size):
        super().__init__()
        self.embeds = nn.ParameterDict(
            {ntype: nn.Parameter(torch.randn(n, size) * 0.1) for ntype, n in num_nodes.items()}
        )


class RGCN(Embeddings):
    """Two layers of HeteroGraphConv over GraphConv (its default norm, "both"), summed over
    the relations into each type, ReLU between; classifies papers."""

    def __init__(self, num_nodes, rel_names, in_size=128, hid_size=64, out_size=349):
        super().__init__(num_nodes, in_size)
        self.conv1 = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(in_size, hid_size) for rel in rel_names})
        self.conv2 = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(hid_size, out_size) for rel in rel_names})

    def forward(self, g, x):
        h = dict(x)
        h.update({ntype: embed for ntype, embed in self.embeds.items()})
        h = self.conv1(g, h)
        h = {ntype: F.relu(v) for ntype, v in h.items()}
        return self.conv2(g, h)["paper"]


class RGAT(Embeddings):
    """Three layers of HeteroGraphConv over GATConv with 4 heads, flattened, with ELU between,
    and a Linear classifier of papers."""

    def __init__(self, num_nodes, rel_names, in_size=128, hid_size=64, out_size=349, n_heads=4):
        super().__init__(num_nodes, in_size)
        self.layers = nn.ModuleList()
        for i in range(3):
            size = in_size if i == 0 else hid_size
            self.layers.append(
                dglnn.HeteroGraphConv(
                    {rel: dglnn.GATConv(size, hid_size // n_heads, n_heads) for rel in rel_names}
                )
            )
        self.linear = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = dict(x)
        h.update({ntype: embed for ntype, embed in self.embeds.items()})
        for layer in self.layers:
            h = layer(g, h)
            h = {ntype: F.elu(v.flatten(1)) for ntype, v in h.items()}
        return self.linear(h["paper"])

"""Jumping-knowledge network: two SAGEConv branches at the first depth (summed), GAT layers,
every layer's output combined by dgl.nn.JumpingKnowledge, then a Linear classifier."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class JKNet(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=3, mode="cat"):
        super().__init__()
        self.mean_branch = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.pool_branch = dglnn.SAGEConv(in_size, hid_size, "pool")
        self.layers = nn.ModuleList(
            dglnn.GATConv(hid_size, hid_size // 2, 2, allow_zero_in_degree=True)
            for _ in range(num_layers - 1)
        )
        self.jk = dglnn.JumpingKnowledge(mode)
        jk_size = hid_size * num_layers if mode == "cat" else hid_size
        self.classify = nn.Linear(jk_size, out_size)

    def forward(self, g, x):
        h = F.relu(self.mean_branch(g, x) + self.pool_branch(g, x))
        outs = [h]
        for layer in self.layers:
            h = F.elu(layer(g, h).flatten(1))
            outs.append(h)
        return self.classify(self.jk(outs))

"""A wide GraphSAGE layer followed by a narrowing projection before the next layer.

Cutting right after `conv1` would store its 256-wide output for every node and gather it again
for every batch of layer 2. The optimal cut runs `self.proj` (256 -> 16) in layer 1 and stores
the 16-wide tensor instead: 16x fewer bytes stored and reloaded.
"""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class NarrowingSAGE(nn.Module):
    def __init__(self, in_size, wide_size, narrow_size, out_size):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, wide_size, "mean")
        self.proj = nn.Linear(wide_size, narrow_size)
        self.conv2 = dglnn.SAGEConv(narrow_size, out_size, "mean")

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        h = self.proj(h)
        return self.conv2(g, h)

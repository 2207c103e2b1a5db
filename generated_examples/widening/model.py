"""A narrow GAT layer whose output is widened by an MLP before the next layer.

Cutting right after `conv1` (the simple rule) would run `self.expand` (16 -> 256) in layer 1 and
store the 256-wide result for every node. Storing conv1's 16-wide output and running the
expansion in layer 2 on the gathered source rows moves far fewer bytes; the generated inference
does better still: conv2 narrows (256 -> 8), so layer 1 runs the expansion and conv2's weight on
each node once, and stores 8-wide rows.
"""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class WideningGAT(nn.Module):
    def __init__(self, in_size, narrow_size, wide_size, out_size, heads=2):
        super().__init__()
        self.conv1 = dglnn.GATConv(in_size, narrow_size // heads, heads, allow_zero_in_degree=True)
        self.expand = nn.Linear(narrow_size, wide_size)
        self.conv2 = dglnn.GraphConv(wide_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = self.conv1(g, x).flatten(1)
        h = F.relu(self.expand(F.elu(h)))
        return self.conv2(g, h)

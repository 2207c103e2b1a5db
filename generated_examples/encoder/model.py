"""A text-attributed-graph model: a 768-wide raw feature (say, a sentence embedding) goes
through an MLP encoder to 64 dimensions before two GraphSAGE layers, with a skip connection
from the encoded input to the output.

Run inside layer 1, the encoder would redo its work on every gathered source row, after
gathering the 768-wide input rows. The optimal cut makes it a prologue: once per node, stored
64 wide, and read by layer 1 (source rows) and by layer 2 (the skip, destination rows).
"""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class EncodedSAGE(nn.Module):
    def __init__(self, raw_size, hid_size, out_size):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(raw_size, hid_size), nn.ReLU(), nn.LayerNorm(hid_size))
        self.conv1 = dglnn.SAGEConv(hid_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, hid_size, "mean")
        self.head = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h0 = self.encoder(x)
        h = F.relu(self.conv1(g, h0))
        h = self.conv2(g, h) + h0
        return self.head(h)

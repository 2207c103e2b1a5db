"""A deep residual GCN with an input encoder, an input skip into the last layer, and a
readout that sums tensors from three depths (full-graph style forward)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_size, hid_size), nn.ReLU())
        self.conv1 = dglnn.GraphConv(hid_size, hid_size, allow_zero_in_degree=True)
        self.conv2 = dglnn.SAGEConv(hid_size, hid_size, "mean")
        self.conv3 = dglnn.SAGEConv(hid_size, out_size, "mean")
        self.norm = nn.LayerNorm(hid_size)
        self.skip = nn.Linear(in_size, out_size)
        self.dropout = nn.Dropout(0.2)

    def forward(self, g, x):
        x0 = self.encoder(x)
        relu1 = F.relu(self.conv1(g, x0))
        h = relu1 + x0
        relu2 = F.relu(self.conv2(g, self.dropout(h)))
        h = self.norm(relu2 + h)
        out = self.conv3(g, h) + self.skip(x)
        readout = x0 + relu1 + relu2
        return out, readout

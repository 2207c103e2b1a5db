"""Models whose generated calls a reviewer reads without opening the helpers: a GraphConv stack
that narrows at its last layer, one normalised by edge weights (norm="none": no out-degrees
read), and GraphSAGE layers whose aggregators read source rows in messages only or not."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class NarrowingGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size)
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        return self.conv2(g, h)


class EdgeWeightedGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size, norm="none")
        self.conv2 = dglnn.GraphConv(hid_size, out_size, norm="none")

    def forward(self, g, x, w):
        h = F.relu(self.conv1(g, x, edge_weight=w))
        return self.conv2(g, h, edge_weight=w)


class MixedAggregators(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "gcn")
        self.conv2 = dglnn.SAGEConv(hid_size, hid_size, "pool")
        self.conv3 = dglnn.SAGEConv(hid_size, out_size, "gcn")

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        h = F.relu(self.conv2(g, h))
        return self.conv3(g, h)


class ResidualGAT(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.gat1 = dglnn.GATConv(in_size, hid_size, num_heads=2, residual=True)
        self.gat2 = dglnn.GATConv(hid_size * 2, out_size, num_heads=1, residual=True)

    def forward(self, g, x):
        h = self.gat1(g, x).flatten(1)
        return self.gat2(g, h).mean(1)


class BreadthThenDepth(nn.Module):
    """A GAT over the in-neighbours, then an LSTM step per node whose memory (h, c) goes from
    layer to layer; the last layer's memory is read by nothing."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.hid_size = hid_size
        self.gats = nn.ModuleList([dglnn.GATConv(in_size, hid_size, 1), dglnn.GATConv(hid_size, hid_size, 1)])
        self.lstms = nn.ModuleList([nn.LSTM(hid_size, hid_size), nn.LSTM(hid_size, hid_size)])
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = torch.zeros(1, x.shape[0], self.hid_size).to(x.device)
        c = torch.zeros(1, x.shape[0], self.hid_size).to(x.device)
        for gat, lstm in zip(self.gats, self.lstms):
            x = gat(g, x).mean(1)
            x, (h, c) = lstm(x.unsqueeze(0), (h, c))
            x = x[0]
        return self.out(x)


class CountedOnly(nn.Module):
    """Constants sized by the row count of tensors the layers read no rows of: the input's in
    layer 1, and in layer 2 that of h, which only the first layer's source part reads."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.hid_size = hid_size
        self.lin = nn.Linear(in_size, hid_size)
        self.conv1 = dglnn.GraphConv(hid_size, hid_size, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = self.lin(x)
        h1 = self.conv1(g, h) + torch.ones(x.shape[0], self.hid_size, device=x.device)
        return self.conv2(g, F.relu(h1)) - torch.ones(h.size(0), 1, device=h.device)

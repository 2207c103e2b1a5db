"""One computation written twice: for a full graph, and for a list of blocks with explicit
destination slicing (tests/test_row_spaces.py)."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class FullGraphStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(6, 8, "mean"), dglnn.SAGEConv(8, 8, "pool"), dglnn.GraphConv(8, 3)])
        self.skip = nn.Linear(6, 8)

    def forward(self, g, x):
        h = F.relu(self.layers[0](g, x)) + self.skip(x)
        h = h + self.layers[1](g, h)
        return self.layers[2](g, h)


class BlocksStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(6, 8, "mean"), dglnn.SAGEConv(8, 8, "pool"), dglnn.GraphConv(8, 3)])
        self.skip = nn.Linear(6, 8)

    def forward(self, blocks, x):
        x_dst = x[: blocks[0].num_dst_nodes()]
        h = F.relu(self.layers[0](blocks[0], (x, x_dst))) + self.skip(x_dst)
        h = h[: blocks[1].num_dst_nodes()] + self.layers[1](blocks[1], h)
        return self.layers[2](blocks[2], h)

"""Models for the check gnn-codegen runs before it writes a module (tests/test_verify.py)."""

import dgl.nn as dglnn
import torch.nn as nn


class PickyConv(dglnn.SAGEConv):
    """A SAGEConv that refuses graphs of more than 500 edges: fine on the probe graphs, and its
    forward raises on the check's graph."""

    def forward(self, graph, feat):
        if graph.num_edges() > 500:
            raise ValueError("this layer was only ever meant for small graphs")
        return super().forward(graph, feat)


class PickyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = PickyConv(8, 6, "mean")
        self.conv2 = dglnn.SAGEConv(6, 4, "mean")

    def forward(self, g, x):
        return self.conv2(g, self.conv1(g, x))

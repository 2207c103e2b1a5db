"""A molecule-style model with edge inputs: edge weights for GraphConv, encoded edge features
for GINEConv, and EGATConv layers that update node and edge features together."""

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class EdgeAwareGNN(nn.Module):
    def __init__(self, in_size, edge_size, hid_size, out_size, heads=2):
        super().__init__()
        self.edge_encoder = nn.Linear(edge_size, hid_size)
        self.gcn = dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True)
        self.gine = dglnn.GINEConv(nn.Linear(hid_size, hid_size))
        self.egat1 = dglnn.EGATConv(hid_size, hid_size, hid_size // heads, hid_size // heads, heads)
        self.egat2 = dglnn.EGATConv(hid_size, hid_size, out_size, out_size, 1)

    def forward(self, g, x, edge_weight, edge_feat):
        e = F.relu(self.edge_encoder(edge_feat))
        h = F.relu(self.gcn(g, x, edge_weight=edge_weight))
        h = F.relu(self.gine(g, h, e))
        h, e = self.egat1(g, h, e)
        h, e = self.egat2(g, F.elu(h.flatten(1)), e.flatten(1))
        return h.squeeze(1), e.squeeze(1)


if __name__ == "__main__":
    g = dgl.rand_graph(100, 500)
    model = EdgeAwareGNN(16, 4, 8, 3)
    print(model(g, torch.randn(100, 16), torch.rand(500), torch.randn(500, 4)))

"""RGCN for entity classification in the style of DGL's examples/pytorch/rgcn: featureless
nodes, whose embedding table is the first layer's input (`x = self.emb.weight`), on a
homogeneous graph whose edge types and normalisation constants are edge data read in forward
(`g.edata[dgl.ETYPE]`, `g.edata["norm"]`)."""

import dgl
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import RelGraphConv


class RGCN(nn.Module):
    def __init__(self, num_nodes, h_dim, out_dim, num_rels, num_bases=-1):
        super().__init__()
        num_bases = num_rels if num_bases < 0 else num_bases
        self.emb = nn.Embedding(num_nodes, h_dim)
        self.conv1 = RelGraphConv(
            h_dim, h_dim, num_rels, regularizer="basis", num_bases=num_bases, self_loop=False
        )
        self.conv2 = RelGraphConv(
            h_dim, out_dim, num_rels, regularizer="basis", num_bases=num_bases, self_loop=False
        )

    def forward(self, g):
        x = self.emb.weight
        h = F.relu(self.conv1(g, x, g.edata[dgl.ETYPE], g.edata["norm"]))
        h = self.conv2(g, h, g.edata[dgl.ETYPE], g.edata["norm"])
        return h


def edge_norm(g):
    """1 / in-degree of each edge's destination, as the example's preprocessing stores it."""
    in_deg = g.in_degrees().float().clamp(min=1)
    return (1.0 / in_deg)[g.edges()[1]].unsqueeze(1)

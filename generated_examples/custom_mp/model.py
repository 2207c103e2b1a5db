"""A user-written message-passing layer (update_all with a learned edge gate), a relational
layer reading edge types, and a second per-node input."""

import dgl
import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class GatedMeanConv(nn.Module):
    """Mean of in-neighbours' features, each gated by a sigmoid of its source and target."""

    def __init__(self, in_size, out_size):
        super().__init__()
        self.gate = nn.Linear(2 * in_size, 1)
        self.lin = nn.Linear(2 * in_size, out_size)

    def forward(self, graph, feat):
        with graph.local_scope():
            feat_src, feat_dst = dgl.utils.expand_as_pair(feat, graph)
            graph.srcdata["h"] = feat_src
            graph.dstdata["h"] = feat_dst
            graph.apply_edges(lambda e: {"g": torch.sigmoid(self.gate(torch.cat([e.src["h"], e.dst["h"]], -1)))})
            graph.update_all(fn.u_mul_e("h", "g", "m"), fn.mean("m", "agg"))
            return self.lin(torch.cat([graph.dstdata["agg"], feat_dst], -1))


class CustomNet(nn.Module):
    def __init__(self, in_size, pos_size, hid_size, out_size, num_rels):
        super().__init__()
        self.pos = nn.Linear(pos_size, in_size)
        self.conv1 = GatedMeanConv(in_size, hid_size)
        self.conv2 = dglnn.RelGraphConv(hid_size, out_size, num_rels, regularizer="basis", num_bases=2)

    def forward(self, g, x, pos, etypes):
        h = F.relu(self.conv1(g, x + self.pos(pos)))
        return self.conv2(g, h, etypes)

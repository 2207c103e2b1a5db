"""Heterogeneous models in forms people write beyond DGL's examples (issue 35, mechanisms 1, 2
and 8): forward's feature dict as a default of None, and the like. Our own code, small widths."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class OptionalFeaturesRGCN(nn.Module):
    """A trainer-facing forward: a flag before the features, which default to None because the
    training loop passes them by keyword (`model(g, feats=batch_feats)`); the flag picks a
    hidden layer's output for embedding export."""

    def __init__(self, in_size, hid_size, out_size, rel_names):
        super().__init__()
        self.conv1 = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(in_size, hid_size) for rel in rel_names},
                                           aggregate="sum")
        self.conv2 = dglnn.HeteroGraphConv({rel: dglnn.SAGEConv(hid_size, out_size, "mean") for rel in rel_names},
                                           aggregate="mean")

    def forward(self, graph, return_hidden=False, feats=None, **unused):
        hidden = {ntype: F.relu(h) for ntype, h in self.conv1(graph, feats).items()}
        if return_hidden:
            return hidden
        return self.conv2(graph, hidden)

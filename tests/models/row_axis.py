"""Models whose results keep node rows on another axis than the first, as self-supervised
code writes them: DGI's encoder output as a batch of one graph (`h.unsqueeze(0)`), features by
node (`h.t()`), a no-op `squeeze(0)` on rows. For tests/test_row_axis.py (issue 35, item 9)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class DGIEncoderBatchOfOne(nn.Module):
    """DGL's DGI example: the encoder's node embeddings, given to the discriminator as a batch
    of one graph; the embeddings both ways."""

    def __init__(self, in_feats=5, hidden=6):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_feats, hidden, activation=nn.PReLU(hidden), allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hidden, hidden, allow_zero_in_degree=True)

    def forward(self, g, features):
        h = self.conv1(g, features)
        h = self.conv2(g, h).squeeze(0)
        return h, torch.unsqueeze(h, 0).clone()


class FeaturesByNode(nn.Module):
    """Logits transposed, a column per node (`out.t()`), as code that scores classes by rows."""

    def __init__(self, in_feats=5, n_classes=3):
        super().__init__()
        self.conv = dglnn.SAGEConv(in_feats, n_classes, "mean")

    def forward(self, g, x):
        return F.log_softmax(self.conv(g, x), dim=-1).t()


class GramOfNodes(nn.Module):
    """`h.t() @ h`: features against features over all nodes, no row per node."""

    def __init__(self, in_feats=5, hidden=4):
        super().__init__()
        self.conv = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = self.conv(g, x)
        return h.t() @ h

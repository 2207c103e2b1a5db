"""Models whose forward passes no messages, written as people write MLP baselines next to their
GNNs (OGB's MLP on `forward(self, g, x)`, an MLP trained on sampled blocks that keeps the
destination rows, a bias per node sized by the graph's node count). For
tests/test_no_message_passing.py (issue 35)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class OGBStyleMLP(nn.Module):
    """Linear, BatchNorm, ReLU, dropout per hidden layer; the graph taken and not read."""

    def __init__(self, in_feats=8, hidden=16, n_classes=3, n_layers=3, dropout=0.5):
        super().__init__()
        dims = [in_feats] + [hidden] * (n_layers - 1) + [n_classes]
        self.lins = nn.ModuleList([nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])])
        self.bns = nn.ModuleList([nn.BatchNorm1d(hidden) for _ in range(n_layers - 1)])
        self.dropout = dropout

    def forward(self, g, x):
        for lin, bn in zip(self.lins[:-1], self.bns):
            x = F.dropout(F.relu(bn(lin(x))), p=self.dropout, training=self.training)
        return self.lins[-1](x).log_softmax(dim=-1)


class SampledBlocksMLP(nn.Module):
    """Trained on sampled blocks like its GNN siblings: the destination rows kept, then an MLP;
    returns the embedding and the logits."""

    def __init__(self, in_feats=8, hidden=16, n_classes=3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_feats, hidden), nn.ReLU(), nn.Dropout(0.2))
        self.classifier = nn.Linear(hidden, n_classes)

    def forward(self, blocks, x):
        h = x[: blocks[-1].num_dst_nodes()]
        z = self.encoder(h)
        return z, self.classifier(z)


class NodeCountBias(nn.Module):
    """Reads the graph only for its node count: a learnt bias broadcast over a row per node."""

    def __init__(self, in_feats=8, out_feats=4):
        super().__init__()
        self.out_feats = out_feats
        self.lin = nn.Linear(in_feats, out_feats)
        self.bias = nn.Parameter(torch.zeros(out_feats))

    def forward(self, graph, feat):
        base = torch.zeros(graph.num_nodes(), self.out_feats) + self.bias
        return torch.tanh(self.lin(feat)) + base

"""DAGNN (Liu et al., 2020) as DGL's examples/pytorch/dagnn trains it: an MLP predicts from each
node's features, then one module propagates the predictions k times (symmetric-normalised, by
in-degree) and gates the k + 1 results per node with a learned retention score. Each round is
one layer of the generated inference; the gate runs in the last, over the rounds it stored."""

import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLPLayer(nn.Module):
    def __init__(self, in_dim, out_dim, activation=None, dropout=0.0):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.activation = activation
        self.dropout = nn.Dropout(dropout)

    def forward(self, feats):
        h = self.linear(self.dropout(feats))
        return self.activation(h) if self.activation else h


class DAGNNConv(nn.Module):
    def __init__(self, in_dim, k):
        super().__init__()
        self.s = nn.Parameter(torch.empty(in_dim, 1))
        self.k = k
        nn.init.xavier_uniform_(self.s, gain=nn.init.calculate_gain("sigmoid"))

    def forward(self, graph, feats):
        with graph.local_scope():
            results = [feats]
            degs = graph.in_degrees().float()
            norm = torch.pow(degs, -0.5).to(feats.device).unsqueeze(1)
            for _ in range(self.k):
                feats = feats * norm
                graph.ndata["h"] = feats
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                feats = graph.ndata["h"] * norm
                results.append(feats)
            H = torch.stack(results, dim=1)  # (N, k + 1, d)
            S = torch.sigmoid(torch.matmul(H, self.s)).permute(0, 2, 1)  # (N, 1, k + 1)
            return torch.matmul(S, H).squeeze()


class DAGNN(nn.Module):
    def __init__(self, k, in_dim, hid_dim, out_dim, dropout=0.5):
        super().__init__()
        self.mlp = nn.ModuleList([
            MLPLayer(in_dim, hid_dim, activation=F.relu, dropout=dropout),
            MLPLayer(hid_dim, out_dim, dropout=dropout),
        ])
        self.dagnn = DAGNNConv(out_dim, k)

    def forward(self, graph, feats):
        for layer in self.mlp:
            feats = layer(feats)
        return self.dagnn(graph, feats)

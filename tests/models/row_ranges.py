"""Models that return the rows of a fixed range of nodes, as recommenders and target-node
models write it: users and items in one node set split by the model's counts, the first nodes of
a graph whose targets come first. For tests/test_row_ranges.py (issue 35, item 1)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class SplitUsersItems(nn.Module):
    """RecBole's LightGCN (recbole/model/general_recommender/lightgcn.py): weightless normalised
    propagation of the nodes' embeddings (users first, then items, in one table here), the
    layers' mean, `torch.split(all_embeddings, [self.n_users, self.n_items])`."""

    def __init__(self, n_users=30, n_items=20, dim=6, n_layers=2):
        super().__init__()
        self.n_users, self.n_items = n_users, n_items
        self.embedding = nn.Embedding(n_users + n_items, dim)
        self.convs = nn.ModuleList(
            [dglnn.GraphConv(dim, dim, weight=False, bias=False, allow_zero_in_degree=True) for _ in range(n_layers)])

    def forward(self, g):
        all_embeddings = self.embedding.weight
        embeddings_list = [all_embeddings]
        for conv in self.convs:
            all_embeddings = conv(g, all_embeddings)
            embeddings_list.append(all_embeddings)
        lightgcn_all_embeddings = torch.stack(embeddings_list, dim=1).mean(dim=1)
        user_all_embeddings, item_all_embeddings = torch.split(lightgcn_all_embeddings, [self.n_users, self.n_items])
        return user_all_embeddings, item_all_embeddings


class TargetsFirstSAGE(nn.Module):
    """A graph whose first `num_targets` nodes are the ones to classify (a paper's own nodes
    before the neighbours it cites): their logits only, `h.narrow(0, 0, self.num_targets)`."""

    def __init__(self, in_feats=5, hidden=8, n_classes=3, num_targets=40):
        super().__init__()
        self.num_targets = num_targets
        self.conv1 = dglnn.SAGEConv(in_feats, hidden, "mean")
        self.conv2 = dglnn.SAGEConv(hidden, n_classes, "mean")

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        return self.conv2(g, h).narrow(0, 0, self.num_targets)


class EmbeddingsAndLastRows(nn.Module):
    """Every node's embedding, and beside it the last `k` nodes' (`h[-self.k:, :]`), in a dict."""

    def __init__(self, in_feats=5, hidden=6, k=10):
        super().__init__()
        self.k = k
        self.conv = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = torch.tanh(self.conv(g, x))
        return {"all": h, "last": h[-self.k:, :]}


class UserItemScores(nn.Module):
    """The users' rows against the items': a score per pair mixes rows of different nodes."""

    def __init__(self, in_feats=5, hidden=6, n_users=12):
        super().__init__()
        self.n_users = n_users
        self.conv = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = self.conv(g, x)
        users, items = h[: self.n_users], h[self.n_users:]
        return users @ items.T

"""GCN as DGL's model zoo for the citation graphs writes it: the model keeps its graph
(`self.g = g`) and forward takes only the features; dropout between GraphConv layers."""

import argparse

import dgl
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import GraphConv


class GCN(nn.Module):
    def __init__(self, g, in_feats, n_hidden, n_classes, n_layers, activation=F.relu, dropout=0.5):
        super(GCN, self).__init__()
        self.g = g
        self.layers = nn.ModuleList()
        # input layer
        self.layers.append(GraphConv(in_feats, n_hidden, activation=activation))
        # hidden layers
        for i in range(n_layers - 1):
            self.layers.append(GraphConv(n_hidden, n_hidden, activation=activation))
        # output layer
        self.layers.append(GraphConv(n_hidden, n_classes))
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(self.g, h)
        return h


def main(args):
    from dgl.data import CoraGraphDataset

    data = CoraGraphDataset()
    g = dgl.add_self_loop(data[0])
    features, labels = g.ndata["feat"], g.ndata["label"]
    model = GCN(g, features.shape[1], args.n_hidden, data.num_classes, args.n_layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    train_mask = g.ndata["train_mask"]
    for epoch in range(200):
        model.train()
        loss = F.cross_entropy(model(features)[train_mask], labels[train_mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="GCN")
    parser.add_argument("--n-hidden", type=int, default=16)
    parser.add_argument("--n-layers", type=int, default=1)
    main(parser.parse_args())

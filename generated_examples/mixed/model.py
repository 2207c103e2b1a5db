"""A heterogeneous stack of convolutions on the full graph: a linear input encoder, SAGEConv,
GATConv (heads concatenated) and a symmetric-normalised GraphConv, then a two-layer MLP head."""

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class MixedGNN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_heads=2, dropout=0.25):
        super().__init__()
        self.encoder = nn.Linear(in_size, hid_size)
        self.sage = dglnn.SAGEConv(hid_size, hid_size, "mean")
        self.gat = dglnn.GATConv(
            hid_size, hid_size // num_heads, num_heads, allow_zero_in_degree=True
        )
        self.gcn = dglnn.GraphConv(hid_size, hid_size, norm="both", allow_zero_in_degree=True)
        self.head = nn.Sequential(
            nn.Linear(hid_size, hid_size),
            nn.ReLU(),
            nn.Linear(hid_size, out_size),
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, x):
        h = F.relu(self.encoder(x))
        h = self.dropout(h)
        h = F.relu(self.sage(g, h))
        h = self.gat(g, h).flatten(1)
        h = F.elu(h)
        h = self.dropout(h)
        h = F.relu(self.gcn(g, h))
        return self.head(h)


def train(g, model, epochs=50):
    features, labels = g.ndata["feat"], g.ndata["label"]
    mask = g.ndata["train_mask"]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        loss = F.cross_entropy(model(g, features)[mask], labels[mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % 10 == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    g = dgl.add_self_loop(dgl.rand_graph(500, 3000))
    g.ndata["feat"] = torch.randn(500, 12)
    g.ndata["label"] = torch.randint(0, 3, (500,))
    g.ndata["train_mask"] = torch.rand(500) < 0.5
    train(g, MixedGNN(12, 16, 3))

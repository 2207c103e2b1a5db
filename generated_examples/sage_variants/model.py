"""GraphSAGE with a different aggregator in every layer (gcn, pool, lstm, mean), trained on
sampled blocks and written with explicit (src, dst) feature pairs."""

import argparse

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F

AGGREGATORS = ("gcn", "pool", "lstm", "mean")


class SAGEVariants(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, dropout=0.2):
        super().__init__()
        sizes = [in_feats] + [n_hidden] * (len(AGGREGATORS) - 1) + [n_classes]
        self.layers = nn.ModuleList(
            dglnn.SAGEConv(sizes[i], sizes[i + 1], aggregator_type=agg)
            for i, agg in enumerate(AGGREGATORS)
        )
        self.dropout = nn.Dropout(dropout)
        self.activation = nn.ReLU()

    def forward(self, blocks, x):
        h = x
        for i in range(len(blocks)):
            block = blocks[i]
            h = self.layers[i](block, (h, h[: block.num_dst_nodes()]))
            if i != len(blocks) - 1:
                h = self.activation(h)
                h = self.dropout(h)
        return h


def train(g, train_nids, model, device, epochs=5):
    sampler = dgl.dataloading.MultiLayerNeighborSampler([5, 5, 5, 5])
    loader = dgl.dataloading.DataLoader(
        g, train_nids, sampler, batch_size=256, shuffle=True, drop_last=False
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(epochs):
        model.train()
        for step, (input_nodes, seeds, blocks) in enumerate(loader):
            blocks = [b.to(device) for b in blocks]
            batch_inputs = blocks[0].srcdata["features"]
            batch_labels = blocks[-1].dstdata["labels"]
            loss = F.cross_entropy(model(blocks, batch_inputs), batch_labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"Epoch {epoch} | Step {step} | Loss {loss.item():.4f}")


if __name__ == "__main__":
    argparser = argparse.ArgumentParser()
    argparser.add_argument("--num-hidden", type=int, default=16)
    args = argparser.parse_args()
    g = dgl.rand_graph(1000, 5000)
    g.ndata["features"] = torch.randn(1000, 8)
    g.ndata["labels"] = torch.randint(0, 3, (1000,))
    model = SAGEVariants(8, args.num_hidden, 3)
    train(g, torch.arange(100), model, "cpu")

"""GATv2 on sampled blocks, after DGL's examples/pytorch/gatv2: multi-head GATv2Conv layers whose
heads are concatenated between layers and averaged at the output."""

import argparse

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class GATv2(nn.Module):
    def __init__(self, in_feats, num_hidden, num_classes, heads=(4, 4, 2), feat_drop=0.1,
                 attn_drop=0.1, negative_slope=0.2, residual=True):
        super().__init__()
        self.num_layers = len(heads)
        self.activation = nn.LeakyReLU(negative_slope)
        self.layers = nn.ModuleList()
        self.layers.append(
            dglnn.GATv2Conv(in_feats, num_hidden, heads[0], feat_drop, attn_drop,
                            negative_slope, False, None, allow_zero_in_degree=True)
        )
        for l in range(1, self.num_layers - 1):
            self.layers.append(
                dglnn.GATv2Conv(num_hidden * heads[l - 1], num_hidden, heads[l], feat_drop,
                                attn_drop, negative_slope, residual, None,
                                allow_zero_in_degree=True)
            )
        self.layers.append(
            dglnn.GATv2Conv(num_hidden * heads[-2], num_classes, heads[-1], feat_drop, attn_drop,
                            negative_slope, residual, None, allow_zero_in_degree=True,
                            share_weights=True)
        )

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers[:-1], blocks[:-1])):
            h = layer(block, h)
            h = self.activation(h.flatten(1))  # concatenate the heads
        # output projection: average over heads
        h = self.layers[-1](blocks[-1], h)
        return h.mean(1)


def train(g, model, epochs=10):
    sampler = dgl.dataloading.NeighborSampler([10, 10, 10])
    idx = torch.arange(g.num_nodes())
    loader = dgl.dataloading.DataLoader(g, idx, sampler, batch_size=1024, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        for _, _, blocks in loader:
            logits = model(blocks, blocks[0].srcdata["feat"])
            loss = F.cross_entropy(logits, blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="GATv2")
    parser.add_argument("--num-hidden", type=int, default=8)
    args = parser.parse_args()
    g = dgl.rand_graph(1000, 5000)
    g.ndata["feat"] = torch.randn(1000, 16)
    g.ndata["label"] = torch.randint(0, 5, (1000,))
    train(g, GATv2(16, args.num_hidden, 5))

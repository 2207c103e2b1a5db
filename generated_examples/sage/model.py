"""GraphSAGE as DGL's examples/pytorch/graphsage/node_classification.py writes it: trained on
sampled blocks, one SAGEConv per block."""

import argparse

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class SAGE(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList()
        # three-layer GraphSAGE-mean
        self.layers.append(dglnn.SAGEConv(in_size, hid_size, "mean"))
        self.layers.append(dglnn.SAGEConv(hid_size, hid_size, "mean"))
        self.layers.append(dglnn.SAGEConv(hid_size, out_size, "mean"))
        self.dropout = nn.Dropout(0.5)
        self.hid_size = hid_size
        self.out_size = out_size

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = F.relu(h)
                h = self.dropout(h)
        return h


def train(args, device, g, dataset, model):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=5e-4)
    sampler = dgl.dataloading.NeighborSampler([10, 10, 10])
    train_idx = dataset.train_idx.to(device)
    loader = dgl.dataloading.DataLoader(g, train_idx, sampler, batch_size=1024, shuffle=True)
    for epoch in range(10):
        model.train()
        for input_nodes, output_nodes, blocks in loader:
            x = blocks[0].srcdata["feat"]
            y = blocks[-1].dstdata["label"]
            loss = F.cross_entropy(model(blocks, x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="cpu")
    args = parser.parse_args()
    print("Training...")

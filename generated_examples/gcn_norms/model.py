"""A sampled-block GCN that mixes GraphConv normalisations: 'left' (mean over in-neighbours after
dividing by source out-degrees), 'right' (divide by destination in-degree) and 'none' (plain sum),
with LayerNorm and a Linear projection between the convolutions."""

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class MixedNormGCN(nn.Module):
    def __init__(self, in_feats, hidden, n_classes, norms=("left", "right", "none")):
        super().__init__()
        dims = [in_feats] + [hidden] * (len(norms) - 1) + [n_classes]
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.projs = nn.ModuleList()
        for i, norm in enumerate(norms):
            self.convs.append(
                dglnn.GraphConv(dims[i], dims[i + 1], norm=norm, allow_zero_in_degree=True)
            )
            if i < len(norms) - 1:
                self.norms.append(nn.LayerNorm(dims[i + 1]))
                self.projs.append(nn.Linear(dims[i + 1], dims[i + 1]))

    def forward(self, blocks, x):
        h = x
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            h_dst = h[: block.number_of_dst_nodes()]
            h = conv(block, (h, h_dst))
            if i < len(self.convs) - 1:
                h = self.norms[i](h)
                h = F.relu(h)
                h = self.projs[i](h)
        return h


def train(g, model, device, fanouts=(10, 10, 10), epochs=3):
    sampler = dgl.dataloading.NeighborSampler(list(fanouts))
    train_nids = torch.nonzero(g.ndata["train_mask"], as_tuple=True)[0]
    loader = dgl.dataloading.DataLoader(g, train_nids, sampler, batch_size=512, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        model.train()
        for _, _, blocks in loader:
            blocks = [b.to(device) for b in blocks]
            logits = model(blocks, blocks[0].srcdata["feat"])
            loss = F.cross_entropy(logits, blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    g = dgl.rand_graph(2000, 10000)
    g.ndata["feat"] = torch.randn(2000, 16)
    g.ndata["label"] = torch.randint(0, 4, (2000,))
    g.ndata["train_mask"] = torch.rand(2000) < 0.3
    train(g, MixedNormGCN(16, 32, 4), "cpu")

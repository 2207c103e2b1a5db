"""A relational GAT for node classification on a graph shaped like ogbn-mag, written the way
DGL's rgat example writes it for sampled training: forward takes a list of blocks, each layer is
a HeteroGraphConv with a GATConv of several heads per relation, the heads are concatenated with
`view` and `dgl.apply_each`, and a Linear classifies papers."""

import dgl
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class RGAT(nn.Module):
    def __init__(self, etypes, in_size, hid_size, out_size, n_heads=4):
        super().__init__()
        self.layers = nn.ModuleList()
        for i in range(3):
            self.layers.append(
                dglnn.HeteroGraphConv(
                    {
                        etype: dglnn.GATConv(
                            in_size if i == 0 else hid_size, hid_size // n_heads, n_heads
                        )
                        for etype in etypes
                    }
                )
            )
        self.dropout = nn.Dropout(0.5)
        self.linear = nn.Linear(hid_size, out_size)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            # the heads side by side; a type may have no destination nodes in a block
            h = dgl.apply_each(h, lambda t: t.view(t.shape[0], t.shape[1] * t.shape[2]))
            if i != len(self.layers) - 1:
                h = dgl.apply_each(h, F.relu)
                h = dgl.apply_each(h, self.dropout)
        return self.linear(h["paper"])

"""Models whose loops over their layers carry a value forward names (render/carried_names.py)."""

import dgl.nn as dglnn
import torch.nn as nn


class InputReadAfterLoop(nn.Module):
    """forward's loop carries `h`, and forward's input, also `h`, is read after the loop: the
    method's `h` stays the input's, and the loop keeps the name it had (`feat`)."""

    def __init__(self, size=8):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.GraphConv(size, size) for _ in range(3)])

    def forward(self, g, h):
        h0 = h
        for layer in self.layers:
            h = layer(g, h)
        return h + h0

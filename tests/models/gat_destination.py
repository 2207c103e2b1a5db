"""GATConvs given destination rows of their own, as users write them: `conv(g, (h, h_dst))`
with h_dst another tensor than h (a projection of the same nodes), with and without a residual;
their attention reads h_dst only for its destination term (issue 40)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn


class GATOfTwoInputs(nn.Module):
    """The first layer attends from x to a projection of x, residual from the projection."""

    def __init__(self, in_size=8, hid_size=4, heads=4, out_size=3):
        super().__init__()
        self.proj = nn.Linear(in_size, in_size)
        self.gat1 = dglnn.GATConv(in_size, hid_size, heads, residual=True, allow_zero_in_degree=True)
        self.gat2 = dglnn.GATConv(hid_size * heads, out_size, 1, allow_zero_in_degree=True)

    def forward(self, g, x):
        h = self.gat1(g, (x, torch.relu(self.proj(x)))).flatten(1)
        return self.gat2(g, h).mean(1)


class GATOfTwoInputsOneHead(nn.Module):
    """One head, no residual: the destination rows read by the attention alone."""

    def __init__(self, in_size=8, out_size=5):
        super().__init__()
        self.proj = nn.Linear(in_size, in_size)
        self.gat = dglnn.GATConv(in_size, out_size, 1, allow_zero_in_degree=True)

    def forward(self, g, x):
        return self.gat(g, (x, self.proj(x))).squeeze(1)

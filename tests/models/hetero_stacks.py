"""Stacks of heterogeneous layers that forward runs from one line of its loop, for the loop the
generated inference writes over them (render/hetero_loops.py, tests/test_hetero_loops.py): a
RelGraphConvLayer-style stack whose last layer has no activation, a HeteroGraphConv of GATConv
whose heads are flattened, and the same layers written out one by one or not alike, which stay
apart. Our own code, small widths."""

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class RelLayer(nn.Module):
    """DGL's rgcn-hetero layer, short: a weight per relation through mod_kwargs, a self-loop,
    a bias and an activation where it has one."""

    def __init__(self, in_feat, out_feat, rel_names, activation=None):
        super().__init__()
        self.rel_names = rel_names
        self.activation = activation
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False) for rel in rel_names})
        self.weight = nn.Parameter(torch.randn(len(rel_names), in_feat, out_feat) * 0.3)
        self.loop_weight = nn.Parameter(torch.randn(in_feat, out_feat) * 0.3)
        self.h_bias = nn.Parameter(torch.randn(out_feat) * 0.1)

    def forward(self, g, inputs):
        weights = torch.split(self.weight, 1, dim=0)
        wdict = {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.rel_names, weights)}
        hs = self.conv(g, inputs, mod_kwargs=wdict)

        def _apply(ntype, h):
            h = h + torch.matmul(inputs[ntype], self.loop_weight)
            h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return h

        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class RelStack(nn.Module):
    """num_layers RelLayers, ReLU in every one but the last, in one loop."""

    def __init__(self, rel_names, in_feat=6, hidden=8, out_feat=5, num_layers=3):
        super().__init__()
        widths = [in_feat] + [hidden] * (num_layers - 1) + [out_feat]
        self.layers = nn.ModuleList(
            RelLayer(widths[i], widths[i + 1], rel_names, activation=F.relu if i < num_layers - 1 else None)
            for i in range(num_layers))

    def forward(self, g, inputs):
        h = inputs
        for layer in self.layers:
            h = layer(g, h)
        return h


class RelWrittenOut(RelStack):
    """Two RelLayers alike, each on a line of its own: not a loop of the user's."""

    def __init__(self, rel_names):
        super().__init__(rel_names, in_feat=6, hidden=6, out_feat=6, num_layers=2)
        self.layers[1].activation = F.relu

    def forward(self, g, inputs):
        h = self.layers[0](g, inputs)
        h = self.layers[1](g, h)
        return h


class GATStack(nn.Module):
    """num_layers HeteroGraphConvs of GATConv, each relation's heads side by side (flatten),
    ReLU between the layers, every type's rows returned: one loop, as DGL's rgat example."""

    def __init__(self, rel_names, in_feat=6, hidden=8, heads=2, num_layers=4, middle=None):
        super().__init__()
        self.middle = middle  # a layer forward treats otherwise (the stack that is not alike)
        self.layers = nn.ModuleList(
            dglnn.HeteroGraphConv({rel: dglnn.GATConv(in_feat if i == 0 else hidden, hidden // heads, heads)
                                   for rel in rel_names})
            for i in range(num_layers))

    def forward(self, g, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            h = dgl.apply_each(h, lambda t: t.flatten(1))
            if i != len(self.layers) - 1:
                h = dgl.apply_each(h, F.relu)
            if i == self.middle:
                h = dgl.apply_each(h, torch.tanh)
        return h


class SelfLoopRelLayer(RelLayer):
    """RelLayer with DGL's rgcn-hetero `self_loop` setting: the self-loop term only under
    `if self.self_loop:`, as its forward tests it."""

    def __init__(self, in_feat, out_feat, rel_names, activation=None, self_loop=True):
        super().__init__(in_feat, out_feat, rel_names, activation)
        self.self_loop = self_loop

    def forward(self, g, inputs):
        weights = torch.split(self.weight, 1, dim=0)
        wdict = {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.rel_names, weights)}
        hs = self.conv(g, inputs, mod_kwargs=wdict)

        def _apply(ntype, h):
            if self.self_loop:
                h = h + torch.matmul(inputs[ntype], self.loop_weight)
            h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return h

        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class SelfLoopRelStack(RelStack):
    """RelStack of SelfLoopRelLayers, each with its self-loop."""

    def __init__(self, rel_names, num_layers=3):
        super().__init__(rel_names, num_layers=num_layers)
        self.layers = nn.ModuleList(
            SelfLoopRelLayer(layer.loop_weight.shape[0], layer.loop_weight.shape[1], rel_names, layer.activation)
            for layer in self.layers)


class RelWrittenOutToUsers(RelWrittenOut):
    """As RelWrittenOut, forward returning the users' rows alone: its last layer computes one type
    of the two its relations go into."""

    def forward(self, g, inputs):
        h = self.layers[0](g, inputs)
        return self.layers[1](g, h)["user"]

"""Relational layers that add terms of their destination rows to a HeteroGraphConv's sum, in
the ways people write DGL's rgcn-hetero self-loop: the product first or second, with or
without a bias, torch.mm or @, a bias of another shape, the self-loop read again. Our own
code, small widths (tests/test_added_terms.py)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class Relational(nn.Module):
    """GraphConv(norm="right", weight=False) per relation, each relation's weight a mix of two
    bases given through mod_kwargs; what forward adds to the sum is the subclass's."""

    def __init__(self, in_feat, out_feat, rel_names, bias_shape=None):
        super().__init__()
        self.rel_names = rel_names
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False) for rel in rel_names})
        self.bases = nn.Parameter(torch.randn(2, in_feat, out_feat) * 0.3)
        self.coefficients = nn.Parameter(torch.randn(len(rel_names), 2))
        self.loop_weight = nn.Parameter(torch.randn(in_feat, out_feat) * 0.3)
        self.h_bias = nn.Parameter(torch.randn(*(bias_shape or (out_feat,))) * 0.1)

    def relations(self, g, inputs):
        weight = torch.einsum("rb,bio->rio", self.coefficients, self.bases)
        wdict = {rel: {"weight": weight[i]} for i, rel in enumerate(self.rel_names)}
        return self.conv(g, inputs, mod_kwargs=wdict)


class LoopFirst(Relational):
    def forward(self, g, inputs):
        hs = self.relations(g, inputs)
        return {t: F.relu(inputs[t] @ self.loop_weight + h + self.h_bias) for t, h in hs.items()}


class LoopWithoutBias(Relational):
    def forward(self, g, inputs):
        hs = self.relations(g, inputs)
        return {t: torch.tanh(h + torch.mm(inputs[t], self.loop_weight)) for t, h in hs.items()}


class BiasOfAnotherShape(Relational):
    """A bias of shape (1, out): broadcast by forward's addition, not the product's."""

    def __init__(self, in_feat, out_feat, rel_names):
        super().__init__(in_feat, out_feat, rel_names, bias_shape=(1, out_feat))

    def forward(self, g, inputs):
        hs = self.relations(g, inputs)
        out = {}
        for t, h in hs.items():
            h = h + torch.matmul(inputs[t], self.loop_weight)
            out[t] = h + self.h_bias
        return out


class LoopReadAgain(Relational):
    """The self-loop's rows read again after the sum: added as forward adds them."""

    def forward(self, g, inputs):
        hs = self.relations(g, inputs)
        out = {}
        for t, h in hs.items():
            loop = torch.matmul(inputs[t], self.loop_weight)
            out[t] = (h + loop + self.h_bias) * torch.sigmoid(loop)
        return out


class TwoLayers(nn.Module):
    """Two of rgcn-hetero's layers: a self-loop and a bias after each sum, ReLU between."""

    def __init__(self, size, out_size, rel_names):
        super().__init__()
        self.first = LoopFirst(size, size, rel_names)
        self.second = BiasOfAnotherShape(size, out_size, rel_names)

    def forward(self, g, x):
        return self.second(g, self.first(g, x))


class FromEmbeddings(nn.Module):
    """rgcn-hetero's EntityClassify: each type starts from a learnt embedding, so the first
    layer's self-loop reads the model's weights alone (the embedding times loop_weight)."""

    def __init__(self, size, out_size, rel_names, num_nodes=None):
        super().__init__()
        num_nodes = num_nodes or {"user": 30, "game": 20}
        self.embeds = nn.ParameterDict({t: nn.Parameter(torch.randn(n, size)) for t, n in num_nodes.items()})
        self.first = LoopFirst(size, size, rel_names)
        self.second = BiasOfAnotherShape(size, out_size, rel_names)

    def forward(self, g):
        h = {t: embed for t, embed in self.embeds.items()}
        return self.second(g, self.first(g, h))


class LayerList(nn.Module):
    """rgcn-hetero's stack as a ModuleList: each layer mixes its relations' weights from its
    bases in its forward (an einsum, then a dict per relation), the same line in every layer."""

    def __init__(self, size, out_size, rel_names, num_layers=3):
        super().__init__()
        self.layers = nn.ModuleList(LoopFirst(size, size, rel_names) for _ in range(num_layers - 1))
        self.layers.append(LoopWithoutBias(size, out_size, rel_names))

    def forward(self, g, x):
        for layer in self.layers:
            x = layer(g, x)
        return x

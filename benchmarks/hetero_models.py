"""Heterogeneous models for benchmarks/hetero.py, on a graph shaped like ogbn-mag: papers with
features; authors, institutions and fields of study without, each from a learnt embedding (as
DGL's ogbn-mag examples do). Written as those examples write them."""

import dgl
from dgl.utils import recursive_apply  # dgl.recursive_apply in DGL 2
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class Embeddings(nn.Module):
    """A learnt row per node of each featureless type."""

    def __init__(self, num_nodes, size):
        super().__init__()
        self.embeds = nn.ParameterDict(
            {ntype: nn.Parameter(torch.randn(n, size) * 0.1) for ntype, n in num_nodes.items()}
        )


class RGCN(Embeddings):
    """Two layers of HeteroGraphConv over GraphConv (its default norm, "both"), summed over
    the relations into each type, ReLU between; classifies papers."""

    def __init__(self, num_nodes, rel_names, in_size=128, hid_size=64, out_size=349):
        super().__init__(num_nodes, in_size)
        self.conv1 = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(in_size, hid_size) for rel in rel_names})
        self.conv2 = dglnn.HeteroGraphConv({rel: dglnn.GraphConv(hid_size, out_size) for rel in rel_names})

    def forward(self, g, x):
        h = dict(x)
        h.update({ntype: embed for ntype, embed in self.embeds.items()})
        h = self.conv1(g, h)
        h = {ntype: F.relu(v) for ntype, v in h.items()}
        return self.conv2(g, h)["paper"]


class RGAT(Embeddings):
    """Three layers of HeteroGraphConv over GATConv with 4 heads, flattened, with ELU between,
    and a Linear classifier of papers."""

    def __init__(self, num_nodes, rel_names, in_size=128, hid_size=64, out_size=349, n_heads=4):
        super().__init__(num_nodes, in_size)
        self.layers = nn.ModuleList()
        for i in range(3):
            size = in_size if i == 0 else hid_size
            self.layers.append(
                dglnn.HeteroGraphConv(
                    {rel: dglnn.GATConv(size, hid_size // n_heads, n_heads) for rel in rel_names}
                )
            )
        self.linear = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = dict(x)
        h.update({ntype: embed for ntype, embed in self.embeds.items()})
        for layer in self.layers:
            h = layer(g, h)
            h = {ntype: F.elu(v.flatten(1)) for ntype, v in h.items()}
        return self.linear(h["paper"])


class RelGraphConvLayer(nn.Module):
    """A relational layer as DGL's rgcn-hetero example writes it: GraphConv(norm="right",
    weight=False) per relation, each relation's weight handed to it through mod_kwargs (a
    basis decomposition where there are fewer bases than relations), then a self-loop, a bias
    and the activation per node type."""

    def __init__(self, in_feat, out_feat, rel_names, num_bases, *, weight=True, bias=True,
                 activation=None, self_loop=False, dropout=0.0):
        super().__init__()
        self.rel_names = rel_names
        self.activation = activation
        self.self_loop = self_loop
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False) for rel in rel_names}
        )
        self.use_weight = weight
        self.use_basis = num_bases < len(rel_names) and weight
        if self.use_weight:
            if self.use_basis:  # each relation's weight: a mix of num_bases shared matrices
                self.bases = nn.Parameter(torch.empty(num_bases, in_feat * out_feat))
                self.coefficients = nn.Parameter(torch.empty(len(rel_names), num_bases))
                nn.init.xavier_uniform_(self.bases, gain=nn.init.calculate_gain("relu"))
                nn.init.xavier_uniform_(self.coefficients)
            else:
                self.weight = nn.Parameter(torch.empty(len(rel_names), in_feat, out_feat))
                nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.shape = (in_feat, out_feat)
        self.h_bias = nn.Parameter(torch.zeros(out_feat)) if bias else None
        if self_loop:
            self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, inputs):
        g = g.local_var()
        if self.use_weight:
            if self.use_basis:
                weight = torch.matmul(self.coefficients, self.bases).view(-1, *self.shape)
            else:
                weight = self.weight
            wdict = {self.rel_names[i]: {"weight": w.squeeze(0)} for i, w in enumerate(torch.split(weight, 1, dim=0))}
        else:
            wdict = {}
        if g.is_block:
            inputs_dst = {k: v[: g.number_of_dst_nodes(k)] for k, v in inputs.items()}
        else:
            inputs_dst = inputs
        hs = self.conv(g, inputs, mod_kwargs=wdict)

        def _apply(ntype, h):
            if self.self_loop:
                h = h + torch.matmul(inputs_dst[ntype], self.loop_weight)
            if self.h_bias is not None:
                h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return self.dropout(h)

        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class ENTITY(nn.Module):
    """DGL's rgcn-hetero EntityClassify: a learnt embedding per node of every type, an input
    layer without weights (the mean over each relation's in-neighbours, summed), hidden layers
    and an output layer with basis-decomposed weights per relation; self-loops throughout."""

    def __init__(self, num_nodes, rel_names, h_dim=64, out_dim=349, num_bases=2, num_hidden_layers=1):
        super().__init__()
        self.embeds = nn.ParameterDict()
        for ntype, n in num_nodes.items():
            embed = nn.Parameter(torch.empty(n, h_dim))
            nn.init.xavier_uniform_(embed, gain=nn.init.calculate_gain("relu"))
            self.embeds[ntype] = embed
        self.layers = nn.ModuleList()
        self.layers.append(RelGraphConvLayer(h_dim, h_dim, rel_names, num_bases, activation=F.relu,
                                             self_loop=True, weight=False))
        for _ in range(num_hidden_layers):
            self.layers.append(RelGraphConvLayer(h_dim, h_dim, rel_names, num_bases, activation=F.relu,
                                                 self_loop=True))
        self.layers.append(RelGraphConvLayer(h_dim, out_dim, rel_names, num_bases, self_loop=True))

    def forward(self, g):
        h = {ntype: embed for ntype, embed in self.embeds.items()}
        for layer in self.layers:
            h = layer(g, h)
        return h


class HETEROGAT(nn.Module):
    """DGL's rgat example (ogbn-mag): three HeteroGraphConv layers of GATConv with 4 heads on
    blocks, the heads merged with a view over each type's rows (dgl.recursive_apply), ReLU and
    dropout between, a Linear classifier of papers. Paper features only at the input: the
    featureless types come from learnt embeddings here (the example averages paper features
    into them before training)."""

    def __init__(self, num_nodes, rel_names, in_size=128, hid_size=64, out_size=349, n_heads=4):
        super().__init__()
        self.embeds = nn.ParameterDict(
            {ntype: nn.Parameter(torch.randn(n, in_size) * 0.1) for ntype, n in num_nodes.items()}
        )
        self.layers = nn.ModuleList()
        for i in range(3):
            size = in_size if i == 0 else hid_size
            self.layers.append(
                dglnn.HeteroGraphConv({rel: dglnn.GATConv(size, hid_size // n_heads, n_heads) for rel in rel_names})
            )
        self.dropout = nn.Dropout(0.5)
        self.linear = nn.Linear(hid_size, out_size)

    def forward(self, blocks, x):
        h = dict(x)
        h.update({ntype: embed for ntype, embed in self.embeds.items()})
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            h = recursive_apply(h, lambda v: v.view(v.shape[0], v.shape[1] * v.shape[2]))
            if i != len(self.layers) - 1:
                h = recursive_apply(h, F.relu)
                h = recursive_apply(h, self.dropout)
        return self.linear(h["paper"])


class RELGRAPH(nn.Module):
    """DGL's rgcn example (entity.py): RelGraphConv with basis weights on the homogeneous graph
    that dgl.to_homogeneous makes of the heterograph, each edge's type in g.edata[dgl.ETYPE] and
    its norm (1 / in-degree per relation) in g.edata["norm"]; featureless, from an embedding of
    every node."""

    def __init__(self, num_nodes, num_rels, h_dim=64, out_dim=349, num_bases=2):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, h_dim)
        self.conv1 = dglnn.RelGraphConv(h_dim, h_dim, num_rels, regularizer="basis", num_bases=num_bases,
                                        self_loop=False)
        self.conv2 = dglnn.RelGraphConv(h_dim, out_dim, num_rels, regularizer="basis", num_bases=num_bases,
                                        self_loop=False)

    def forward(self, g):
        x = self.emb.weight
        h = F.relu(self.conv1(g, x, g.edata[dgl.ETYPE], g.edata["norm"]))
        return self.conv2(g, h, g.edata[dgl.ETYPE], g.edata["norm"])

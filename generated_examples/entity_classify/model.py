"""Entity classification with a relational GCN, in the style of DGL's rgcn-hetero example:
every node type starts from a learnt embedding, and each layer is a user-written relational
layer over HeteroGraphConv, with one weight per relation handed to GraphConv(weight=False),
then a self-loop, a bias and an activation per node type."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class RelGraphConvLayer(nn.Module):
    def __init__(
        self,
        in_feat,
        out_feat,
        rel_names,
        *,
        activation=None,
        self_loop=False,
        dropout=0.0,
    ):
        super().__init__()
        self.rel_names = rel_names
        self.activation = activation
        self.self_loop = self_loop
        self.conv = dglnn.HeteroGraphConv(
            {
                rel: dglnn.GraphConv(
                    in_feat, out_feat, norm="right", weight=False, bias=False
                )
                for rel in rel_names
            }
        )
        self.weight = nn.Parameter(torch.empty(len(rel_names), in_feat, out_feat))
        nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.h_bias = nn.Parameter(torch.zeros(out_feat))
        if self_loop:
            self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
            nn.init.xavier_uniform_(
                self.loop_weight, gain=nn.init.calculate_gain("relu")
            )
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, inputs):
        g = g.local_var()
        weights = torch.split(self.weight, 1, dim=0)
        wdict = {
            rel: {"weight": w.squeeze(0)} for rel, w in zip(self.rel_names, weights)
        }
        hs = self.conv(g, inputs, mod_kwargs=wdict)

        def _apply(ntype, h):
            if self.self_loop:
                h = h + torch.matmul(inputs[ntype], self.loop_weight)
            h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return self.dropout(h)

        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class EntityClassify(nn.Module):
    def __init__(
        self, num_nodes, h_dim, out_dim, rel_names, num_hidden_layers=1, dropout=0.0
    ):
        super().__init__()
        # num_nodes: {node type: number of nodes}, for the embeddings the layers start from
        self.embeds = nn.ParameterDict()
        for ntype, n in num_nodes.items():
            embed = nn.Parameter(torch.empty(n, h_dim))
            nn.init.xavier_uniform_(embed, gain=nn.init.calculate_gain("relu"))
            self.embeds[ntype] = embed
        self.layers = nn.ModuleList()
        for _ in range(num_hidden_layers + 1):
            self.layers.append(
                RelGraphConvLayer(
                    h_dim,
                    h_dim,
                    rel_names,
                    activation=F.relu,
                    self_loop=True,
                    dropout=dropout,
                )
            )
        self.layers.append(RelGraphConvLayer(h_dim, out_dim, rel_names, self_loop=True))

    def forward(self, g):
        h = {ntype: embed for ntype, embed in self.embeds.items()}
        for layer in self.layers:
            h = layer(g, h)
        return h

"""GNN-FiLM (Brockschmidt, "GNN-FiLM: Graph Neural Networks with Feature-wise Linear Modulation",
ICML 2020) in the style of DGL's examples/pytorch/GNN-FiLM: a layer of the user's own that loops
over the graph's relations, lets each destination node modulate the messages it receives (a
hypernetwork gives it a scale and a shift per relation), and sums them with multi_update_all.
forward reads the input features from the graph and takes the node type to predict."""

import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F


class FiLMLayer(nn.Module):
    def __init__(self, in_size, out_size, etypes, dropout=0.1):
        super().__init__()
        self.out_size = out_size
        # a message transform and a hypernetwork (scale, shift) per edge type
        self.W = nn.ModuleDict({etype: nn.Linear(in_size, out_size, bias=False) for etype in etypes})
        self.film = nn.ModuleDict({etype: nn.Linear(in_size, 2 * out_size, bias=False) for etype in etypes})
        self.layernorm = nn.LayerNorm(out_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, feat_dict):
        with g.local_scope():
            funcs = {}
            for srctype, etype, dsttype in g.canonical_etypes:
                rel = g[srctype, etype, dsttype]
                gamma, beta = self.film[etype](feat_dict[dsttype]).split(self.out_size, dim=1)
                rel.srcdata["Wh"] = self.W[etype](feat_dict[srctype])
                rel.dstdata["gamma"], rel.dstdata["beta"] = gamma, beta
                # the message from u to v: relu(gamma_v * W h_u + beta_v)
                rel.apply_edges(fn.u_mul_v("Wh", "gamma", "m"))
                rel.apply_edges(fn.e_add_v("m", "beta", "m"))
                rel.edata[etype] = F.relu(rel.edata.pop("m"))
                funcs[etype] = (fn.copy_e(etype, "m"), fn.sum("m", "h"))
            g.multi_update_all(funcs, "sum")
            return {
                ntype: self.dropout(self.layernorm(g.nodes[ntype].data["h"]))
                for ntype in g.ntypes
            }


class GNNFiLM(nn.Module):
    def __init__(self, etypes, in_size, hidden_size, out_size, num_layers, dropout=0.1):
        super().__init__()
        self.film_layers = nn.ModuleList([FiLMLayer(in_size, hidden_size, etypes, dropout)])
        for _ in range(num_layers - 1):
            self.film_layers.append(FiLMLayer(hidden_size, hidden_size, etypes, dropout))
        self.predict = nn.Linear(hidden_size, out_size)

    def forward(self, g, out_key):
        h_dict = {ntype: g.nodes[ntype].data["feat"] for ntype in g.ntypes}
        for layer in self.film_layers:
            h_dict = layer(g, h_dict)
        return torch.sigmoid(self.predict(h_dict[out_key]))

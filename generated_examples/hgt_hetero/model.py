"""HGT (Hu et al., "Heterogeneous Graph Transformer", WWW 2020) written by hand on the
heterograph, in the style of DGL's examples/pytorch/hgt: per relation, keys and values from the
source type and queries from the destination type, each relation's own attention and message
matrices and prior per head, an edge softmax over each destination's in-edges of the relation
(`G[srctype, etype, dsttype]`, `apply_edges`, `edge_softmax`), the relations averaged into each
type by `multi_update_all`, then a gated skip connection and a LayerNorm per type. As in DGL's
example, forward reads each type's input features from the graph (`G.nodes[ntype].data["inp"]`)
and takes the type to predict (out_key, given to gnn-codegen with --forward-args)."""

import math

import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.functional import edge_softmax


class HGTLayer(nn.Module):
    def __init__(self, in_dim, out_dim, node_dict, edge_dict, num_heads, dropout=0.2, use_norm=True):
        super().__init__()
        self.out_dim, self.num_heads = out_dim, num_heads
        self.node_dict, self.edge_dict = node_dict, edge_dict
        self.head_dim = out_dim // num_heads
        self.scale = math.sqrt(self.head_dim)
        types, relations = len(node_dict), len(edge_dict)
        self.keys = nn.ModuleList(nn.Linear(in_dim, out_dim) for _ in range(types))
        self.queries = nn.ModuleList(nn.Linear(in_dim, out_dim) for _ in range(types))
        self.values = nn.ModuleList(nn.Linear(in_dim, out_dim) for _ in range(types))
        self.outputs = nn.ModuleList(nn.Linear(out_dim, out_dim) for _ in range(types))
        self.norms = nn.ModuleList(nn.LayerNorm(out_dim) for _ in range(types)) if use_norm else None
        self.relation_prior = nn.Parameter(torch.ones(relations, num_heads))
        shape = (relations, num_heads, self.head_dim, self.head_dim)
        self.relation_attention = nn.Parameter(torch.randn(shape) / self.scale)
        self.relation_message = nn.Parameter(torch.randn(shape) / self.scale)
        self.skip = nn.Parameter(torch.ones(types))
        self.dropout = nn.Dropout(dropout)

    def forward(self, G, h):
        with G.local_scope():
            for srctype, etype, dsttype in G.canonical_etypes:
                rel = G[srctype, etype, dsttype]
                src_id, dst_id, e_id = self.node_dict[srctype], self.node_dict[dsttype], self.edge_dict[etype]
                k = self.keys[src_id](h[srctype]).view(-1, self.num_heads, self.head_dim)
                v = self.values[src_id](h[srctype]).view(-1, self.num_heads, self.head_dim)
                q = self.queries[dst_id](h[dsttype]).view(-1, self.num_heads, self.head_dim)
                rel.srcdata["k"] = torch.einsum("bij,ijk->bik", k, self.relation_attention[e_id])
                rel.srcdata[f"v_{e_id}"] = torch.einsum("bij,ijk->bik", v, self.relation_message[e_id])
                rel.dstdata["q"] = q
                rel.apply_edges(fn.v_dot_u("q", "k", "score"))
                score = rel.edata.pop("score").sum(-1) * self.relation_prior[e_id] / self.scale
                rel.edata["a"] = edge_softmax(rel, score, norm_by="dst").unsqueeze(-1)
            G.multi_update_all(
                {etype: (fn.u_mul_e(f"v_{e_id}", "a", "m"), fn.sum("m", "t"))
                 for etype, e_id in self.edge_dict.items()},
                cross_reducer="mean",
            )
            out = {}
            for ntype in G.ntypes:
                n_id = self.node_dict[ntype]
                gate = torch.sigmoid(self.skip[n_id])
                t = G.nodes[ntype].data["t"].view(-1, self.out_dim)
                mixed = self.dropout(self.outputs[n_id](t)) * gate + h[ntype] * (1 - gate)
                out[ntype] = self.norms[n_id](mixed) if self.norms is not None else mixed
            return out


class HGT(nn.Module):
    def __init__(self, node_dict, edge_dict, in_dim, hidden_dim, out_dim, num_layers=2, num_heads=4):
        super().__init__()
        self.node_dict = node_dict
        self.adapt = nn.ModuleList(nn.Linear(in_dim, hidden_dim) for _ in node_dict)
        self.layers = nn.ModuleList(
            HGTLayer(hidden_dim, hidden_dim, node_dict, edge_dict, num_heads) for _ in range(num_layers)
        )
        self.out = nn.Linear(hidden_dim, out_dim)

    def forward(self, G, out_key):
        h = {}
        for ntype in G.ntypes:
            n_id = self.node_dict[ntype]
            h[ntype] = F.gelu(self.adapt[n_id](G.nodes[ntype].data["inp"]))
        for layer in self.layers:
            h = layer(G, h)
        return self.out(h[out_key])

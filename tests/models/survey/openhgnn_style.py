"""Heterogeneous models in the style of OpenHGNN (BUPT-GAMMA/OpenHGNN, openhgnn/models/*.py and
openhgnn/layers/MetapathConv.py): one `forward(self, hg, h_dict)` that tells a graph from a list of
blocks with `hasattr(hg, 'ntypes')`, metapath graphs cached on the layer, `dgl.to_homogeneous` and
back by `torch.where` on the node types, relation weights through `mod_kwargs`, dict
comprehensions over whatever types the input holds. Our own code, small widths."""

import dgl
import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import TypedLinear
from dgl.ops import edge_softmax


def to_hetero_feat(h, type, name):
    """OpenHGNN's helper: the rows of each node type of a homogeneous result, by type ID."""
    h_dict = {}
    for index, ntype in enumerate(name):
        h_dict[ntype] = h[torch.where(type == index)]
    return h_dict


class SemanticAttention(nn.Module):
    """Attention over metapaths: a score per metapath averaged over all nodes, softmaxed."""

    def __init__(self, in_size, hidden_size=8):
        super().__init__()
        self.project = nn.Sequential(
            nn.Linear(in_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, 1, bias=False)
        )

    def forward(self, z):
        if len(z) == 0:
            return None
        z = torch.stack(z, dim=1)
        w = self.project(z).mean(0)
        beta = torch.softmax(w, dim=0)
        beta = beta.expand((z.shape[0],) + beta.shape)
        return (beta * z).sum(1)


class MetapathConv(nn.Module):
    """One module per metapath graph, results grouped by destination type, fused per type."""

    def __init__(self, meta_paths_dict, mods, macro_func):
        super().__init__()
        self.mods = mods
        self.meta_paths_dict = meta_paths_dict
        self.SemanticConv = macro_func

    def forward(self, g_dict, h_dict):
        outputs = {g.dsttypes[0]: [] for s, g in g_dict.items()}
        for mp, meta_path in self.meta_paths_dict.items():
            new_g = g_dict[mp]
            h = h_dict[new_g.srctypes[0]]
            outputs[new_g.dsttypes[0]].append(self.mods[mp](new_g, h).flatten(1))
        rsts = {}
        for ntype, ntype_outputs in outputs.items():
            if len(ntype_outputs) != 0:
                rsts[ntype] = self.SemanticConv(ntype_outputs)
        return rsts


class HANLayer(nn.Module):
    def __init__(self, meta_paths_dict, in_size, out_size, layer_num_heads):
        super().__init__()
        self.meta_paths_dict = meta_paths_dict
        mods = nn.ModuleDict(
            {
                mp: dglnn.GATConv(in_size, out_size, layer_num_heads, activation=F.elu,
                                  allow_zero_in_degree=True)
                for mp in meta_paths_dict
            }
        )
        self.model = MetapathConv(meta_paths_dict, mods, SemanticAttention(out_size * layer_num_heads))
        self._cached_graph = None
        self._cached_coalesced_graph = {}

    def forward(self, g, h_dict):
        if self._cached_graph is None or self._cached_graph is not g:
            self._cached_graph = g
            self._cached_coalesced_graph.clear()
            for mp, mp_value in self.meta_paths_dict.items():
                self._cached_coalesced_graph[mp] = dgl.metapath_reachable_graph(g, mp_value)
        return self.model(self._cached_coalesced_graph, h_dict)


class HAN(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/HAN.py, openhgnn/layers/MetapathConv.py.
    openhgnn/models/HAN.py: metapath graphs made and cached by identity of `g` in each layer,
    a GATConv per metapath, semantic attention, the category's rows through a Linear, returned as
    a dict. Constructs: metapath_reachable_graph in a user layer, `is None or is not g` on
    module state, dict comprehension over the metapath graphs' dsttypes, `len(...) != 0`."""

    def __init__(self, meta_paths_dict, category, in_size, hidden_size, out_size, num_heads):
        super().__init__()
        self.category = category
        meta_paths_dict = {name: [tuple(e) if isinstance(e, list) else e for e in mp]
                           for name, mp in meta_paths_dict.items()}
        self.layers = nn.ModuleList()
        self.layers.append(HANLayer(meta_paths_dict, in_size, hidden_size, num_heads[0]))
        for l in range(1, len(num_heads)):
            self.layers.append(HANLayer(meta_paths_dict, hidden_size * num_heads[l - 1], hidden_size,
                                        num_heads[l]))
        self.linear = nn.Linear(hidden_size * num_heads[-1], out_size)

    def forward(self, g, h_dict):
        for gnn in self.layers:
            h_dict = gnn(g, h_dict)
        return {self.category: self.linear(h_dict[self.category])}


class HPNLayer(nn.Module):
    def __init__(self, meta_paths_dict, in_size, k_layer, alpha, out_embedsize):
        super().__init__()
        self.hidden = nn.Sequential(nn.Linear(in_size, out_embedsize, bias=True), nn.ReLU())
        self.meta_paths_dict = meta_paths_dict
        mods = nn.ModuleDict({mp: dglnn.APPNPConv(k_layer, alpha) for mp in meta_paths_dict})
        self.model = MetapathConv(meta_paths_dict, mods, SemanticAttention(out_embedsize))
        self._cached_graph = None
        self._cached_coalesced_graph = {}

    def forward(self, g, h_dict):
        h_dict = {ntype: self.hidden(h_dict[ntype]) for ntype in h_dict}
        if self._cached_graph is None or self._cached_graph is not g:
            self._cached_graph = g
            self._cached_coalesced_graph.clear()
            for mp, mp_value in self.meta_paths_dict.items():
                self._cached_coalesced_graph[mp] = dgl.metapath_reachable_graph(g, mp_value)
        return self.model(self._cached_coalesced_graph, h_dict)


class HPN(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/HPN.py.
    openhgnn/models/HPN.py: a projection per type over the input dict's keys, APPNP
    propagation on each metapath graph, semantic attention, a Linear for each category type.
    Constructs: `{ntype: f(h_dict[ntype]) for ntype in h_dict}`, metapath graphs, K-round
    propagation (APPNPConv) on a derived graph."""

    def __init__(self, meta_paths_dict, category, in_size, out_size, out_embedsize, k_layer, alpha):
        super().__init__()
        self.category = category
        meta_paths_dict = {name: [tuple(e) if isinstance(e, list) else e for e in mp]
                           for name, mp in meta_paths_dict.items()}
        self.layers = nn.ModuleList([HPNLayer(meta_paths_dict, in_size, k_layer, alpha, out_embedsize)])
        self.linear = nn.Linear(out_embedsize, out_size)

    def forward(self, g, h_dict):
        for gnn in self.layers:
            h_dict = gnn(g, h_dict)
        return {ntype: self.linear(h_dict[ntype]) for ntype in self.category}


class RelGraphConvLayer(nn.Module):
    """OpenHGNN's RGCN layer: HeteroGraphConv of GraphConv(weight=False) with a weight per relation
    (a basis decomposition when num_bases is smaller) given through mod_kwargs."""

    def __init__(self, in_feat, out_feat, rel_names, num_bases, *, weight=True, bias=True,
                 activation=None, self_loop=False):
        super().__init__()
        self.rel_names = rel_names
        self.bias = bias
        self.activation = activation
        self.self_loop = self_loop
        self.batchnorm = False
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False)
             for rel in rel_names}
        )
        self.use_weight = weight
        self.use_basis = num_bases < len(self.rel_names) and weight
        if self.use_weight:
            if self.use_basis:
                self.basis = dglnn.WeightBasis((in_feat, out_feat), num_bases, len(self.rel_names))
            else:
                self.weight = nn.Parameter(torch.Tensor(len(self.rel_names), in_feat, out_feat))
                nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        if bias:
            self.h_bias = nn.Parameter(torch.zeros(out_feat))
        if self.self_loop:
            self.loop_weight = nn.Parameter(torch.Tensor(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.dropout = nn.Dropout(0.0)

    def forward(self, g, inputs):
        g = g.local_var()
        if self.use_weight:
            weight = self.basis() if self.use_basis else self.weight
            wdict = {self.rel_names[i]: {"weight": w.squeeze(0)}
                     for i, w in enumerate(torch.split(weight, 1, dim=0))}
        else:
            wdict = {}
        if g.is_block:
            inputs_src = inputs
            inputs_dst = {k: v[: g.number_of_dst_nodes(k)] for k, v in inputs.items()}
        else:
            inputs_src = inputs_dst = inputs
        hs = self.conv(g, inputs_src, mod_kwargs=wdict)

        def _apply(ntype, h):
            if self.self_loop:
                h = h + torch.matmul(inputs_dst[ntype], self.loop_weight)
            if self.bias:
                h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return self.dropout(h)

        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class RGCN(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/RGCN.py.
    openhgnn/models/RGCN.py: `if hasattr(hg, 'ntypes')` (a graph) else a list of blocks, the
    relation names sorted from a set, `g.is_block` in the layer, a closure applied in a dict
    comprehension over the conv's result. Constructs: hasattr on the graph argument, basis
    weights through mod_kwargs, self-loop weight on the destination rows."""

    def __init__(self, in_dim, hidden_dim, out_dim, etypes, num_bases, num_hidden_layers=1,
                 use_self_loop=False):
        super().__init__()
        self.rel_names = list(set(etypes))
        self.rel_names.sort()
        if num_bases < 0 or num_bases > len(self.rel_names):
            self.num_bases = len(self.rel_names)
        else:
            self.num_bases = num_bases
        self.layers = nn.ModuleList()
        self.layers.append(RelGraphConvLayer(in_dim, hidden_dim, self.rel_names, self.num_bases,
                                             activation=F.relu, self_loop=use_self_loop, weight=True))
        for _ in range(num_hidden_layers):
            self.layers.append(RelGraphConvLayer(hidden_dim, hidden_dim, self.rel_names, self.num_bases,
                                                 activation=F.relu, self_loop=use_self_loop))
        self.layers.append(RelGraphConvLayer(hidden_dim, out_dim, self.rel_names, self.num_bases,
                                             activation=None, self_loop=use_self_loop))

    def forward(self, hg, h):
        if hasattr(hg, "ntypes"):
            for layer in self.layers:
                h = layer(hg, h)
        else:
            for layer, block in zip(self.layers, hg):
                h = layer(block, h)
        return h


class RGCNOnBlocks(RGCN):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/RGCN.py (mini-batch branch).
    The same RGCN called as its mini-batch branch is: `forward(self, blocks, h)`, each layer on
    its block, `g.is_block` true and destination rows cut per type in the layer. Constructs:
    blocks style on a heterograph, `g.is_block` in a user layer, per-type dict comprehensions."""

    def forward(self, blocks, h):
        for layer, block in zip(self.layers, blocks):
            h = layer(block, h)
        return h


class SimpleHGNConv(nn.Module):
    """openhgnn/models/SimpleHGN.py's conv: edge-type embeddings, attention from gathered rows
    (`[row]`, `[col]` of g.edges()), an edge residual kept on the graph across layers
    (`'alpha' in g.edata.keys()`), NaN rows zeroed in place."""

    def __init__(self, edge_dim, in_dim, out_dim, num_heads, num_etypes, negative_slope=0.2,
                 residual=True, activation=F.elu, beta=0.0):
        super().__init__()
        self.edge_dim = edge_dim
        self.out_dim = out_dim
        self.num_heads = num_heads
        self.edge_emb = nn.Parameter(torch.empty(size=(num_etypes, edge_dim)))
        self.W = nn.Parameter(torch.FloatTensor(in_dim, out_dim * num_heads))
        self.W_r = TypedLinear(edge_dim, edge_dim * num_heads, num_etypes)
        self.a_l = nn.Parameter(torch.empty(size=(1, num_heads, out_dim)))
        self.a_r = nn.Parameter(torch.empty(size=(1, num_heads, out_dim)))
        self.a_e = nn.Parameter(torch.empty(size=(1, num_heads, edge_dim)))
        for p in (self.edge_emb, self.W, self.a_l, self.a_r, self.a_e):
            nn.init.xavier_uniform_(p, gain=1.414)
        self.leakyrelu = nn.LeakyReLU(negative_slope)
        self.activation = activation
        if residual:
            self.residual = nn.Linear(in_dim, out_dim * num_heads)
        else:
            self.register_buffer("residual", None)
        self.beta = beta

    def forward(self, g, h, ntype, etype, presorted=False):
        emb = torch.matmul(h, self.W).view(-1, self.num_heads, self.out_dim)
        emb[torch.isnan(emb)] = 0.0
        edge_emb = self.W_r(self.edge_emb[etype], etype, presorted).view(-1, self.num_heads, self.edge_dim)
        row = g.edges()[0]
        col = g.edges()[1]
        h_l = (self.a_l * emb).sum(dim=-1)[row]
        h_r = (self.a_r * emb).sum(dim=-1)[col]
        h_e = (self.a_e * edge_emb).sum(dim=-1)
        edge_attention = self.leakyrelu(h_l + h_r + h_e)
        edge_attention = edge_softmax(g, edge_attention)
        if "alpha" in g.edata.keys():
            res_attn = g.edata["alpha"]
            edge_attention = edge_attention * (1 - self.beta) + res_attn * self.beta
        if self.num_heads == 1:
            edge_attention = edge_attention[:, 0]
            edge_attention = edge_attention.unsqueeze(1)
        with g.local_scope():
            emb = emb.permute(0, 2, 1).contiguous()
            g.edata["alpha"] = edge_attention
            g.srcdata["emb"] = emb
            g.update_all(fn.u_mul_e("emb", "alpha", "m"), fn.sum("m", "emb"))
            if isinstance(g.ndata["emb"], dict):
                temp = g.ndata["emb"]["_N"]
            else:
                temp = g.ndata["emb"]
            h_output = temp.view(-1, self.out_dim * self.num_heads)
        g.edata["alpha"] = edge_attention
        if self.residual:
            res = self.residual(h)
            h_output += res
        if self.activation is not None:
            h_output = self.activation(h_output)
        return h_output


class SimpleHGN(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/SimpleHGN.py.
    openhgnn/models/SimpleHGN.py: `hg.ndata['h'] = h_dict`, `dgl.to_homogeneous(hg,
    ndata='h')`, layers on the homogeneous graph with its `_TYPE` fields, and the result split
    back per type with torch.where. Constructs: to_homogeneous, graph fields as inputs, a field
    written on the derived graph by one layer and read by the next, hasattr(hg, 'ntypes')."""

    def __init__(self, edge_dim, num_etypes, in_dim, hidden_dim, num_classes, num_layers, heads,
                 negative_slope, residual, beta, ntypes):
        super().__init__()
        self.ntypes = ntypes
        self.num_layers = num_layers
        self.hgn_layers = nn.ModuleList()
        self.activation = F.elu
        self.hgn_layers.append(SimpleHGNConv(edge_dim, in_dim[0], hidden_dim, heads[0], num_etypes,
                                             negative_slope, False, self.activation, beta=beta))
        for l in range(1, num_layers - 1):
            self.hgn_layers.append(SimpleHGNConv(edge_dim, hidden_dim * heads[l - 1], hidden_dim, heads[l],
                                                 num_etypes, negative_slope, residual, self.activation,
                                                 beta=beta))
        self.hgn_layers.append(SimpleHGNConv(edge_dim, hidden_dim * heads[-2], num_classes, heads[-1],
                                             num_etypes, negative_slope, residual, None, beta=beta))

    def forward(self, hg, h_dict):
        if hasattr(hg, "ntypes"):
            with hg.local_scope():
                hg.ndata["h"] = h_dict
                g = dgl.to_homogeneous(hg, ndata="h")
                h = g.ndata["h"]
                for l in range(self.num_layers):
                    h = self.hgn_layers[l](g, h, g.ndata["_TYPE"], g.edata["_TYPE"], True)
                    h = h.flatten(1)
            h_dict = to_hetero_feat(h, g.ndata["_TYPE"], hg.ntypes)
        else:
            h = h_dict
            for layer, block in zip(self.hgn_layers, hg):
                h = layer(block, h, block.ndata["_TYPE"], block.edata["_TYPE"], True)
                h = h.flatten(1)
            h_dict = to_hetero_feat(h, block.ndata["_TYPE"], self.ntypes)
        return h_dict


class HGT(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/HGT.py.
    openhgnn/models/HGT.py: to_homogeneous with the features, dgl.nn.HGTConv with the
    homogeneous graph's `_TYPE` fields and presorted=True, split back by type. Constructs:
    to_homogeneous in forward, `g.ndata['_TYPE']` / `g.edata['_TYPE']` as inputs, torch.where on
    node types."""

    def __init__(self, in_dim, out_dim, num_heads, num_etypes, num_ntypes, num_layers, norm=False):
        super().__init__()
        self.num_layers = num_layers
        self.hgt_layers = nn.ModuleList()
        self.hgt_layers.append(dglnn.HGTConv(in_dim, in_dim // num_heads, num_heads, num_ntypes,
                                             num_etypes, 0.0, norm))
        for _ in range(1, num_layers - 1):
            self.hgt_layers.append(dglnn.HGTConv(in_dim, in_dim // num_heads, num_heads, num_ntypes,
                                                 num_etypes, 0.0, norm))
        self.hgt_layers.append(dglnn.HGTConv(in_dim, out_dim, 1, num_ntypes, num_etypes, 0.0, norm))

    def forward(self, hg, h_dict):
        if hasattr(hg, "ntypes"):
            with hg.local_scope():
                hg.ndata["h"] = h_dict
                g = dgl.to_homogeneous(hg, ndata="h")
                h = g.ndata["h"]
                for l in range(self.num_layers):
                    h = self.hgt_layers[l](g, h, g.ndata["_TYPE"], g.edata["_TYPE"], presorted=True)
            h_dict = to_hetero_feat(h, g.ndata["_TYPE"], hg.ntypes)
        else:
            h = h_dict
            for layer, block in zip(self.hgt_layers, hg):
                h = layer(block, h, block.ndata["_TYPE"]["_N"], block.edata["_TYPE"], presorted=True)
            h_dict = to_hetero_feat(h, block.ndata["_TYPE"], self.ntypes)
        return h_dict


class HGTOnBlocks(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/HGT.py (mini-batch branch).
    The mini-batch branch of openhgnn/models/HGT.py as its own forward: blocks of a graph made
    by to_homogeneous, node and edge types read from each block's fields, a homogeneous tensor in
    and out. Constructs: `forward(self, blocks, h)`, `block.srcdata[dgl.NTYPE]`,
    `block.edata[dgl.ETYPE]` read per layer."""

    def __init__(self, in_dim, out_dim, num_heads, num_etypes, num_ntypes, num_layers):
        super().__init__()
        self.hgt_layers = nn.ModuleList()
        for _ in range(num_layers - 1):
            self.hgt_layers.append(dglnn.HGTConv(in_dim, in_dim // num_heads, num_heads, num_ntypes,
                                                 num_etypes, 0.0, False))
        self.hgt_layers.append(dglnn.HGTConv(in_dim, out_dim, 1, num_ntypes, num_etypes, 0.0, False))

    def forward(self, blocks, h):
        for layer, block in zip(self.hgt_layers, blocks):
            h = layer(block, h, block.srcdata[dgl.NTYPE], block.edata[dgl.ETYPE], presorted=False)
        return h


class CompConv(nn.Module):
    """OpenHGNN's CompConv (openhgnn/layers/micro_layer): the source row composed with the
    relation's embedding (`u_sub_e` / `u_mul_e`), a right norm, then the Linear given per relation
    through mod_kwargs."""

    def __init__(self, comp_fn="sub", norm="right"):
        super().__init__()
        self.comp_fn = comp_fn
        self._norm = norm

    def forward(self, graph, feat, h_e, Linear):
        with graph.local_scope():
            if isinstance(feat, tuple):
                feat_src = feat[0]
            else:
                feat_src = feat
            graph.srcdata["h"] = feat_src
            graph.edata["h"] = h_e.expand(graph.num_edges(), -1)
            if self.comp_fn == "sub":
                graph.update_all(fn.u_sub_e("h", "h", out="m"), fn.sum("m", "comp_h"))
            elif self.comp_fn == "mul":
                graph.update_all(fn.u_mul_e("h", "h", out="m"), fn.sum("m", "comp_h"))
            rst = graph.dstdata["comp_h"]
            if self._norm == "right":
                degs = graph.in_degrees().float().clamp(min=1)
                rst = rst * (1.0 / degs).unsqueeze(-1)
            return Linear(rst)


class CompGraphConvLayer(nn.Module):
    def __init__(self, in_dim, out_dim, rel_names, comp_fn="sub", activation=None, batchnorm=False):
        super().__init__()
        self.comp_fn = comp_fn
        self.actvation = activation
        self.batchnorm = batchnorm
        self.rel_names = rel_names
        if self.batchnorm:
            self.bn = nn.BatchNorm1d(out_dim)
        self.W_O = nn.Linear(in_dim, out_dim)
        self.W_I = nn.Linear(in_dim, out_dim)
        self.W_S = nn.Linear(in_dim, out_dim)
        self.W_R = nn.Linear(in_dim, out_dim)
        self.conv = dglnn.HeteroGraphConv({rel: CompConv(comp_fn=comp_fn, norm="right") for rel in rel_names})

    def forward(self, hg, n_in_feats, r_feats):
        with hg.local_scope():
            wdict = {}
            for i, etype in enumerate(self.rel_names):
                if etype[:4] == "rev-" or etype[-4:] == "-rev":
                    W = self.W_I
                else:
                    W = self.W_O
                wdict[etype] = {"Linear": W, "h_e": r_feats[i + 1]}
            if hg.is_block:
                inputs_src = n_in_feats
                inputs_dst = {k: v[: hg.number_of_dst_nodes(k)] for k, v in n_in_feats.items()}
            else:
                inputs_src = inputs_dst = n_in_feats
            outputs = self.conv(hg, inputs_src, mod_kwargs=wdict)
            for n, emd in outputs.items():
                if self.comp_fn == "sub":
                    h_self = self.W_S(inputs_dst[n] - r_feats[-1])
                else:
                    h_self = self.W_S(inputs_dst[n] * r_feats[-1])
                h_self.add_(emd)
                if self.batchnorm:
                    if h_self.shape[0] > 1:
                        h_self = self.bn(h_self)
                n_out_feats = h_self
                if self.actvation is not None:
                    n_out_feats = self.actvation(n_out_feats)
                outputs[n] = n_out_feats
        r_out_feats = self.W_R(r_feats)
        if self.actvation is not None:
            r_out_feats = self.actvation(r_out_feats)
        return outputs, r_out_feats


class CompGCN(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/CompGCN.py.
    openhgnn/models/CompGCN.py: a relation embedding table updated alongside the nodes, a user
    module per relation inside HeteroGraphConv given a Linear module and the relation's embedding
    through mod_kwargs, `etype[:4] == 'rev-'` on relation names, `h_self.shape[0] > 1` before a
    BatchNorm, `h_self.add_(emd)`. Constructs: user modules in HeteroGraphConv, a shape decision,
    a pair (nodes, relations) threaded through the layers."""

    def __init__(self, in_dim, hid_dim, out_dim, etypes, n_rels, num_layers=2, comp_fn="sub"):
        super().__init__()
        self.rel_names = list(set(etypes))
        self.rel_names.sort()
        self.layers = nn.ModuleList()
        self.r_embedding = nn.Parameter(torch.FloatTensor(n_rels + 1, in_dim))
        self.layers.append(CompGraphConvLayer(in_dim, hid_dim, self.rel_names, comp_fn=comp_fn,
                                              activation=F.relu, batchnorm=True))
        for _ in range(num_layers - 2):
            self.layers.append(CompGraphConvLayer(hid_dim, hid_dim, self.rel_names, comp_fn=comp_fn,
                                                  activation=F.relu, batchnorm=True))
        self.layers.append(CompGraphConvLayer(hid_dim, out_dim, self.rel_names, comp_fn=comp_fn))
        nn.init.xavier_uniform_(self.r_embedding)

    def forward(self, hg, n_feats):
        r_feats = self.r_embedding
        if hasattr(hg, "ntypes"):
            for layer in self.layers:
                n_feats, r_feats = layer(hg, n_feats, r_feats)
        else:
            for layer, block in zip(self.layers, hg):
                n_feats, r_feats = layer(block, n_feats, r_feats)
        return n_feats


class GTConv(nn.Module):
    """A softmax-weighted sum of the relation graphs (dgl.adj_sum_graph), one per channel."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(out_channels, in_channels))
        nn.init.normal_(self.weight, std=0.01)

    def forward(self, A):
        Filter = F.softmax(self.weight, dim=1)
        num_channels = Filter.shape[0]
        results = []
        for i in range(num_channels):
            for j, g in enumerate(A):
                A[j].edata["w_sum"] = g.edata["w"] * Filter[i][j]
            results.append(dgl.adj_sum_graph(A, "w_sum"))
        return results


class GTN(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/GTN_sparse.py.
    openhgnn/models/GTN_sparse.py: to_homogeneous, one graph per relation (edge_subgraph of
    its edges, weight 1) plus the identity, softmax-weighted sums of them (adj_sum_graph), their
    product (adj_product_graph), then per channel remove_self_loop / add_self_loop, edge weights
    concatenated with ones, EdgeWeightNorm and GraphConv(norm='none'), the category's rows picked
    by node type. Constructs: graphs derived from the input graph and the weights alone, edge
    weights computed in forward, rows picked by `torch.where(ntype == i)`."""

    def __init__(self, num_edge_type, num_channels, in_dim, hidden_dim, num_class, category_id):
        super().__init__()
        self.num_channels = num_channels
        self.category_id = category_id
        self.conv1 = GTConv(num_edge_type, num_channels)
        self.conv2 = GTConv(num_edge_type, num_channels)
        self.gcn = dglnn.GraphConv(in_dim, hidden_dim, norm="none", activation=F.relu)
        self.norm = dglnn.EdgeWeightNorm(norm="right")
        self.linear1 = nn.Linear(hidden_dim * num_channels, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, num_class)

    def forward(self, hg, h):
        with hg.local_scope():
            hg.ndata["h"] = h
            g = dgl.to_homogeneous(hg, ndata="h")
            h = g.ndata["h"]
            A = []
            for i in range(len(hg.canonical_etypes)):
                sub = dgl.edge_subgraph(g, torch.where(g.edata[dgl.ETYPE] == i)[0], relabel_nodes=False)
                sub.edata["w"] = torch.ones(sub.num_edges())
                A.append(sub)
            identity = dgl.graph((torch.arange(g.num_nodes()), torch.arange(g.num_nodes())),
                                 num_nodes=g.num_nodes())
            identity.edata["w"] = torch.ones(g.num_nodes())
            A.append(identity)
            result_A = self.conv1(A)
            result_B = self.conv2(A)
            H = [dgl.adj_product_graph(result_A[i], result_B[i], "w_sum") for i in range(len(result_A))]
            for i in range(self.num_channels):
                sg = dgl.remove_self_loop(H[i])
                edge_weight = sg.edata["w_sum"]
                sg = dgl.add_self_loop(sg)
                edge_weight = torch.cat((edge_weight, torch.full((sg.number_of_nodes(),), 1.0)))
                edge_weight = self.norm(sg, edge_weight)
                if i == 0:
                    X_ = self.gcn(sg, h, edge_weight=edge_weight)
                else:
                    X_ = torch.cat((X_, self.gcn(sg, h, edge_weight=edge_weight)), dim=1)
            X_ = F.relu(self.linear1(X_))
            y = self.linear2(X_)
            category_idx = torch.where(g.ndata[dgl.NTYPE] == self.category_id)[0]
            return y[category_idx]


class SimpleHGNOnBlocks(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/SimpleHGN.py (mini-batch branch).
    The mini-batch branch of openhgnn/models/SimpleHGN.py as its own forward: blocks of a graph
    made by to_homogeneous, the node and edge types read from each block's fields
    (`block.srcdata[dgl.NTYPE]`, `block.edata[dgl.ETYPE]`), the edge residual kept on each
    block across layers. Constructs: `forward(self, blocks, h)`, graph fields as inputs, a field
    written by a user layer on the graph it was given."""

    def __init__(self, edge_dim, num_etypes, in_dim, hidden_dim, num_classes, heads, beta):
        super().__init__()
        self.hgn_layers = nn.ModuleList()
        self.hgn_layers.append(SimpleHGNConv(edge_dim, in_dim, hidden_dim, heads[0], num_etypes,
                                             residual=False, activation=F.elu, beta=beta))
        self.hgn_layers.append(SimpleHGNConv(edge_dim, hidden_dim * heads[0], num_classes, heads[1], num_etypes,
                                             residual=True, activation=None, beta=beta))

    def forward(self, blocks, h):
        for layer, block in zip(self.hgn_layers, blocks):
            h = layer(block, h, block.srcdata[dgl.NTYPE], block.edata[dgl.ETYPE], False)
            h = h.flatten(1)
        return h


class RGATLayer(nn.Module):
    """OpenHGNN's RGAT layer: HeteroGraphConv of GATv2Conv (nodes without in-edges refused),
    heads flattened, or averaged on the last layer, then `h.squeeze()` with no dim."""

    def __init__(self, in_feat, out_feat, num_heads, rel_names, activation=None, last_layer_flag=False):
        super().__init__()
        self.activation = activation
        self.last_layer_flag = last_layer_flag
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GATv2Conv(in_feat, out_feat, num_heads=num_heads, allow_zero_in_degree=False)
             for rel in rel_names}
        )

    def forward(self, g, h_dict):
        h_dict = self.conv(g, h_dict)
        out_put = {}
        for n_type, h in h_dict.items():
            if self.last_layer_flag:
                h = h.mean(1)
            else:
                h = h.flatten(1)
            out_put[n_type] = h.squeeze()
        return out_put


class RGAT(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/RGAT.py.
    openhgnn/models/RGAT.py: `forward(self, hg, h_dict=None, embed=False, eweight=None,
    **kwargs)`, `if embed:` returning the first conv's flattened heads, hasattr(hg, 'ntypes') for
    graph or blocks. Constructs: flags and a **kwargs after the inputs, GATv2Conv refusing
    nodes without in-edges, a squeeze with no dim, a loop over the result dict."""

    def __init__(self, in_dim, out_dim, h_dim, etypes, num_heads):
        super().__init__()
        self.rel_names = list(set(etypes))
        self.rel_names.sort()
        self.layers = nn.ModuleList()
        self.layers.append(RGATLayer(in_dim, h_dim, num_heads, self.rel_names, activation=F.relu))
        self.layers.append(RGATLayer(h_dim * num_heads, out_dim, num_heads, self.rel_names,
                                     last_layer_flag=True))

    def forward(self, hg, h_dict=None, embed=False, eweight=None, **kwargs):
        if embed:
            h_dict = self.layers[0].conv(hg, h_dict)
            out_put = {}
            for n_type, h in h_dict.items():
                out_put[n_type] = h.flatten(1)
            return out_put
        if hasattr(hg, "ntypes"):
            for layer in self.layers:
                h_dict = layer(hg, h_dict)
        else:
            for layer, block in zip(self.layers, hg):
                h_dict = layer(block, h_dict)
        return h_dict


class HANLayerV0(nn.Module):
    """The earlier HANLayer of openhgnn/models/HAN.py: a list of GATConv, one per metapath, the
    metapath graphs cached in a dict keyed by the metapath (a tuple), the per-metapath results
    stacked on axis 1 and fused by semantic attention."""

    def __init__(self, meta_paths, in_size, out_size, layer_num_heads):
        super().__init__()
        self.meta_paths = [tuple(mp) for mp in meta_paths]
        self.gat_layers = nn.ModuleList(
            [dglnn.GATConv(in_size, out_size, layer_num_heads, activation=F.elu, allow_zero_in_degree=True)
             for _ in self.meta_paths]
        )
        self.semantic_attention = SemanticAttention(out_size * layer_num_heads)
        self._cached_graph = None
        self._cached_coalesced_graph = {}

    def forward(self, g, h):
        if self._cached_graph is None or self._cached_graph is not g:
            self._cached_graph = g
            self._cached_coalesced_graph.clear()
            for meta_path in self.meta_paths:
                self._cached_coalesced_graph[meta_path] = dgl.metapath_reachable_graph(g, meta_path)
        semantic_embeddings = [
            gat(new_g, h).flatten(1)
            for gat, new_g in zip(self.gat_layers, self._cached_coalesced_graph.values())
        ]
        return self.semantic_attention(semantic_embeddings)


class HANV0(nn.Module):
    """Follows BUPT-GAMMA/OpenHGNN openhgnn/models/HAN.py.
    openhgnn/models/HAN.py as first read: `h = h_dict[self.category]`, layers on the category's
    tensor, `{self.category: self.linear(h)}` returned. Constructs: metapath graphs cached on the
    layer, iteration over a dict's values, semantic attention over all nodes."""

    def __init__(self, meta_paths, category, in_size, hidden_size, out_size, num_heads):
        super().__init__()
        self.category = category
        self.layers = nn.ModuleList([HANLayerV0(meta_paths, in_size, hidden_size, num_heads[0])])
        for l in range(1, len(num_heads)):
            self.layers.append(HANLayerV0(meta_paths, hidden_size * num_heads[l - 1], hidden_size, num_heads[l]))
        self.linear = nn.Linear(hidden_size * num_heads[-1], out_size)

    def forward(self, g, h_dict):
        h = h_dict[self.category]
        for gnn in self.layers:
            h = gnn(g, h)
        return {self.category: self.linear(h)}

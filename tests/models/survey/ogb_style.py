"""OGB leaderboard entries in the style of AGDN (skepsun/Adaptive-Graph-Diffusion-Networks,
ogbn-arxiv/src/models.py, ogbn-products/src/models.py) and its C&S post-processing
(ogbn-arxiv/src/correct_and_smooth.py). Our own code, small widths."""

import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.ops import edge_softmax
from dgl.utils import expand_as_pair


class ElementWiseLinear(nn.Module):
    def __init__(self, size, weight=True, bias=True, inplace=False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size)) if weight else None
        self.bias = nn.Parameter(torch.zeros(size)) if bias else None
        self.inplace = inplace

    def forward(self, x):
        if self.inplace:
            if self.weight is not None:
                x.mul_(self.weight)
            if self.bias is not None:
                x.add_(self.bias)
        else:
            if self.weight is not None:
                x = x * self.weight
            if self.bias is not None:
                x = x + self.bias
        return x


class GCNHAConv(nn.Module):
    """AGDN's GCN with hop attention: K rounds of `update_all(u_mul_e('ft', 'gcn_norm'))` with an
    edge field the user's script put on the graph, every round kept, a position embedding per
    hop, attention over hops, `for i in range(a.shape[-1]): rst += hstack[i] * a[:, :, [i]]` from
    `rst = 0`; `if (graph.in_degrees() == 0).any(): assert False` unless allowed;
    isinstance/is_block branches."""

    def __init__(self, in_feats, out_feats, K=3, num_heads=1, negative_slope=0.2, residual=False,
                 activation=None, allow_zero_in_degree=False):
        super().__init__()
        self._num_heads = num_heads
        self._in_src_feats, self._in_dst_feats = expand_as_pair(in_feats)
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self._K = K
        self.fc = nn.Linear(self._in_src_feats, out_feats * num_heads, bias=False)
        self.hop_attn_l = nn.Parameter(torch.FloatTensor(size=(1, num_heads, out_feats)))
        self.hop_attn_r = nn.Parameter(torch.FloatTensor(size=(1, num_heads, out_feats)))
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.position_emb = nn.Parameter(torch.FloatTensor(size=(K + 1, num_heads, out_feats)))
        if residual:
            if self._in_dst_feats != out_feats:
                self.res_fc = nn.Linear(self._in_dst_feats, num_heads * out_feats, bias=False)
            else:
                self.res_fc = nn.Identity()
        else:
            self.register_buffer("res_fc", None)
        gain = nn.init.calculate_gain("relu")
        for p in (self.fc.weight, self.hop_attn_l, self.hop_attn_r, self.position_emb):
            nn.init.xavier_normal_(p, gain=gain)
        self._activation = activation

    def forward(self, graph, feat):
        with graph.local_scope():
            if not self._allow_zero_in_degree:
                if (graph.in_degrees() == 0).any():
                    assert False
            if isinstance(feat, tuple):
                h_src = feat[0]
                feat_src = self.fc(h_src).view(-1, self._num_heads, self._out_feats)
            else:
                h_src = feat
                feat_src = self.fc(h_src).view(-1, self._num_heads, self._out_feats)
            graph.srcdata.update({"ft": feat_src})
            hstack = [graph.ndata["ft"]]
            for k in range(self._K):
                graph.update_all(fn.u_mul_e("ft", "gcn_norm", "m"), fn.sum("m", "ft"))
                hstack.append(graph.ndata["ft"])
            hstack = [h + self.position_emb[[k], :, :] for k, h in enumerate(hstack)]
            a_l = (hstack[0] * self.hop_attn_l).sum(dim=-1).unsqueeze(-1)
            astack_r = [(feat_dst * self.hop_attn_r).sum(dim=-1).unsqueeze(-1) for feat_dst in hstack]
            a = torch.cat([(a_r + a_l) for a_r in astack_r], dim=-1)
            a = self.leaky_relu(a)
            a = F.softmax(a, dim=-1)
            rst = 0
            for i in range(a.shape[-1]):
                rst += hstack[i] * a[:, :, [i]]
            if self.res_fc is not None:
                resval = self.res_fc(feat).view(feat.shape[0], -1, self._out_feats)
                rst = rst + resval
            if self._activation is not None:
                rst = self._activation(rst)
            return rst


class GCNHA(nn.Module):
    """Follows skepsun/Adaptive-Graph-Diffusion-Networks ogbn-arxiv/src/models.py (GCNHAConv).
    AGDN's GCN-HA on ogbn-arxiv: GCNHAConv layers, BatchNorm and activation between, heads
    averaged, ElementWiseLinear in place at the end. Constructs: K-round propagation with hop
    attention in a user module, an edge field read from the graph, a data-dependent-looking
    assert on the graph's degrees, a shape-driven loop."""

    def __init__(self, in_feats, n_hidden, n_classes, n_layers, n_heads, K=3):
        super().__init__()
        self.n_layers = n_layers
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(n_layers):
            in_hidden = n_heads * n_hidden if i > 0 else in_feats
            out_hidden = n_hidden if i < n_layers - 1 else n_classes
            num_heads = n_heads if i < n_layers - 1 else 1
            self.convs.append(GCNHAConv(in_hidden, out_hidden, K=K, num_heads=num_heads, residual=True))
            if i < n_layers - 1:
                self.norms.append(nn.BatchNorm1d(n_heads * out_hidden))
        self.bias_last = ElementWiseLinear(n_classes, weight=False, bias=True, inplace=True)
        self.input_drop = nn.Dropout(0.1)
        self.dropout = nn.Dropout(0.5)
        self.activation = F.relu

    def forward(self, graph, feat):
        h = self.input_drop(feat)
        for i in range(self.n_layers):
            h = self.convs[i](graph, h)
            if i < self.n_layers - 1:
                h = h.flatten(1)
                h = self.norms[i](h)
                h = self.activation(h, inplace=True)
                h = self.dropout(h)
        h = h.mean(1)
        return self.bias_last(h)


class EdgeFeatGATConv(nn.Module):
    """AGDN's ogbn-products/proteins GATConv: attention terms from Linears, an optional edge
    feature term (`feat_edge=None`), an edge-dropout path under `self.training`, `rst +=
    feat_dst_fc`, an in-place activation."""

    def __init__(self, node_feats, edge_feats, out_feats, n_heads=1, edge_drop=0.0, negative_slope=0.2,
                 residual=True, activation=None, use_attn_dst=True):
        super().__init__()
        self._n_heads = n_heads
        self._in_src_feats, self._in_dst_feats = expand_as_pair(node_feats)
        self._out_feats = out_feats
        self.src_fc = nn.Linear(self._in_src_feats, out_feats * n_heads, bias=False)
        if residual:
            self.dst_fc = nn.Linear(self._in_src_feats, out_feats * n_heads)
            self.bias = None
        else:
            self.dst_fc = None
            self.bias = nn.Parameter(torch.zeros(out_feats * n_heads))
        self.attn_src_fc = nn.Linear(self._in_src_feats, n_heads, bias=False)
        self.attn_dst_fc = nn.Linear(self._in_src_feats, n_heads, bias=False) if use_attn_dst else None
        self.attn_edge_fc = nn.Linear(edge_feats, n_heads, bias=False) if edge_feats > 0 else None
        self.edge_drop = edge_drop
        self.leaky_relu = nn.LeakyReLU(negative_slope, inplace=True)
        self.activation = activation

    def forward(self, graph, feat_src, feat_edge=None):
        with graph.local_scope():
            if graph.is_block:
                feat_dst = feat_src[: graph.number_of_dst_nodes()]
            else:
                feat_dst = feat_src
            feat_src_fc = self.src_fc(feat_src).view(-1, self._n_heads, self._out_feats)
            feat_dst_fc = self.dst_fc(feat_dst).view(-1, self._n_heads, self._out_feats)
            attn_src = self.attn_src_fc(feat_src).view(-1, self._n_heads, 1)
            graph.srcdata.update({"feat_src_fc": feat_src_fc, "attn_src": attn_src})
            if self.attn_dst_fc is not None:
                attn_dst = self.attn_dst_fc(feat_dst).view(-1, self._n_heads, 1)
                graph.dstdata.update({"attn_dst": attn_dst})
                graph.apply_edges(fn.u_add_v("attn_src", "attn_dst", "attn_node"))
            else:
                graph.apply_edges(fn.copy_u("attn_src", "attn_node"))
            e = graph.edata["attn_node"]
            if feat_edge is not None:
                attn_edge = self.attn_edge_fc(feat_edge).view(-1, self._n_heads, 1)
                graph.edata.update({"attn_edge": attn_edge})
                e += graph.edata["attn_edge"]
            e = self.leaky_relu(e)
            if self.training and self.edge_drop > 0:
                perm = torch.randperm(graph.number_of_edges(), device=e.device)
                bound = int(graph.number_of_edges() * self.edge_drop)
                eids = perm[bound:]
                graph.edata["a"] = torch.zeros_like(e)
                graph.edata["a"][eids] = edge_softmax(graph, e[eids], eids=eids)
            else:
                graph.edata["a"] = edge_softmax(graph, e)
            graph.update_all(fn.u_mul_e("feat_src_fc", "a", "m"), fn.sum("m", "feat_src_fc"))
            rst = graph.dstdata["feat_src_fc"]
            if self.dst_fc is not None:
                rst += feat_dst_fc
            else:
                rst += self.bias
            if self.activation is not None:
                rst = self.activation(rst, inplace=True)
            return rst


class ProductsGAT(nn.Module):
    """Follows skepsun/Adaptive-Graph-Diffusion-Networks ogbn-products/src/models.py (GAT).
    AGDN's GAT for ogbn-products/proteins: `forward(self, g, inference=False)` that takes a
    graph or a list of subgraphs (`if not isinstance(g, list): subgraphs = [g] * n_layers`), node
    features read from `subgraphs[0].srcdata['feat']`, edge features per layer from
    `subgraphs[i].edata['feat']` through an encoder, a residual `h += h_last[: h.shape[0], :]`.
    Constructs: isinstance on the graph argument, a flag default, graph fields as the inputs,
    an edge feature per layer."""

    def __init__(self, node_feats, edge_feats, n_classes, n_layers, n_heads, n_hidden, edge_emb, residual=True):
        super().__init__()
        self.n_layers = n_layers
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.edge_encoder = nn.ModuleList() if edge_emb > 0 else None
        for i in range(n_layers):
            in_hidden = n_heads * n_hidden if i > 0 else node_feats
            if self.edge_encoder is not None:
                self.edge_encoder.append(nn.Linear(edge_feats, edge_emb))
            self.convs.append(EdgeFeatGATConv(in_hidden, edge_emb, n_hidden, n_heads=n_heads))
            self.norms.append(nn.BatchNorm1d(n_heads * n_hidden))
        self.pred_linear = nn.Linear(n_heads * n_hidden, n_classes)
        self.input_drop = nn.Dropout(0.1)
        self.dropout = nn.Dropout(0.25)
        self.activation = F.relu
        self.residual = residual

    def forward(self, g, inference=False):
        if not isinstance(g, list):
            subgraphs = [g] * self.n_layers
        else:
            subgraphs = g
        h = subgraphs[0].srcdata["feat"]
        h = self.input_drop(h)
        h_last = None
        for i in range(self.n_layers):
            if self.edge_encoder is not None:
                efeat = subgraphs[i].edata["feat"]
                efeat_emb = self.edge_encoder[i](efeat)
                efeat_emb = F.relu(efeat_emb, inplace=True)
            else:
                efeat_emb = None
            h = self.convs[i](subgraphs[i], h, efeat_emb).flatten(1, -1)
            if self.residual and h_last is not None:
                h += h_last[: h.shape[0], :]
            h_last = h
            h = self.norms[i](h)
            h = self.activation(h, inplace=True)
            h = self.dropout(h)
        return self.pred_linear(h)


class AGDNConv(nn.Module):
    """AGDN's diffusion conv: attention normalised by both ends
    (`sqrt(edge_softmax(norm_by='dst') * edge_softmax(norm_by='src'))`, the second reading each
    source's other out-edges), K rounds of propagation with it, a per-row normalisation and a
    position embedding per hop, attention over hops."""

    def __init__(self, node_feats, out_feats, n_heads=1, K=3, negative_slope=0.2, residual=True):
        super().__init__()
        self._n_heads = n_heads
        self._in_src_feats, self._in_dst_feats = expand_as_pair(node_feats)
        self._out_feats = out_feats
        self._K = K
        self.src_fc = nn.Linear(self._in_src_feats, out_feats * n_heads, bias=False)
        self.dst_fc = nn.Linear(self._in_src_feats, out_feats * n_heads) if residual else None
        self.bias = None if residual else nn.Parameter(torch.zeros(out_feats * n_heads))
        self.offset, self.scale = nn.ParameterList(), nn.ParameterList()
        for _ in range(K + 1):
            self.offset.append(nn.Parameter(torch.zeros(size=(1, n_heads, out_feats))))
            self.scale.append(nn.Parameter(torch.ones(size=(1, n_heads, out_feats))))
        self.attn_src_fc = nn.Linear(self._in_src_feats, n_heads, bias=False)
        self.attn_dst_fc = nn.Linear(self._in_src_feats, n_heads, bias=False)
        self.leaky_relu = nn.LeakyReLU(negative_slope, inplace=True)
        self.hop_attn_l = nn.Parameter(torch.randn(1, n_heads, out_feats) * 0.1)
        self.hop_attn_r = nn.Parameter(torch.randn(1, n_heads, out_feats) * 0.1)
        self.position_emb = nn.Parameter(torch.randn(K, n_heads, out_feats) * 0.1)

    def feat_trans(self, h, idx):
        mean = h.mean(dim=-1).view(h.shape[0], self._n_heads, 1)
        var = h.var(dim=-1, unbiased=False).view(h.shape[0], self._n_heads, 1) + 1e-9
        h = (h - mean) * self.scale[idx] * torch.rsqrt(var) + self.offset[idx]
        return h + self.position_emb[[idx], :, :]

    def forward(self, graph, feat_src):
        with graph.local_scope():
            if graph.is_block:
                feat_dst = feat_src[: graph.number_of_dst_nodes()]
            else:
                feat_dst = feat_src
            feat_src_fc = self.src_fc(feat_src).view(-1, self._n_heads, self._out_feats)
            feat_dst_fc = self.dst_fc(feat_dst).view(-1, self._n_heads, self._out_feats)
            attn_src = self.attn_src_fc(feat_src).view(-1, self._n_heads, 1)
            graph.srcdata.update({"feat_src_fc": feat_src_fc, "attn_src": attn_src})
            attn_dst = self.attn_dst_fc(feat_dst).view(-1, self._n_heads, 1)
            graph.dstdata.update({"attn_dst": attn_dst})
            graph.apply_edges(fn.u_add_v("attn_src", "attn_dst", "attn_node"))
            e = self.leaky_relu(graph.edata["attn_node"])
            eids = torch.arange(graph.number_of_edges(), device=e.device)
            graph.edata["a"] = torch.zeros_like(e)
            graph.edata["a"][eids] = torch.sqrt(
                edge_softmax(graph, e[eids], eids=eids, norm_by="dst").clamp(min=1e-9)
                * edge_softmax(graph, e[eids], eids=eids, norm_by="src").clamp(min=1e-9)
            )
            hstack = []
            for k in range(self._K):
                graph.update_all(fn.u_mul_e("feat_src_fc", "a", "m"), fn.sum("m", "feat_src_fc"))
                hstack.append(graph.dstdata["feat_src_fc"])
            hstack = [self.feat_trans(h, k) for k, h in enumerate(hstack)]
            a_l = (hstack[0] * self.hop_attn_l).sum(-1).unsqueeze(-1)
            astack_r = [(hstack[k] * self.hop_attn_r).sum(-1).unsqueeze(-1) for k in range(len(hstack))]
            a = torch.cat([a_r + a_l for a_r in astack_r], dim=-1)
            a = F.softmax(self.leaky_relu(a), dim=-1)
            rst = 0
            for k in range(self._K):
                rst += hstack[k] * a[:, :, [k]]
            if self.dst_fc is not None:
                rst += feat_dst_fc
            else:
                rst += self.bias
            return rst


class AGDN(nn.Module):
    """Follows skepsun/Adaptive-Graph-Diffusion-Networks ogbn-products/src/models.py (AGDN, AGDNConv).
    AGDN on ogbn-products: `forward(self, g)` alone (features from `subgraphs[0].srcdata`),
    AGDNConv layers with K hops, BatchNorm, an in-place activation. Constructs: isinstance on the
    graph argument, graph fields as the only input, K-round propagation with hop attention, an
    attention normalised over each source's out-edges."""

    def __init__(self, node_feats, n_classes, n_layers, n_heads, n_hidden, K=3, residual=False):
        super().__init__()
        self.n_layers = n_layers
        self.residual = residual
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(n_layers):
            in_hidden = n_heads * n_hidden if i > 0 else node_feats
            self.convs.append(AGDNConv(in_hidden, n_hidden, n_heads=n_heads, K=K))
            self.norms.append(nn.BatchNorm1d(n_heads * n_hidden))
        self.pred_linear = nn.Linear(n_heads * n_hidden, n_classes)
        self.input_drop = nn.Dropout(0.1)
        self.dropout = nn.Dropout(0.3)
        self.activation = F.relu

    def forward(self, g):
        if not isinstance(g, list):
            subgraphs = [g] * self.n_layers
        else:
            subgraphs = g
        h = subgraphs[0].srcdata["feat"]
        h = self.input_drop(h)
        h_last = None
        for i in range(self.n_layers):
            h = self.convs[i](subgraphs[i], h).flatten(1, -1)
            if h_last is not None and self.residual:
                h += h_last[: h.shape[0], :]
            h_last = h
            h = self.norms[i](h)
            h = self.activation(h, inplace=True)
            h = self.dropout(h)
        return self.pred_linear(h)


class OutcomeCorrelation(nn.Module):
    """Follows skepsun/Adaptive-Graph-Diffusion-Networks ogbn-arxiv/src/correct_and_smooth.py.
    C&S's `general_outcome_correlation` as a module: n_prop rounds of a mean over
    in-neighbours (optionally symmetric, by in-degrees), a restart to y0, and
    `post_step=lambda x: x.clamp(0, 1)` by default after every round. Constructs: a propagation
    loop in forward, a lambda default parameter applied per round, `is not None` on it, no
    weights at all."""

    def __init__(self, n_prop=8, alpha=0.73, use_norm=False):
        super().__init__()
        self.n_prop = n_prop
        self.alpha = alpha
        self.use_norm = use_norm

    def forward(self, graph, y0, post_step=lambda x: x.clamp(0, 1)):
        with graph.local_scope():
            y = y0
            for _ in range(self.n_prop):
                if self.use_norm:
                    degs = graph.in_degrees().float().clamp(min=1)
                    norm = torch.pow(degs, -0.5)
                    shp = norm.shape + (1,) * (y.dim() - 1)
                    norm = torch.reshape(norm, shp)
                    y = y * norm
                graph.srcdata.update({"y": y})
                graph.update_all(fn.copy_u("y", "m"), fn.mean("m", "y"))
                y = graph.dstdata["y"]
                if self.use_norm:
                    degs = graph.in_degrees().float().clamp(min=1)
                    norm = torch.pow(degs, 0.5)
                    shp = norm.shape + (1,) * (y.dim() - 1)
                    norm = torch.reshape(norm, shp)
                    y = y * norm
                y = self.alpha * y + (1 - self.alpha) * y0
                if post_step is not None:
                    y = post_step(y)
            return y

"""Models whose message passing is the user's own module, written the way third-party DGL code
writes them (leaderboard entries, self-supervised and fraud projects): a GAT variant over
edge_softmax that refuses nodes without in-edges, relation and edge-weight convolutions that
read the graph's edge and node fields, a GCN layer with its own symmetric norm from
out-degrees, propagation loops (label propagation with a clamp, DAGNN's hop attention,
GPR-GNN's hop weights), and state kept as (1, N, d) for an LSTM or GRU over layers.
tests/test_user_modules.py runs them."""

from __future__ import annotations

import dgl
import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.functional import edge_softmax


# --- 6a: a GAT variant that refuses nodes without in-edges, as dgl.nn's GATConv does --------------


class MyGATLayer(nn.Module):
    def __init__(self, in_dim, out_dim, num_heads):
        super().__init__()
        self.num_heads, self.out_dim = num_heads, out_dim
        self.fc = nn.Linear(in_dim, out_dim * num_heads, bias=False)
        self.attn_l = nn.Parameter(torch.randn(1, num_heads, out_dim))
        self.attn_r = nn.Parameter(torch.randn(1, num_heads, out_dim))

    def forward(self, graph, feat):
        with graph.local_scope():
            if (graph.in_degrees() == 0).any():
                raise RuntimeError("graph has 0-in-degree nodes; add self-loops")
            h_src = h_dst = self.fc(feat).view(-1, self.num_heads, self.out_dim)
            if graph.is_block:
                h_dst = h_src[: graph.number_of_dst_nodes()]
            el = (h_src * self.attn_l).sum(-1, keepdim=True)
            er = (h_dst * self.attn_r).sum(-1, keepdim=True)
            graph.srcdata.update({"ft": h_src, "el": el})
            graph.dstdata.update({"er": er})
            graph.apply_edges(fn.u_add_v("el", "er", "e"))
            graph.edata["a"] = edge_softmax(graph, F.leaky_relu(graph.edata.pop("e"), 0.2))
            graph.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "ft"))
            return graph.dstdata["ft"]


class SelfLoopGAT(nn.Module):
    """forward adds self-loops before its layers, so its layers never see a node without in-edges."""

    def __init__(self, in_size, hid_size, out_size, heads=2):
        super().__init__()
        self.layer1 = MyGATLayer(in_size, hid_size, heads)
        self.layer2 = MyGATLayer(hid_size * heads, out_size, 1)

    def forward(self, g, x):
        g = dgl.add_self_loop(dgl.remove_self_loop(g))
        h = F.elu(self.layer1(g, x)).flatten(1)
        return self.layer2(g, h).mean(1)


# --- 6b: modules that read the graph's own edge and node fields -------------------------------------


class MyRelConv(nn.Module):
    """A relation-typed layer reading the edge type from the graph it is given."""

    def __init__(self, in_dim, out_dim, num_rels):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_rels, in_dim, out_dim) * 0.1)
        self.loop = nn.Linear(in_dim, out_dim)

    def message(self, edges):
        w = self.weight[edges.data["etype"]]
        return {"m": torch.bmm(edges.src["h"].unsqueeze(1), w).squeeze(1)}

    def forward(self, g, h):
        with g.local_scope():
            g.srcdata["h"] = h
            g.update_all(self.message, fn.mean("m", "h"))
            return g.dstdata["h"] + self.loop(h[: g.num_dst_nodes()])


class RelationalNet(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_rels=3):
        super().__init__()
        self.conv1 = MyRelConv(in_size, hid_size, num_rels)
        self.conv2 = MyRelConv(hid_size, out_size, num_rels)

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        return self.conv2(g, h)


class WeightedMeanConv(nn.Module):
    """Edge weights kept on the graph as g.edata["w"], one per edge."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, g, h):
        with g.local_scope():
            g.srcdata["h"] = self.lin(h)
            g.edata["w"] = g.edata["w"].view(-1, 1)
            g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h"))
            return g.dstdata["h"]


class EdgeWeightNet(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = WeightedMeanConv(in_size, hid_size)
        self.conv2 = WeightedMeanConv(hid_size, out_size)

    def forward(self, g, x):
        return self.conv2(g, F.relu(self.conv1(g, x)))


class StoredNormConv(nn.Module):
    """A symmetric norm computed once by the user's data loading and kept as g.ndata["norm"]."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, g, h):
        with g.local_scope():
            g.srcdata["h"] = self.lin(h) * g.srcdata["norm"]
            g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return g.dstdata["h"] * g.dstdata["norm"]


class StoredNormGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = StoredNormConv(in_size, hid_size)
        self.conv2 = StoredNormConv(hid_size, out_size)

    def forward(self, g, x):
        return self.conv2(g, F.relu(self.conv1(g, x)))


# --- 6d: the user's own symmetric norm from out-degrees ----------------------------------------------


class MyGCNLayer(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)

    def forward(self, graph, feat):
        with graph.local_scope():
            out_deg = graph.out_degrees().float().clamp(min=1)
            norm_src = torch.pow(out_deg, -0.5).unsqueeze(-1)
            in_deg = graph.in_degrees().float().clamp(min=1)
            norm_dst = torch.pow(in_deg, -0.5).unsqueeze(-1)
            graph.srcdata["h"] = self.linear(feat) * norm_src
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return graph.dstdata["h"] * norm_dst


class SymmetricGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layer1 = MyGCNLayer(in_size, hid_size)
        self.layer2 = MyGCNLayer(hid_size, out_size)

    def forward(self, g, x):
        return self.layer2(g, F.relu(self.layer1(g, x)))


class NormedAttention(nn.Module):
    """A GAT variant with a symmetric norm: source rows scaled by out-degree ** -0.5 before the
    attention, which edge_softmax computes (not followed round by round: kept whole)."""

    def __init__(self, in_dim, out_dim, num_heads=2):
        super().__init__()
        self.h, self.d = num_heads, out_dim
        self.fc = nn.Linear(in_dim, num_heads * out_dim, bias=False)
        self.attn = nn.Parameter(torch.randn(1, num_heads, out_dim) * 0.3)

    def forward(self, graph, feat):
        with graph.local_scope():
            h = self.fc(feat).view(-1, self.h, self.d)
            degs = graph.out_degrees().float().clamp(min=1)
            h = h * degs.pow(-0.5).view(-1, 1, 1)
            graph.srcdata["ft"] = h
            graph.srcdata["el"] = (h * self.attn).sum(-1, keepdim=True)
            graph.dstdata["er"] = graph.srcdata["el"][: graph.num_dst_nodes()]
            graph.apply_edges(fn.u_add_v("el", "er", "e"))
            graph.edata["a"] = edge_softmax(graph, F.leaky_relu(graph.edata["e"], 0.2))
            graph.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "ft"))
            return graph.dstdata["ft"].flatten(1)


class NormedGAT(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.att1 = NormedAttention(in_size, hid_size)
        self.att2 = NormedAttention(2 * hid_size, out_size, num_heads=1)

    def forward(self, g, x):
        return self.att2(g, F.elu(self.att1(g, x)))


# --- 7: propagation loops ----------------------------------------------------------------------------


class LabelPropagation(nn.Module):
    def __init__(self, k, alpha):
        super().__init__()
        self.k, self.alpha = k, alpha

    def forward(self, g, y):
        with g.local_scope():
            y0 = y
            for _ in range(self.k):
                g.ndata["y"] = y
                g.update_all(fn.copy_u("y", "m"), fn.mean("m", "y"))
                y = self.alpha * g.ndata["y"] + (1 - self.alpha) * y0
                y = y.clamp(0, 1)
            return y


class MLPThenLabelPropagation(nn.Module):
    """C&S-style: an MLP's soft predictions smoothed by label propagation."""

    def __init__(self, in_size, out_size, k=3, alpha=0.8):
        super().__init__()
        self.mlp = nn.Linear(in_size, out_size)
        self.lp = LabelPropagation(k, alpha)

    def forward(self, g, x):
        return self.lp(g, torch.softmax(self.mlp(x), dim=-1))


class HopAttention(nn.Module):
    """DAGNN: K rounds of symmetric-normalised propagation, then a learnt score per hop."""

    def __init__(self, in_dim, k):
        super().__init__()
        self.s = nn.Parameter(torch.randn(in_dim, 1) * 0.1)
        self.k = k

    def forward(self, graph, feats):
        with graph.local_scope():
            results = [feats]
            degs = graph.in_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5).unsqueeze(1)
            for _ in range(self.k):
                feats = feats * norm
                graph.ndata["h"] = feats
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                feats = graph.ndata["h"] * norm
                results.append(feats)
            h = torch.stack(results, dim=1)
            s = torch.sigmoid(torch.matmul(h, self.s))
            return torch.matmul(s.permute(0, 2, 1), h).squeeze(1)


class DAGNN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k=3):
        super().__init__()
        self.lin1 = nn.Linear(in_size, hid_size)
        self.lin2 = nn.Linear(hid_size, out_size)
        self.prop = HopAttention(out_size, k)

    def forward(self, g, x):
        return self.prop(g, self.lin2(F.relu(self.lin1(x))))


class GPRProp(nn.Module):
    """GPR-GNN: learnt weights per hop, summed."""

    def __init__(self, k, alpha=0.1):
        super().__init__()
        self.k = k
        gamma = alpha * (1 - alpha) ** torch.arange(k + 1).float()
        gamma[-1] = (1 - alpha) ** k
        self.temp = nn.Parameter(gamma)

    def forward(self, graph, x):
        with graph.local_scope():
            deg = graph.in_degrees().float().clamp(min=1)
            norm = deg.pow(-0.5).view(-1, 1)
            hidden = x * self.temp[0]
            for i in range(self.k):
                graph.ndata["h"] = x * norm
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                x = graph.ndata["h"] * norm
                hidden = hidden + self.temp[i + 1] * x
            return hidden


class GPRGNN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k=3):
        super().__init__()
        self.lin1 = nn.Linear(in_size, hid_size)
        self.lin2 = nn.Linear(hid_size, out_size)
        self.prop = GPRProp(k)

    def forward(self, g, x):
        return self.prop(g, self.lin2(F.relu(self.lin1(x))))


# --- 9: per-node state kept as (1, N, d) -------------------------------------------------------------


class SAGEWithGRUState(nn.Module):
    """A GRU over layers, each node a sequence of its own: the state kept as (1, N, d)."""

    def __init__(self, in_size, hid_size, out_size, num_layers=2):
        super().__init__()
        self.inp = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList([dgl.nn.SAGEConv(hid_size, hid_size, "mean") for _ in range(num_layers)])
        self.gru = nn.GRU(hid_size, hid_size)
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = self.inp(x)
        state = h.unsqueeze(0)
        for conv in self.convs:
            m = F.relu(conv(g, h))
            out, state = self.gru(m.unsqueeze(0), state)
            h = out.squeeze(0)
        return self.out(h)


class SAGEWithLSTMState(nn.Module):
    """An LSTM over layers whose states start from the input's rows, kept as (1, N, d)."""

    def __init__(self, in_size, hid_size, out_size, num_layers=2):
        super().__init__()
        self.inp = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList([dgl.nn.SAGEConv(hid_size, hid_size, "mean") for _ in range(num_layers)])
        self.lstm = nn.LSTM(hid_size, hid_size)
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = self.inp(x)
        hc = (h.unsqueeze(0), torch.zeros_like(h).unsqueeze(0))
        for conv in self.convs:
            out, hc = self.lstm(F.relu(conv(g, h)).unsqueeze(0), hc)
            h = out[0]
        return self.out(h)


class MyRelConvByArgument(nn.Module):
    """MyRelConv with the edge types passed in, as the refusal of MyRelConv suggests."""

    def __init__(self, in_dim, out_dim, num_rels):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_rels, in_dim, out_dim) * 0.1)
        self.loop = nn.Linear(in_dim, out_dim)

    def message(self, edges):
        w = self.weight[edges.data["etype"]]
        return {"m": torch.bmm(edges.src["h"].unsqueeze(1), w).squeeze(1)}

    def forward(self, g, h, etype):
        with g.local_scope():
            g.srcdata["h"] = h
            g.edata["etype"] = etype
            g.update_all(self.message, fn.mean("m", "h"))
            return g.dstdata["h"] + self.loop(h[: g.num_dst_nodes()])


class RelationalNetByArgument(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_rels=3):
        super().__init__()
        self.conv1 = MyRelConvByArgument(in_size, hid_size, num_rels)
        self.conv2 = MyRelConvByArgument(hid_size, out_size, num_rels)

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x, g.edata["etype"]))
        return self.conv2(g, h, g.edata["etype"])


class LabelPropagationWithPostStep(nn.Module):
    """DGL's C&S style: the post-step a function the module keeps, symmetric norm by in-degrees."""

    def __init__(self, k, alpha):
        super().__init__()
        self.k, self.alpha = k, alpha
        self.post_step = lambda y: y.clamp(0.0, 1.0)

    def forward(self, g, y):
        with g.local_scope():
            last = (1 - self.alpha) * y
            degs = g.in_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5).to(y.device).unsqueeze(1)
            for _ in range(self.k):
                g.ndata["h"] = norm * y
                g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                y = self.alpha * g.ndata.pop("h") * norm
                y = self.post_step(last + y)
            return y


class CorrectAndSmooth(nn.Module):
    def __init__(self, in_size, out_size, k=3, alpha=0.9):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)
        self.smooth = LabelPropagationWithPostStep(k, alpha)

    def forward(self, g, x):
        return self.smooth(g, torch.softmax(self.lin(x), dim=-1))


class MaxPoolRounds(nn.Module):
    """Rounds of a Python message and reduce function: not followed round by round."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, g, h):
        with g.local_scope():
            for _ in range(self.k):
                g.ndata["h"] = h
                g.update_all(lambda e: {"m": e.src["h"] * 0.5}, lambda n: {"h": n.mailbox["m"].max(1)[0]})
                h = g.ndata["h"] + h
            return h


class UDFRoundsNet(nn.Module):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)
        self.prop = MaxPoolRounds(2)

    def forward(self, g, x):
        return self.prop(g, self.lin(x))


class NormedRelConv(nn.Module):
    """An R-GCN layer of the old style: edge types passed in, the norm read from the graph's
    edges in its message function; called with an argument beyond the features."""

    def __init__(self, in_dim, out_dim, num_rels):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_rels, in_dim, out_dim) * 0.1)

    def message(self, edges):
        w = self.weight[edges.data["rel"]]
        return {"m": torch.bmm(edges.src["h"].unsqueeze(1), w).squeeze(1) * edges.data["norm"]}

    def forward(self, g, h, etypes):
        with g.local_scope():
            g.srcdata["h"] = h
            g.edata["rel"] = etypes
            g.update_all(self.message, fn.sum("m", "h"))
            return g.dstdata["h"]


class NormedRGCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_rels=3):
        super().__init__()
        self.conv1 = NormedRelConv(in_size, hid_size, num_rels)
        self.conv2 = NormedRelConv(hid_size, out_size, num_rels)

    def forward(self, g, x, etypes):
        return self.conv2(g, F.relu(self.conv1(g, x, etypes)), etypes)


class NormedRGCNByKeyword(NormedRGCN):
    """NormedRGCN calling its layers with the edge types by keyword."""

    def forward(self, g, x, etypes):
        return self.conv2(g, F.relu(self.conv1(g, x, etypes=etypes)), etypes=etypes)


class OpsLabelPropagation(nn.Module):
    """Label propagation written with DGL's sparse operators, clamped in place after each round."""

    def __init__(self, k, alpha):
        super().__init__()
        self.k, self.alpha = k, alpha

    def forward(self, g, y):
        y0 = (1 - self.alpha) * y
        src_norm = g.out_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
        dst_norm = g.in_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
        for _ in range(self.k):
            y = dgl.ops.copy_u_sum(g, y * src_norm) * dst_norm
            y = (y0 + self.alpha * y).clamp_(0.0, 1.0)
        return y


class OpsSmoothing(nn.Module):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)
        self.lp = OpsLabelPropagation(3, 0.9)

    def forward(self, g, x):
        return self.lp(g, torch.softmax(self.lin(x), -1))


class WeightedRounds(nn.Module):
    """Rounds over edge weights forward passes in, each round's sum normalised per node."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, g, h, w):
        with g.local_scope():
            g.edata["w"] = w
            for _ in range(self.k):
                g.srcdata["h"] = h
                g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h"))
                h = F.normalize(g.dstdata["h"], dim=-1)
            return h


class WeightedRoundsNet(nn.Module):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)
        self.prop = WeightedRounds(2)

    def forward(self, g, x, w):
        return self.prop(g, self.lin(x), w)

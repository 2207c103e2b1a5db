"""Fraud-detection models in the styles of BWGNN (squareRoot3/Rethinking-Anomaly-Detection,
BWGNN.py), its multi-graph fork (Ling-Fei-Ren/mlcg-fd, BWGNN.py) and the AWS SageMaker graph fraud
solution (awslabs/sagemaker-graph-fraud-detection, source/sagemaker/dgl-fraud-detection/model.py,
written there for MXNet; here in PyTorch as its readers port it). Our own code, small widths."""

import math

import dgl
import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F


def beta_wavelet_thetas(d):
    """The coefficients of the Beta wavelets x/2^i (1 - x/2)^(d-i) / B(i+1, d+1-i), lowest
    power first (BWGNN computes them with sympy; the same numbers)."""
    thetas = []
    for i in range(d + 1):
        scale = math.gamma(d + 2) / (math.gamma(i + 1) * math.gamma(d + 1 - i))
        coeff = [0.0] * (d + 1)
        for j in range(d - i + 1):
            # (x/2)^i * C(d-i, j) (-x/2)^j
            coeff[i + j] += scale * math.comb(d - i, j) * (-1) ** j / 2 ** (i + j)
        thetas.append(coeff)
    return thetas


class PolyConv(nn.Module):
    """A polynomial of the normalised Laplacian: K rounds of update_all on the graph's own
    ndata, D^-1/2 from in-degrees, the terms summed in place (`h += theta_k * feat`)."""

    def __init__(self, in_feats, out_feats, theta, activation=F.leaky_relu, lin=False, bias=False):
        super().__init__()
        self._theta = theta
        self._k = len(self._theta)
        self.activation = activation
        self.linear = nn.Linear(in_feats, out_feats, bias)
        self.lin = lin

    def forward(self, graph, feat):
        def unnLaplacian(feat, D_invsqrt, graph):
            graph.ndata["h"] = feat * D_invsqrt
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return feat - graph.ndata.pop("h") * D_invsqrt

        with graph.local_scope():
            D_invsqrt = torch.pow(graph.in_degrees().float().clamp(min=1), -0.5).unsqueeze(-1).to(feat.device)
            h = self._theta[0] * feat
            for k in range(1, self._k):
                feat = unnLaplacian(feat, D_invsqrt, graph)
                h += self._theta[k] * feat
        if self.lin:
            h = self.linear(h)
            h = self.activation(h)
        return h


class PolyConvBatch(nn.Module):
    """BWGNN's version for blocks: srcdata written and popped, D^-1/2 from the block's
    out-degrees."""

    def __init__(self, in_feats, out_feats, theta):
        super().__init__()
        self._theta = theta
        self._k = len(self._theta)

    def forward(self, block, feat):
        def unnLaplacian(feat, D_invsqrt, block):
            block.srcdata["h"] = feat * D_invsqrt
            block.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return feat - block.srcdata.pop("h") * D_invsqrt

        with block.local_scope():
            D_invsqrt = torch.pow(block.out_degrees().float().clamp(min=1), -0.5).unsqueeze(-1).to(feat.device)
            h = self._theta[0] * feat
            for k in range(1, self._k):
                feat = unnLaplacian(feat, D_invsqrt, block)
                h += self._theta[k] * feat
        return h


class BWGNN(nn.Module):
    """Follows squareRoot3/Rethinking-Anomaly-Detection BWGNN.py.
    BWGNN.py's BWGNN as its `testlarge(g, in_feat)` calls it: an MLP, the wavelet convs kept in
    a plain Python list (not a ModuleList), their outputs concatenated onto
    `torch.zeros([len(in_feat), 0])`, an MLP head. Constructs: K-round propagation inside a user
    module, graph ndata written in it, in-degrees, `len(in_feat)` rows made in forward."""

    def __init__(self, in_feats, h_feats, num_classes, d=2):
        super().__init__()
        self.thetas = beta_wavelet_thetas(d)
        self.conv = []
        for i in range(len(self.thetas)):
            self.conv.append(PolyConv(h_feats, h_feats, self.thetas[i], lin=False))
        self.linear = nn.Linear(in_feats, h_feats)
        self.linear2 = nn.Linear(h_feats, h_feats)
        self.linear3 = nn.Linear(h_feats * len(self.conv), h_feats)
        self.linear4 = nn.Linear(h_feats, num_classes)
        self.act = nn.ReLU()

    def forward(self, g, in_feat):
        h = self.linear(in_feat)
        h = self.act(h)
        h = self.linear2(h)
        h = self.act(h)
        h_final = torch.zeros([len(in_feat), 0])
        for conv in self.conv:
            h0 = conv(g, h)
            h_final = torch.cat([h_final, h0], -1)
        h = self.linear3(h_final)
        h = self.act(h)
        h = self.linear4(h)
        return h


class BWGNNBatch(nn.Module):
    """Follows squareRoot3/Rethinking-Anomaly-Detection BWGNN.py (batch, PolyConvBatch).
    BWGNN's `batch(blocks, in_feat)` as a forward: every wavelet conv on `blocks[0]` (one hop
    of sampling feeds K rounds), PolyConvBatch reading the block's out-degrees. Constructs:
    `forward(self, blocks, in_feat)` where one block serves several rounds, out-degrees of the
    block's sources."""

    def __init__(self, in_feats, h_feats, num_classes, d=2):
        super().__init__()
        self.thetas = beta_wavelet_thetas(d)
        self.conv = [PolyConvBatch(h_feats, h_feats, theta) for theta in self.thetas]
        self.linear = nn.Linear(in_feats, h_feats)
        self.linear2 = nn.Linear(h_feats, h_feats)
        self.linear3 = nn.Linear(h_feats * len(self.conv), h_feats)
        self.linear4 = nn.Linear(h_feats, num_classes)
        self.act = nn.ReLU()

    def forward(self, blocks, in_feat):
        h = self.linear(in_feat)
        h = self.act(h)
        h = self.linear2(h)
        h = self.act(h)
        h_final = torch.zeros([len(in_feat), 0])
        for conv in self.conv:
            h0 = conv(blocks[0], h)
            h_final = torch.cat([h_final, h0], -1)
        h = self.linear3(h_final)
        h = self.act(h)
        h = self.linear4(h)
        return h


class BWGNNHetero(nn.Module):
    """Follows squareRoot3/Rethinking-Anomaly-Detection BWGNN.py (BWGNN_Hetero).
    BWGNN.py's BWGNN_Hetero on a fraud graph of one node type and several relations (YelpChi's
    R-U-R, R-T-R, R-S-R): `for relation in g.canonical_etypes`, each relation's graph
    `g[relation]`, the wavelet convs on it, and (as the original does) `h` replaced by each
    relation's result before the next relation; the relations' results stacked and summed.
    Constructs: a loop over the graph's schema, relation subgraphs built in forward, K-round
    propagation."""

    def __init__(self, in_feats, h_feats, num_classes, d=2):
        super().__init__()
        self.thetas = beta_wavelet_thetas(d)
        self.conv = [PolyConv(h_feats, h_feats, theta, lin=False) for theta in self.thetas]
        self.linear = nn.Linear(in_feats, h_feats)
        self.linear2 = nn.Linear(h_feats, h_feats)
        self.linear3 = nn.Linear(h_feats * len(self.conv), h_feats)
        self.linear4 = nn.Linear(h_feats, num_classes)
        self.act = nn.LeakyReLU()

    def forward(self, g, in_feat):
        h = self.linear(in_feat)
        h = self.act(h)
        h = self.linear2(h)
        h = self.act(h)
        h_all = []
        for relation in g.canonical_etypes:
            h_final = torch.zeros([len(in_feat), 0])
            for conv in self.conv:
                h0 = conv(g[relation], h)
                h_final = torch.cat([h_final, h0], -1)
            h = self.linear3(h_final)
            h_all.append(h)
        h_all = torch.stack(h_all).sum(0)
        h_all = self.act(h_all)
        h_all = self.linear4(h_all)
        return h_all


class MultiGraphBWGNN(nn.Module):
    """Follows Ling-Fei-Ren/mlcg-fd BWGNN.py (BWGNN_Hetero).
    mlcg-fd's BWGNN_Hetero: one graph per relation given side by side (a list, each with the
    same nodes), per-node sequences through LSTMs (`x[:, -1]`), three inputs mixed, wavelet convs
    of three families on each graph, a softmax over the filters per node, concatenation. The
    attention heads and linears are plain Python lists, as there. Constructs: several graphs used
    side by side, K-round propagation, an LSTM over each node's own sequence."""

    def __init__(self, in_feats_voc, in_feats_sms, in_feats_personal, h_feats, num_classes, n_graphs=3, d=2):
        super().__init__()
        self.attn_fn = nn.Tanh()
        self.lstm_voc = nn.LSTM(in_feats_voc, in_feats_voc, batch_first=True)
        self.lstm_sms = nn.LSTM(in_feats_sms, in_feats_sms, batch_first=True)
        thetas = beta_wavelet_thetas(d)
        self.conv = [PolyConv(h_feats, h_feats, theta) for theta in thetas]
        self.conv_hf = [PolyConv(h_feats, h_feats, [0.5, -0.5])]
        self.conv_lf = [PolyConv(h_feats, h_feats, [0.5, 0.5])]
        self.W_f = [nn.Sequential(nn.Linear(h_feats, h_feats), self.attn_fn, nn.Linear(h_feats, 1, bias=False))
                    for _ in range(n_graphs)]
        self.linear = nn.Linear(in_feats_voc, h_feats)
        self.linear1 = nn.Linear(in_feats_sms, h_feats)
        self.linear2 = nn.Linear(2 * h_feats, h_feats)
        self.linear3 = nn.Linear(2 * h_feats, h_feats)
        self.linear4 = nn.Linear(4 * h_feats, h_feats)
        self.linear5 = [nn.Linear(h_feats, h_feats) for _ in range(n_graphs)]
        self.linear_personal = nn.Linear(in_feats_personal, h_feats)
        self.linear6 = nn.Linear(6 * h_feats, num_classes)
        self.act = nn.LeakyReLU()

    def forward(self, graphs, voc_features, sms_features, personal_feature):
        x_in_voc, _ = self.lstm_voc(voc_features)
        x_in_sms, _ = self.lstm_sms(sms_features)
        x_in_voc = self.linear(x_in_voc[:, -1])
        x_in_sms = self.linear1(x_in_sms[:, -1])
        x_in_personal = self.linear_personal(personal_feature)
        x_in_voc = self.act(torch.cat((x_in_voc, x_in_personal), dim=1))
        x_in_sms = self.act(torch.cat((x_in_sms, x_in_personal), dim=1))
        x_in_voc_sms = torch.cat((x_in_voc, x_in_sms), dim=1)
        x_in_voc = self.act(self.linear2(x_in_voc))
        x_in_sms = self.act(self.linear3(x_in_sms))
        x_in_voc_sms = self.act(self.linear4(x_in_voc_sms))
        x_in = [x_in_voc, x_in_sms, x_in_voc_sms]
        h_all = []
        for relation in range(len(graphs)):
            h_final = []
            for conv in self.conv_lf:
                h_final.append(conv(graphs[relation], x_in[relation]))
            for conv in self.conv:
                h_final.append(conv(graphs[relation], x_in[relation]))
            for conv in self.conv_hf:
                h_final.append(conv(graphs[relation], x_in[relation]))
            h_filters = torch.stack(h_final, dim=1)
            h_filters_proj = self.W_f[relation](h_filters)
            soft_score = F.softmax(h_filters_proj, dim=1)
            res = (soft_score * h_filters).sum(1)
            h_all.append(self.linear5[relation](res))
        h_all = torch.cat((h_all[0], h_all[1], h_all[2]), dim=1)
        h_all = self.act(h_all)
        h_all = torch.cat((h_all, x_in[0], x_in[1], x_in[2]), dim=1)
        return self.linear6(h_all)


class HeteroRGCNLayer(nn.Module):
    """A Linear per relation, the source rows written to `G.nodes[srctype].data['Wh_<etype>']`,
    `multi_update_all` with a mean per relation and a sum across, the results read back for the
    types that got one (`if 'h' in G.nodes[ntype].data`)."""

    def __init__(self, in_size, out_size, etypes):
        super().__init__()
        self.weight = nn.ModuleDict({name: nn.Linear(in_size, out_size) for name in etypes})

    def forward(self, G, feat_dict):
        funcs = {}
        for srctype, etype, dsttype in G.canonical_etypes:
            if srctype in feat_dict:
                Wh = self.weight[etype](feat_dict[srctype])
                G.nodes[srctype].data["Wh_%s" % etype] = Wh
                funcs[etype] = (fn.copy_u("Wh_%s" % etype, "m"), fn.mean("m", "h"))
        G.multi_update_all(funcs, "sum")
        return {ntype: G.nodes[ntype].data["h"] for ntype in G.ntypes if "h" in G.nodes[ntype].data}


class HeteroRGCN(nn.Module):
    """Follows awslabs/sagemaker-graph-fraud-detection source/sagemaker/dgl-fraud-detection/model.py.
    The SageMaker fraud solution's HeteroRGCN: learnt embeddings for every node type but the
    target's, the target's features given, its own relation layer (graph data written outside a
    local scope, `multi_update_all`), a leaky ReLU over the dict between layers, a Linear on the
    target's rows. Constructs: `'h' in G.nodes[ntype].data` and `srctype in feat_dict` on the
    schema, per-type dict comprehensions, graph writes in a user layer."""

    def __init__(self, num_nodes, in_size, hidden_size, out_size, n_layers, embedding_size, etypes,
                 target="target"):
        super().__init__()
        self.target = target
        self.embed = nn.ParameterDict(
            {ntype: nn.Parameter(torch.randn(n, embedding_size) * 0.1) for ntype, n in num_nodes.items()}
        )
        self.layers = nn.ModuleList()
        self.layers.append(HeteroRGCNLayer(embedding_size, hidden_size, etypes))
        for _ in range(n_layers - 1):
            self.layers.append(HeteroRGCNLayer(hidden_size, hidden_size, etypes))
        self.layers.append(nn.Linear(hidden_size, out_size))

    def forward(self, g, features):
        h_dict = {ntype: emb for ntype, emb in self.embed.items()}
        h_dict[self.target] = features
        for i, layer in enumerate(self.layers[:-1]):
            if i != 0:
                h_dict = {k: F.leaky_relu(h) for k, h in h_dict.items()}
            h_dict = layer(g, h_dict)
        return self.layers[-1](h_dict[self.target])

"""Self-supervised encoders in the styles of GraphMAE (THUDM/GraphMAE, graphmae/models/gat.py and
edcoder.py), CCA-SSG (hengruizhang98/CCA-SSG, model.py) and GGD
(zyzisastudyreallyhardguy/Graph-Group-Discrimination, GGD_ogbn_arxiv_1epoch/ggd.py). Our own code,
small widths."""

import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


def create_activation(name):
    if name == "relu":
        return nn.ReLU()
    if name == "prelu":
        return nn.PReLU()
    if name == "elu":
        return nn.ELU()
    if name is None:
        return nn.Identity()
    raise NotImplementedError(f"{name} is not implemented.")


class GraphMAEGAT(nn.Module):
    """Follows THUDM/GraphMAE graphmae/models/gat.py.
    GraphMAE's GAT encoder: `forward(self, g, inputs, return_hidden=False)`, a last activation
    that is None unless encoding (`if self.last_activation:`), heads concatenated or averaged by a
    flag, a list of every layer's output returned when asked, an nn.Identity head. Constructs:
    a flag default that changes what forward returns, Optional modules tested in forward,
    dgl.nn.GATConv (which refuses nodes without in-edges; GraphMAE adds self-loops to its
    graphs)."""

    def __init__(self, in_dim, num_hidden, out_dim, num_layers, nhead, nhead_out, activation,
                 residual, concat_out=True, encoding=False):
        super().__init__()
        self.num_layers = num_layers
        self.concat_out = concat_out
        self.gat_layers = nn.ModuleList()
        self.activation = create_activation(activation)
        self.last_activation = create_activation(activation) if encoding else None
        last_residual = encoding and residual
        if num_layers == 1:
            self.gat_layers.append(dglnn.GATConv(in_dim, out_dim, nhead_out, residual=last_residual))
        else:
            self.gat_layers.append(dglnn.GATConv(in_dim, num_hidden, nhead, residual=residual))
            for _ in range(1, num_layers - 1):
                self.gat_layers.append(dglnn.GATConv(num_hidden * nhead, num_hidden, nhead, residual=residual))
            self.gat_layers.append(dglnn.GATConv(num_hidden * nhead, out_dim, nhead_out,
                                                 residual=last_residual))
        self.head = nn.Identity()

    def forward(self, g, inputs, return_hidden=False):
        h = inputs
        hidden_list = []
        for l in range(self.num_layers):
            h = self.gat_layers[l](g, h)
            h = h.flatten(1) if self.concat_out else h.mean(1)
            if l == self.num_layers - 1:
                if self.last_activation:
                    h = self.last_activation(h)
            else:
                h = self.activation(h)
            hidden_list.append(h)
        if return_hidden:
            return self.head(h), hidden_list
        else:
            return self.head(h)


class GraphMAEPreModel(nn.Module):
    """Follows THUDM/GraphMAE graphmae/models/edcoder.py.
    GraphMAE's PreModel (edcoder.py) forward: a random share of the nodes masked
    (`torch.randperm`), a learnt mask token put on their rows, the encoder, a Linear to the
    decoder, the masked rows zeroed again, the decoder's reconstruction. Random in forward:
    exact inference is not possible (its `embed` method is the inference path). Constructs:
    randomness in forward, rows indexed by random node IDs, a nested encoder and decoder."""

    def __init__(self, in_dim, num_hidden, mask_rate=0.5):
        super().__init__()
        self._mask_rate = mask_rate
        self.encoder = GraphMAEGAT(in_dim, num_hidden, num_hidden, 2, 2, 1, "prelu", True, encoding=True)
        self.decoder = GraphMAEGAT(num_hidden, num_hidden, in_dim, 1, 2, 1, "prelu", True, encoding=False)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.encoder_to_decoder = nn.Linear(num_hidden, num_hidden, bias=False)

    def encoding_mask_noise(self, g, x, mask_rate=0.3):
        num_nodes = g.num_nodes()
        perm = torch.randperm(num_nodes, device=x.device)
        num_mask_nodes = int(mask_rate * num_nodes)
        mask_nodes = perm[:num_mask_nodes]
        keep_nodes = perm[num_mask_nodes:]
        out_x = x.clone()
        out_x[mask_nodes] = 0.0
        out_x[mask_nodes] += self.enc_mask_token
        return g, out_x, (mask_nodes, keep_nodes)

    def forward(self, g, x):
        pre_use_g, use_x, (mask_nodes, keep_nodes) = self.encoding_mask_noise(g, x, self._mask_rate)
        enc_rep = self.encoder(pre_use_g, use_x)
        rep = self.encoder_to_decoder(enc_rep)
        rep[mask_nodes] = 0
        return self.decoder(pre_use_g, rep)


class GCN(nn.Module):
    """CCA-SSG's backbone: GraphConv(norm='both'), ReLU between, the last conv as `convs[-1]`."""

    def __init__(self, in_dim, hid_dim, out_dim, n_layers):
        super().__init__()
        self.n_layers = n_layers
        self.convs = nn.ModuleList()
        self.convs.append(dglnn.GraphConv(in_dim, hid_dim, norm="both", allow_zero_in_degree=True))
        if n_layers > 1:
            for _ in range(n_layers - 2):
                self.convs.append(dglnn.GraphConv(hid_dim, hid_dim, norm="both", allow_zero_in_degree=True))
            self.convs.append(dglnn.GraphConv(hid_dim, out_dim, norm="both", allow_zero_in_degree=True))

    def forward(self, graph, x):
        for i in range(self.n_layers - 1):
            x = F.relu(self.convs[i](graph, x))
        x = self.convs[-1](graph, x)
        return x


class CCASSG(nn.Module):
    """Follows hengruizhang98/CCA-SSG model.py.
    CCA-SSG's model: the same backbone on two graphs with their own features (two augmented
    views), each result standardised over all nodes (`(h - h.mean(0)) / h.std(0)`), both
    returned. Constructs: two graph parameters used side by side, reductions over all nodes."""

    def __init__(self, in_dim, hid_dim, out_dim, n_layers):
        super().__init__()
        self.backbone = GCN(in_dim, hid_dim, out_dim, n_layers)

    def forward(self, graph1, feat1, graph2, feat2):
        h1 = self.backbone(graph1, feat1)
        h2 = self.backbone(graph2, feat2)
        z1 = (h1 - h1.mean(0)) / h1.std(0)
        z2 = (h2 - h2.mean(0)) / h2.std(0)
        return z1, z2


class CCASSGMLP(nn.Module):
    """Follows hengruizhang98/CCA-SSG model.py (MLP backbone).
    CCA-SSG's MLP backbone (`use_mlp=True`): `forward(self, _, x)`, the graph taken and not
    used, a Linear, BatchNorm, ReLU, Linear. Constructs: a graph parameter nobody reads."""

    def __init__(self, nfeat, nhid, nclass, use_bn=True):
        super().__init__()
        self.layer1 = nn.Linear(nfeat, nhid, bias=True)
        self.layer2 = nn.Linear(nhid, nclass, bias=True)
        self.bn = nn.BatchNorm1d(nhid)
        self.use_bn = use_bn
        self.act_fn = nn.ReLU()

    def forward(self, _, x):
        x = self.layer1(x)
        if self.use_bn:
            x = self.bn(x)
        x = self.act_fn(x)
        return self.layer2(x)


class GGD(nn.Module):
    """Follows zyzisastudyreallyhardguy/Graph-Group-Discrimination GGD_ogbn_arxiv_1epoch/ggd.py.
    GGD's encoder with its embedding step in one forward: `corrupt=False` by default (a
    `torch.randperm` shuffle of the rows only when asked), a GCN, then ten rounds of symmetric
    propagation written in forward itself (`g.ndata['h2'] = feat`, update_all, `g.ndata.pop`),
    in-degree norms, the propagated rows kept as `feat.unsqueeze(0)` (rows on axis 1) and both
    embeddings returned. Constructs: a flag default guarding randomness, a propagation loop in
    forward, in-degrees, rows on another axis."""

    def __init__(self, in_feats, n_hidden, n_layers, num_hop=10):
        super().__init__()
        self.num_hop = num_hop
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.GraphConv(in_feats, n_hidden, activation=nn.PReLU(n_hidden),
                                           allow_zero_in_degree=True))
        for _ in range(n_layers - 1):
            self.layers.append(dglnn.GraphConv(n_hidden, n_hidden, activation=nn.PReLU(n_hidden),
                                               allow_zero_in_degree=True))

    def forward(self, g, features, corrupt=False):
        if corrupt:
            perm = torch.randperm(g.number_of_nodes())
            features = features[perm]
        h_1 = features
        for layer in self.layers:
            h_1 = layer(g, h_1)
        feat = h_1.clone().squeeze(0)
        degs = g.in_degrees().float().clamp(min=1)
        norm = torch.pow(degs, -0.5)
        norm = norm.to(h_1.device).unsqueeze(1)
        for _ in range(self.num_hop):
            feat = feat * norm
            g.ndata["h2"] = feat
            g.update_all(fn.copy_u("h2", "m"), fn.sum("m", "h2"))
            feat = g.ndata.pop("h2")
            feat = feat * norm
        h_2 = feat.unsqueeze(0)
        return h_1.detach(), h_2.detach()

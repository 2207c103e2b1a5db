"""Node-classification nets in the style of benchmarking-gnns (graphdeeplearning/benchmarking-gnns,
nets/SBMs_node_classification/*.py, nets/WikiCS_node_classification/*.py and layers/*.py): an input
embedding (nn.Embedding of integer node labels on SBM, a Linear on WikiCS), layers that write
`g.ndata` and `g.edata` without a local scope, Python message and reduce functions, `apply_nodes`
with a module, flags read in forward, an MLPReadout per node. Our own code, small widths."""

import dgl
import dgl.function as fn
import torch
import torch.nn as nn
import torch.nn.functional as F

# the GCN layer's message and reduce, built once at import as the project does
msg = fn.copy_u("h", "m")
reduce = fn.mean("m", "h")


class MLPReadout(nn.Module):
    """Per-node head: Linear layers halving the width, ReLU between."""

    def __init__(self, input_dim, output_dim, L=2):
        super().__init__()
        list_FC_layers = [nn.Linear(input_dim // 2 ** l, input_dim // 2 ** (l + 1), bias=True) for l in range(L)]
        list_FC_layers.append(nn.Linear(input_dim // 2 ** L, output_dim, bias=True))
        self.FC_layers = nn.ModuleList(list_FC_layers)
        self.L = L

    def forward(self, x):
        y = x
        for l in range(self.L):
            y = self.FC_layers[l](y)
            y = F.relu(y)
        return self.FC_layers[self.L](y)


class GatedGCNLayer(nn.Module):
    """Residual gated graph conv: five Linears, ndata/edata written on the graph itself,
    u_add_v then two update_all (weighted sum and sum of gates), BatchNorm on nodes and edges,
    residuals on both; returns (h, e)."""

    def __init__(self, input_dim, output_dim, dropout, batch_norm, residual=False):
        super().__init__()
        self.dropout = dropout
        self.batch_norm = batch_norm
        self.residual = residual
        if input_dim != output_dim:
            self.residual = False
        self.A = nn.Linear(input_dim, output_dim, bias=True)
        self.B = nn.Linear(input_dim, output_dim, bias=True)
        self.C = nn.Linear(input_dim, output_dim, bias=True)
        self.D = nn.Linear(input_dim, output_dim, bias=True)
        self.E = nn.Linear(input_dim, output_dim, bias=True)
        self.bn_node_h = nn.BatchNorm1d(output_dim)
        self.bn_node_e = nn.BatchNorm1d(output_dim)

    def forward(self, g, h, e):
        h_in = h
        e_in = e
        g.ndata["h"] = h
        g.ndata["Ah"] = self.A(h)
        g.ndata["Bh"] = self.B(h)
        g.ndata["Dh"] = self.D(h)
        g.ndata["Eh"] = self.E(h)
        g.edata["e"] = e
        g.edata["Ce"] = self.C(e)
        g.apply_edges(fn.u_add_v("Dh", "Eh", "DEh"))
        g.edata["e"] = g.edata["DEh"] + g.edata["Ce"]
        g.edata["sigma"] = torch.sigmoid(g.edata["e"])
        g.update_all(fn.u_mul_e("Bh", "sigma", "m"), fn.sum("m", "sum_sigma_h"))
        g.update_all(fn.copy_e("sigma", "m"), fn.sum("m", "sum_sigma"))
        g.ndata["h"] = g.ndata["Ah"] + g.ndata["sum_sigma_h"] / (g.ndata["sum_sigma"] + 1e-6)
        h = g.ndata["h"]
        e = g.edata["e"]
        if self.batch_norm:
            h = self.bn_node_h(h)
            e = self.bn_node_e(e)
        h = F.relu(h)
        e = F.relu(e)
        if self.residual:
            h = h_in + h
            e = e_in + e
        h = F.dropout(h, self.dropout, training=self.training)
        e = F.dropout(e, self.dropout, training=self.training)
        return h, e


class GatedGCNNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/SBMs_node_classification/gated_gcn_net.py, layers/gated_gcn_layer.py.
    nets/SBMs_node_classification/gated_gcn_net.py: integer node labels through nn.Embedding,
    a float edge feature through a Linear, `h_pos_enc=None` with `if self.pos_enc:`, the layers
    threading (h, e), an MLPReadout. Constructs: an integer input, a default None parameter, a
    flag, edge state carried from layer to layer, ndata/edata written in user layers."""

    def __init__(self, in_dim, hidden_dim, n_classes, n_layers, batch_norm=True, residual=True, pos_enc=False,
                 pos_enc_dim=4):
        super().__init__()
        self.pos_enc = pos_enc
        if self.pos_enc:
            self.embedding_pos_enc = nn.Linear(pos_enc_dim, hidden_dim)
        self.embedding_h = nn.Embedding(in_dim, hidden_dim)
        self.embedding_e = nn.Linear(1, hidden_dim)
        self.layers = nn.ModuleList(
            [GatedGCNLayer(hidden_dim, hidden_dim, 0.0, batch_norm, residual) for _ in range(n_layers)]
        )
        self.MLP_layer = MLPReadout(hidden_dim, n_classes)

    def forward(self, g, h, e, h_pos_enc=None):
        h = self.embedding_h(h)
        if self.pos_enc:
            h_pos_enc = self.embedding_pos_enc(h_pos_enc.float())
            h = h + h_pos_enc
        e = self.embedding_e(e)
        for conv in self.layers:
            h, e = conv(g, h, e)
        return self.MLP_layer(h)


class GatedGCNLayerIsotropic(nn.Module):
    """The isotropic variant: no gates, a sum of B h over in-neighbours, e passed through."""

    def __init__(self, input_dim, output_dim, dropout, batch_norm, residual=False):
        super().__init__()
        self.dropout = dropout
        self.batch_norm = batch_norm
        self.residual = residual and input_dim == output_dim
        self.A = nn.Linear(input_dim, output_dim, bias=True)
        self.B = nn.Linear(input_dim, output_dim, bias=True)
        self.bn_node_h = nn.BatchNorm1d(output_dim)

    def forward(self, g, h, e):
        h_in = h
        g.ndata["h"] = h
        g.ndata["Ah"] = self.A(h)
        g.ndata["Bh"] = self.B(h)
        g.update_all(fn.copy_u("Bh", "m"), fn.sum("m", "sum_h"))
        g.ndata["h"] = g.ndata["Ah"] + g.ndata["sum_h"]
        h = g.ndata["h"]
        if self.batch_norm:
            h = self.bn_node_h(h)
        h = F.relu(h)
        if self.residual:
            h = h_in + h
        h = F.dropout(h, self.dropout, training=self.training)
        return h, e


class GatedGCNIsotropicNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/WikiCS_node_classification/gated_gcn_net.py, layers/gated_gcn_layer.py.
    nets/WikiCS_node_classification/gated_gcn_net.py with the isotropic layer: float node
    features through a Linear, the edge features handed through every layer unused. Constructs:
    an input that flows through forward without being read, ndata written in user layers."""

    def __init__(self, in_dim, hidden_dim, n_classes, n_layers):
        super().__init__()
        self.embedding_h = nn.Linear(in_dim, hidden_dim)
        self.layers = nn.ModuleList(
            [GatedGCNLayerIsotropic(hidden_dim, hidden_dim, 0.0, True, True) for _ in range(n_layers)]
        )
        self.MLP_layer = MLPReadout(hidden_dim, n_classes)

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        for conv in self.layers:
            h, e = conv(g, h, e)
        return self.MLP_layer(h)


class GMMLayer(nn.Module):
    """MoNet's Gaussian mixture conv: fc to kernel * out, Gaussian weights of the edges' pseudo
    coordinates (`pseudo.view(E, 1, dim)` with E = g.number_of_edges()), u_mul_e, sum over
    kernels, BatchNorm, ReLU, residual, bias."""

    def __init__(self, in_dim, out_dim, dim, kernel, batch_norm, residual=False):
        super().__init__()
        self.out_dim = out_dim
        self.dim = dim
        self.kernel = kernel
        self.batch_norm = batch_norm
        self.residual = residual and in_dim == out_dim
        self.mu = nn.Parameter(torch.Tensor(kernel, dim))
        self.inv_sigma = nn.Parameter(torch.Tensor(kernel, dim))
        self.fc = nn.Linear(in_dim, kernel * out_dim, bias=False)
        self.bn_node_h = nn.BatchNorm1d(out_dim)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        nn.init.xavier_normal_(self.fc.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.normal_(self.mu.data, 0, 0.1)
        nn.init.constant_(self.inv_sigma.data, 1)

    def forward(self, g, h, pseudo):
        h_in = h
        g = g.local_var()
        g.ndata["h"] = self.fc(h).view(-1, self.kernel, self.out_dim)
        E = g.number_of_edges()
        gaussian = -0.5 * ((pseudo.view(E, 1, self.dim) - self.mu.view(1, self.kernel, self.dim)) ** 2)
        gaussian = gaussian * (self.inv_sigma.view(1, self.kernel, self.dim) ** 2)
        gaussian = torch.exp(gaussian.sum(dim=-1, keepdim=True))
        g.edata["w"] = gaussian
        g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h"))
        h = g.ndata["h"].sum(1)
        if self.batch_norm:
            h = self.bn_node_h(h)
        h = F.relu(h)
        if self.residual:
            h = h_in + h
        return h + self.bias


class MoNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/SBMs_node_classification/mo_net.py, layers/gmm_layer.py.
    nets/SBMs_node_classification/mo_net.py: `g.ndata['deg'] = g.in_degrees()`, pseudo
    coordinates made by `g.apply_edges(self.compute_pseudo)` (a Python edge function of both
    ends' degrees), a Linear+Tanh per layer on them, GMM layers. Constructs: graph-only values
    (degrees, per-edge pseudo coordinates) made in forward, a Python edge function, edge-level
    inputs to a user layer."""

    def __init__(self, in_dim, hidden_dim, out_dim, n_classes, kernel, dim, n_layers):
        super().__init__()
        self.embedding_h = nn.Embedding(in_dim, hidden_dim)
        self.layers = nn.ModuleList()
        self.pseudo_proj = nn.ModuleList()
        for _ in range(n_layers - 1):
            self.layers.append(GMMLayer(hidden_dim, hidden_dim, dim, kernel, True, True))
            self.pseudo_proj.append(nn.Sequential(nn.Linear(2, dim), nn.Tanh()))
        self.layers.append(GMMLayer(hidden_dim, out_dim, dim, kernel, True, True))
        self.pseudo_proj.append(nn.Sequential(nn.Linear(2, dim), nn.Tanh()))
        self.MLP_layer = MLPReadout(out_dim, n_classes)

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        g.ndata["deg"] = g.in_degrees()
        g.apply_edges(self.compute_pseudo)
        pseudo = g.edata["pseudo"].float()
        for i in range(len(self.layers)):
            h = self.layers[i](g, h, self.pseudo_proj[i](pseudo))
        return self.MLP_layer(h)

    def compute_pseudo(self, edges):
        srcs = 1 / torch.sqrt(edges.src["deg"].float() + 1)
        dsts = 1 / torch.sqrt(edges.dst["deg"].float() + 1)
        pseudo = torch.cat((srcs.unsqueeze(-1), dsts.unsqueeze(-1)), dim=1)
        return {"pseudo": pseudo}


class NodeApplyModule(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)

    def forward(self, node):
        h = self.linear(node.data["h"])
        return {"h": h}


class GCNLayer(nn.Module):
    """layers/gcn_layer.py with dgl_builtin=False: module-level `msg`/`reduce`, a mean over
    in-neighbours written to g.ndata, then `g.apply_nodes(func=self.apply_mod)` with a module."""

    def __init__(self, in_dim, out_dim, activation, dropout, batch_norm, residual=False, dgl_builtin=False):
        super().__init__()
        self.batch_norm = batch_norm
        self.residual = residual and in_dim == out_dim
        self.dgl_builtin = dgl_builtin
        self.batchnorm_h = nn.BatchNorm1d(out_dim)
        self.activation = activation
        self.dropout = nn.Dropout(dropout)
        if self.dgl_builtin == False:
            self.apply_mod = NodeApplyModule(in_dim, out_dim)
        else:
            self.conv = dgl.nn.GraphConv(in_dim, out_dim, allow_zero_in_degree=True)

    def forward(self, g, feature):
        h_in = feature
        if self.dgl_builtin == False:
            g.ndata["h"] = feature
            g.update_all(msg, reduce)
            g.apply_nodes(func=self.apply_mod)
            h = g.ndata["h"]
        else:
            h = self.conv(g, feature)
        if self.batch_norm:
            h = self.batchnorm_h(h)
        if self.activation:
            h = self.activation(h)
        if self.residual:
            h = h_in + h
        return self.dropout(h)


class GCNNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/WikiCS_node_classification/gcn_net.py, layers/gcn_layer.py.
    nets/WikiCS_node_classification/gcn_net.py: a Linear input embedding, an input dropout,
    GCN layers of the project's own (dgl_builtin=False), an MLPReadout; `e` taken and unused.
    Constructs: `g.apply_nodes` with a module, `== False` on a flag, an unused edge input."""

    def __init__(self, in_dim, hidden_dim, out_dim, n_classes, n_layers):
        super().__init__()
        self.embedding_h = nn.Linear(in_dim, hidden_dim)
        self.in_feat_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList(
            [GCNLayer(hidden_dim, hidden_dim, F.relu, 0.0, True, True) for _ in range(n_layers - 1)]
        )
        self.layers.append(GCNLayer(hidden_dim, out_dim, F.relu, 0.0, True, True))
        self.MLP_layer = MLPReadout(out_dim, n_classes)

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        h = self.in_feat_dropout(h)
        for conv in self.layers:
            h = conv(g, h)
        return self.MLP_layer(h)


class GCNGraphClassifier(GCNNet):
    """Follows graphdeeplearning/benchmarking-gnns nets/TUs_graph_classification/gcn_net.py.
    nets/TUs_graph_classification/gcn_net.py: the same layers, then `dgl.mean_nodes` over
    each graph of a batch and the MLPReadout on the graph embeddings. A whole-graph readout:
    exact layer-wise inference of the result is not possible (the node part is). Constructs: a
    readout over each graph of a batch after node-level layers."""

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        for conv in self.layers:
            h = conv(g, h)
        g.ndata["h"] = h
        hg = dgl.mean_nodes(g, "h")
        return self.MLP_layer(hg)


class NodeApply(nn.Module):
    """GraphSAGE's node update: concat(h, c), Linear, L2 normalisation, activation."""

    def __init__(self, in_feats, out_feats, activation, bias=True):
        super().__init__()
        self.linear = nn.Linear(in_feats * 2, out_feats, bias)
        self.activation = activation

    def concat(self, h, aggre_result):
        bundle = torch.cat((h, aggre_result), 1)
        return self.linear(bundle)

    def forward(self, node):
        h = node.data["h"]
        c = node.data["c"]
        bundle = self.concat(h, c)
        bundle = F.normalize(bundle, p=2, dim=1)
        if self.activation:
            bundle = self.activation(bundle)
        return {"h": bundle}


class MaxPoolAggregator(nn.Module):
    def __init__(self, in_feats, out_feats, activation, bias):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats, bias=bias)
        self.activation = activation


class GraphSageLayer(nn.Module):
    """layers/graphsage_layer.py: ndata written, `update_all(copy_u, max or mean, self.nodeapply)`
    with a module as the apply function, the aggregator's Linear applied through g.ndata first
    for maxpool."""

    def __init__(self, in_feats, out_feats, activation, aggregator_type, batch_norm, residual=False):
        super().__init__()
        self.aggregator_type = aggregator_type
        self.batch_norm = batch_norm
        self.residual = residual and in_feats == out_feats
        self.nodeapply = NodeApply(in_feats, out_feats, activation)
        if aggregator_type == "maxpool":
            self.aggregator = MaxPoolAggregator(in_feats, in_feats, activation, True)
        if self.batch_norm:
            self.batchnorm_h = nn.BatchNorm1d(out_feats)

    def forward(self, g, h):
        h_in = h
        g.ndata["h"] = h
        if self.aggregator_type == "maxpool":
            g.ndata["h"] = self.aggregator.linear(g.ndata["h"])
            g.ndata["h"] = self.aggregator.activation(g.ndata["h"])
            g.update_all(fn.copy_u("h", "m"), fn.max("m", "c"), self.nodeapply)
        else:
            g.update_all(fn.copy_u("h", "m"), fn.mean("m", "c"), self.nodeapply)
        h = g.ndata["h"]
        if self.batch_norm:
            h = self.batchnorm_h(h)
        if self.residual:
            h = h_in + h
        return h


class GraphSageNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/SBMs_node_classification/graphsage_net.py, layers/graphsage_layer.py.
    nets/SBMs_node_classification/graphsage_net.py: nn.Embedding of node labels, GraphSage
    layers of the project's own (maxpool), an MLPReadout. Constructs: update_all with an
    apply-node module, ndata rewritten between, an integer input."""

    def __init__(self, in_dim, hidden_dim, n_classes, n_layers, aggregator_type="maxpool"):
        super().__init__()
        self.embedding_h = nn.Embedding(in_dim, hidden_dim)
        self.layers = nn.ModuleList(
            [GraphSageLayer(hidden_dim, hidden_dim, F.relu, aggregator_type, True, True) for _ in range(n_layers)]
        )
        self.MLP_layer = MLPReadout(hidden_dim, n_classes)

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        for conv in self.layers:
            h = conv(g, h)
        return self.MLP_layer(h)


class MLP(nn.Module):
    """GIN's MLP: a Linear alone when num_layers == 1 (`self.linear_or_not`), else Linears with
    BatchNorm and ReLU."""

    def __init__(self, num_layers, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.linear_or_not = True
        self.num_layers = num_layers
        self.output_dim = output_dim
        self.input_dim = input_dim
        if num_layers == 1:
            self.linear = nn.Linear(input_dim, output_dim)
        else:
            self.linear_or_not = False
            self.linears = nn.ModuleList()
            self.batch_norms = nn.ModuleList()
            self.linears.append(nn.Linear(input_dim, hidden_dim))
            for _ in range(num_layers - 2):
                self.linears.append(nn.Linear(hidden_dim, hidden_dim))
            self.linears.append(nn.Linear(hidden_dim, output_dim))
            for _ in range(num_layers - 1):
                self.batch_norms.append(nn.BatchNorm1d(hidden_dim))

    def forward(self, x):
        if self.linear_or_not:
            return self.linear(x)
        h = x
        for i in range(self.num_layers - 1):
            h = F.relu(self.batch_norms[i](self.linears[i](h)))
        return self.linears[-1](h)


class ApplyNodeFunc(nn.Module):
    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, h):
        return self.mlp(h)


class GINLayer(nn.Module):
    """layers/gin_layer.py: `g.local_var()`, a reducer picked by name at construction, a
    registered `eps` buffer, `(1 + self.eps) * h + g.ndata['neigh']`, the MLP, BatchNorm, ReLU,
    residual."""

    def __init__(self, apply_func, aggr_type, batch_norm, residual=False, init_eps=0, learn_eps=False):
        super().__init__()
        self.apply_func = apply_func
        if aggr_type == "sum":
            self._reducer = fn.sum
        elif aggr_type == "max":
            self._reducer = fn.max
        elif aggr_type == "mean":
            self._reducer = fn.mean
        else:
            raise KeyError("Aggregator type {} not recognized.".format(aggr_type))
        self.batch_norm = batch_norm
        in_dim = apply_func.mlp.input_dim
        out_dim = apply_func.mlp.output_dim
        self.residual = residual and in_dim == out_dim
        if learn_eps:
            self.eps = nn.Parameter(torch.FloatTensor([init_eps]))
        else:
            self.register_buffer("eps", torch.FloatTensor([init_eps]))
        self.bn_node_h = nn.BatchNorm1d(out_dim)

    def forward(self, g, h):
        h_in = h
        g = g.local_var()
        g.ndata["h"] = h
        g.update_all(fn.copy_u("h", "m"), self._reducer("m", "neigh"))
        h = (1 + self.eps) * h + g.ndata["neigh"]
        if self.apply_func is not None:
            h = self.apply_func(h)
        if self.batch_norm:
            h = self.bn_node_h(h)
        h = F.relu(h)
        if self.residual:
            h = h_in + h
        return h


class GINNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/SBMs_node_classification/gin_net.py, layers/gin_layer.py.
    nets/SBMs_node_classification/gin_net.py: nn.Embedding input, GIN layers, a prediction
    Linear per layer's output (the input's too) summed into `score_over_layer = 0` with `+=`.
    Constructs: every layer's output read at the end (jumping-knowledge sum), an int 0 start."""

    def __init__(self, in_dim, hidden_dim, n_classes, n_layers, n_mlp_layers=2, learn_eps=True,
                 neighbor_aggr_type="sum"):
        super().__init__()
        self.n_layers = n_layers
        self.ginlayers = nn.ModuleList()
        self.embedding_h = nn.Embedding(in_dim, hidden_dim)
        for _ in range(self.n_layers):
            mlp = MLP(n_mlp_layers, hidden_dim, hidden_dim, hidden_dim)
            self.ginlayers.append(GINLayer(ApplyNodeFunc(mlp), neighbor_aggr_type, True, True, 0, learn_eps))
        self.linears_prediction = nn.ModuleList()
        for _ in range(self.n_layers + 1):
            self.linears_prediction.append(nn.Linear(hidden_dim, n_classes))

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        hidden_rep = [h]
        for i in range(self.n_layers):
            h = self.ginlayers[i](g, h)
            hidden_rep.append(h)
        score_over_layer = 0
        for i, h in enumerate(hidden_rep):
            score_over_layer += self.linears_prediction[i](h)
        return score_over_layer


class GATHeadLayer(nn.Module):
    """layers/gat_layer.py's head: Python edge attention (`apply_edges(self.edge_attention)`),
    a Python message and a mailbox softmax in the reduce."""

    def __init__(self, in_dim, out_dim, batch_norm):
        super().__init__()
        self.batch_norm = batch_norm
        self.fc = nn.Linear(in_dim, out_dim, bias=False)
        self.attn_fc = nn.Linear(2 * out_dim, 1, bias=False)
        self.batchnorm_h = nn.BatchNorm1d(out_dim)

    def edge_attention(self, edges):
        z2 = torch.cat([edges.src["z"], edges.dst["z"]], dim=1)
        a = self.attn_fc(z2)
        return {"e": F.leaky_relu(a)}

    def message_func(self, edges):
        return {"z": edges.src["z"], "e": edges.data["e"]}

    def reduce_func(self, nodes):
        alpha = F.softmax(nodes.mailbox["e"], dim=1)
        h = torch.sum(alpha * nodes.mailbox["z"], dim=1)
        return {"h": h}

    def forward(self, g, h):
        z = self.fc(h)
        g.ndata["z"] = z
        g.apply_edges(self.edge_attention)
        g.update_all(self.message_func, self.reduce_func)
        h = g.ndata["h"]
        if self.batch_norm:
            h = self.batchnorm_h(h)
        return F.elu(h)


class GATLayer(nn.Module):
    def __init__(self, in_dim, out_dim, num_heads, batch_norm, residual=False):
        super().__init__()
        self.residual = residual and in_dim == out_dim * num_heads
        self.heads = nn.ModuleList([GATHeadLayer(in_dim, out_dim, batch_norm) for _ in range(num_heads)])
        self.merge = "cat"

    def forward(self, g, h):
        h_in = h
        head_outs = [attn_head(g, h) for attn_head in self.heads]
        if self.merge == "cat":
            h = torch.cat(head_outs, dim=1)
        else:
            h = torch.mean(torch.stack(head_outs))
        if self.residual:
            h = h_in + h
        return h


class GATNet(nn.Module):
    """Follows graphdeeplearning/benchmarking-gnns
    nets/SBMs_node_classification/gat_net.py, layers/gat_layer.py.
    nets/SBMs_node_classification/gat_net.py: nn.Embedding input, GAT layers of the project's
    own (heads as separate modules, Python edge, message and reduce functions), an MLPReadout.
    Constructs: Python message/reduce functions with a mailbox softmax, a list comprehension over
    heads."""

    def __init__(self, in_dim, hidden_dim, out_dim, n_classes, num_heads, n_layers):
        super().__init__()
        self.embedding_h = nn.Embedding(in_dim, hidden_dim * num_heads)
        self.layers = nn.ModuleList(
            [GATLayer(hidden_dim * num_heads, hidden_dim, num_heads, True, True) for _ in range(n_layers - 1)]
        )
        self.layers.append(GATLayer(hidden_dim * num_heads, out_dim, 1, True, False))
        self.MLP_layer = MLPReadout(out_dim, n_classes)

    def forward(self, g, h, e):
        h = self.embedding_h(h)
        for conv in self.layers:
            h = conv(g, h)
        return self.MLP_layer(h)

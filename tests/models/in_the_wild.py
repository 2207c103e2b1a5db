"""Models written the way DGL's own examples write them (ogbn-arxiv, ogbn-products, dagnn,
mixhop, arma, the old gcn_mp), our own code in their style. Each once made gnn-codegen write a
silently wrong module or one that crashed (tests/test_in_the_wild.py): now each is exact, or
refused naming the construct and the way out."""

import dgl
import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.ops import edge_softmax


class ElementWiseLinear(nn.Module):
    """ogbn-arxiv's last-layer bias: per-column scale and shift, optionally in place."""

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


class GATConv(nn.Module):
    """The ogbn-arxiv example's own attention layer (not dgl.nn's, though named alike): with
    use_symmetric_norm it scales source rows by their out-degree ** -0.5."""

    def __init__(self, in_feats, out_feats, num_heads=1, residual=False, use_symmetric_norm=False):
        super().__init__()
        self._num_heads = num_heads
        self._out_feats = out_feats
        self.fc = nn.Linear(in_feats, out_feats * num_heads, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.leaky_relu = nn.LeakyReLU(0.2)
        self.res_fc = nn.Linear(in_feats, num_heads * out_feats, bias=False) if residual else None
        self.use_symmetric_norm = use_symmetric_norm
        nn.init.xavier_normal_(self.attn_l)
        nn.init.xavier_normal_(self.attn_r)

    def forward(self, graph, feat):
        with graph.local_scope():
            feat_src = self.fc(feat).view(-1, self._num_heads, self._out_feats)
            feat_dst = feat_src[: graph.number_of_dst_nodes()]
            h_dst = feat[: graph.number_of_dst_nodes()]
            if self.use_symmetric_norm:
                degs = graph.out_degrees().float().clamp(min=1)
                feat_src = feat_src * torch.pow(degs, -0.5).view(-1, 1, 1)
            el = (feat_src * self.attn_l).sum(dim=-1).unsqueeze(-1)
            er = (feat_dst * self.attn_r).sum(dim=-1).unsqueeze(-1)
            graph.srcdata.update({"ft": feat_src, "el": el})
            graph.dstdata.update({"er": er})
            graph.apply_edges(fn.u_add_v("el", "er", "e"))
            e = self.leaky_relu(graph.edata.pop("e"))
            graph.edata["a"] = edge_softmax(graph, e)
            graph.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "ft"))
            rst = graph.dstdata["ft"]
            if self.res_fc is not None:
                rst = rst + self.res_fc(h_dst).view(h_dst.shape[0], -1, self._out_feats)
            return rst


class ArxivGAT(nn.Module):
    """ogbn-arxiv's GAT: its own GATConv, BatchNorm, an activation in place, heads averaged,
    then ElementWiseLinear(inplace=True), whose `x.add_(bias)` was dropped as dead code."""

    def __init__(self, in_feats, n_classes, n_hidden, n_layers, n_heads, use_symmetric_norm=False):
        super().__init__()
        self.n_layers = n_layers
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(n_layers):
            in_hidden = n_heads * n_hidden if i > 0 else in_feats
            out_hidden = n_hidden if i < n_layers - 1 else n_classes
            num_heads = n_heads if i < n_layers - 1 else 1
            self.convs.append(GATConv(in_hidden, out_hidden, num_heads, residual=True,
                                      use_symmetric_norm=use_symmetric_norm))
            if i < n_layers - 1:
                self.norms.append(nn.BatchNorm1d(out_hidden * num_heads))
        self.bias_last = ElementWiseLinear(n_classes, weight=False, bias=True, inplace=True)
        self.input_drop = nn.Dropout(0.1)
        self.dropout = nn.Dropout(0.5)
        self.activation = F.relu

    def forward(self, graph, feat):
        h = self.input_drop(feat)
        for i in range(self.n_layers):
            conv = self.convs[i](graph, h)
            h = conv
            if i < self.n_layers - 1:
                h = h.flatten(1)
                h = self.norms[i](h)
                h = self.activation(h, inplace=True)
                h = self.dropout(h)
        h = h.mean(1)
        h = self.bias_last(h)
        return h


def arxiv_gat_symmetric():
    """The same GAT with use_symmetric_norm=True: its layers divide by source out-degrees, which a
    block truncates; once taken for dgl.nn.GATConv by its name and off by up to 139."""
    return ArxivGAT(8, 3, 4, 2, 2, use_symmetric_norm=True)


class ProductsGAT(nn.Module):
    """ogbn-products' sampling GAT: dgl.nn.GATConv built with (in, in) feature sizes, so it has
    fc_src / fc_dst and must be called with the (h, h_dst) pair; once collapsed to h, which
    crashed with AttributeError: no attribute 'fc'. It has its own inference method too."""

    def __init__(self, in_feats, n_hidden, n_classes, n_layers, num_heads, activation):
        super().__init__()
        self.n_layers = n_layers
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.GATConv((in_feats, in_feats), n_hidden, num_heads=num_heads,
                                         activation=activation))
        for _ in range(1, n_layers - 1):
            self.layers.append(dglnn.GATConv((n_hidden * num_heads, n_hidden * num_heads), n_hidden,
                                             num_heads=num_heads, activation=activation))
        self.layers.append(dglnn.GATConv((n_hidden * num_heads, n_hidden * num_heads), n_classes,
                                         num_heads=num_heads, activation=None))

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h_dst = h[: block.num_dst_nodes()]
            h = layer(block, (h, h_dst))
            if l < self.n_layers - 1:
                h = h.flatten(1)
        h = h.mean(1)
        return h.log_softmax(dim=-1)

    def inference(self, g, x, num_heads, device):
        """The example's own layer-wise loop (abridged)."""
        for l, layer in enumerate(self.layers):
            x = layer(g, (x, x))
            x = x.flatten(1) if l < self.n_layers - 1 else x.mean(1).log_softmax(dim=-1)
        return x


def products_gat():
    return ProductsGAT(8, 4, 3, 3, 2, F.relu)


class DAGNNConv(nn.Module):
    """DAGNN's adaptive propagation: k rounds of symmetric-normalised propagation in one
    module, then a learned gate over the rounds."""

    def __init__(self, in_dim, k):
        super().__init__()
        self.s = nn.Parameter(torch.empty(in_dim, 1))
        self.k = k
        nn.init.xavier_uniform_(self.s, gain=nn.init.calculate_gain("sigmoid"))

    def forward(self, graph, feats):
        with graph.local_scope():
            results = [feats]
            degs = graph.in_degrees().float()
            norm = torch.pow(degs, -0.5).to(feats.device).unsqueeze(1)
            for _ in range(self.k):
                feats = feats * norm
                graph.ndata["h"] = feats
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                feats = graph.ndata["h"]
                feats = feats * norm
                results.append(feats)
            H = torch.stack(results, dim=1)
            S = torch.sigmoid(torch.matmul(H, self.s))
            S = S.permute(0, 2, 1)
            return torch.matmul(S, H).squeeze()


class DAGNN(nn.Module):
    def __init__(self, k, in_dim, hid_dim, out_dim, dropout=0.5):
        super().__init__()
        self.mlp = nn.Sequential(nn.Dropout(dropout), nn.Linear(in_dim, hid_dim), nn.ReLU(),
                                 nn.Dropout(dropout), nn.Linear(hid_dim, out_dim))
        self.dagnn = DAGNNConv(out_dim, k)

    def forward(self, graph, feats):
        feats = self.mlp(feats)
        return self.dagnn(graph, feats)


class MixHopConv(nn.Module):
    """MixHop: the outputs of adjacency powers 0..max(p) side by side, each propagation a round
    of update_all on the same graph inside this one module."""

    def __init__(self, in_dim, out_dim, p=(0, 1, 2)):
        super().__init__()
        self.p = p
        self.weights = nn.ModuleDict({str(j): nn.Linear(in_dim, out_dim, bias=False) for j in p})

    def forward(self, graph, feats):
        with graph.local_scope():
            degs = graph.in_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5).to(feats.device).unsqueeze(1)
            max_j = max(self.p) + 1
            outputs = []
            for j in range(max_j):
                if j in self.p:
                    outputs.append(self.weights[str(j)](feats))
                feats = feats * norm
                graph.srcdata["h"] = feats
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                feats = graph.dstdata.pop("h")
                feats = feats * norm
            return torch.cat(outputs, dim=1)


class MixHop(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, p=(0, 1, 2)):
        super().__init__()
        self.conv = MixHopConv(in_dim, hid_dim, p)
        self.fc = nn.Linear(hid_dim * len(p), out_dim)

    def forward(self, graph, feats):
        return self.fc(F.relu(self.conv(graph, feats)))


class ARMAConv(nn.Module):
    """ARMA: K stacks of T rounds of propagation each, with skip terms added in place."""

    def __init__(self, in_dim, out_dim, num_stacks, num_layers):
        super().__init__()
        self.K, self.T = num_stacks, num_layers
        self.w_0 = nn.ModuleDict({str(k): nn.Linear(in_dim, out_dim, bias=False) for k in range(self.K)})
        self.w = nn.ModuleDict({str(k): nn.Linear(out_dim, out_dim, bias=False) for k in range(self.K)})
        self.v = nn.ModuleDict({str(k): nn.Linear(in_dim, out_dim, bias=False) for k in range(self.K)})

    def forward(self, g, feats):
        with g.local_scope():
            init_feats = feats
            degs = g.in_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5).to(feats.device).unsqueeze(1)
            output = []
            for k in range(self.K):
                feats = init_feats
                for t in range(self.T):
                    feats = feats * norm
                    g.srcdata["h"] = feats
                    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                    feats = g.dstdata.pop("h") * norm
                    feats = self.w_0[str(k)](feats) if t == 0 else self.w[str(k)](feats)
                    feats += self.v[str(k)](init_feats)
                    feats = torch.relu(feats)
                output.append(feats)
            return torch.stack(output).mean(dim=0)


class ARMA4NC(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, num_stacks=2, num_layers=2):
        super().__init__()
        self.conv1 = ARMAConv(in_dim, hid_dim, num_stacks, num_layers)
        self.conv2 = ARMAConv(hid_dim, out_dim, num_stacks, num_layers)

    def forward(self, g, feats):
        return self.conv2(g, F.relu(self.conv1(g, feats)))


class GCNLayer(nn.Module):
    """The old gcn_mp example's layer: writes graph.ndata, which a block does not have."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, g, h):
        g.ndata["h"] = torch.mm(h, self.weight)
        g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
        return g.ndata.pop("h")


class NdataGCN(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes):
        super().__init__()
        self.layer1 = GCNLayer(in_feats, n_hidden)
        self.layer2 = GCNLayer(n_hidden, n_classes)

    def forward(self, g, features):
        h = F.relu(self.layer1(g, features))
        return self.layer2(g, h)


class InPlaceEverywhere(nn.Module):
    """In-place steps between layers: an nn.ReLU(inplace=True) that also changes the tensor a
    second name holds, `mul_`, `clamp_` and `torch.add(..., out=)`; all are effects forward's
    result shows."""

    def __init__(self, in_size=8, hid_size=6, out_size=4):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, out_size, "mean")
        self.act = nn.ReLU(inplace=True)
        self.scale = nn.Parameter(torch.ones(hid_size))

    def forward(self, g, x):
        h = self.conv1(g, x)
        skip = h
        h = self.act(h)
        h.mul_(self.scale)
        out = self.conv2(g, h)
        out.clamp_(min=-1.0)
        torch.add(out, 1.0, out=out)
        return out, skip


class ActivationInPlaceOnStoredRows(nn.Module):
    """An nn.ReLU(inplace=True) on a layer's stored output, read in place by the next layer's
    loop: the generated code must hand it a copy, or it changes the stored rows."""

    def __init__(self, in_size=8, hid_size=6):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, hid_size, "mean")
        self.act = nn.ReLU(inplace=True)

    def forward(self, g, x):
        h = self.conv1(g, x)
        h2 = self.conv2(g, h)
        return self.act(h) + h2


class ChangedThroughAView(nn.Module):
    """`first = h[:, :3]; first.zero_()` changes h, which the next layer reads: refused."""

    def __init__(self, in_size=8, hid_size=6, out_size=4):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, out_size, "mean")

    def forward(self, g, x):
        h = self.conv1(g, x)
        first = h[:, :3]
        first.zero_()
        return self.conv2(g, h)


class NoiseInForward(nn.Module):
    """Gaussian noise added in forward whatever the mode: refused."""

    def __init__(self, in_size=8, out_size=4):
        super().__init__()
        self.conv = dglnn.SAGEConv(in_size, out_size, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        return h + 0.1 * torch.randn(h.shape)


class DropoutAlwaysOn(nn.Module):
    """F.dropout without training=self.training drops features in eval mode too: refused."""

    def __init__(self, in_size=8, out_size=4):
        super().__init__()
        self.conv = dglnn.SAGEConv(in_size, out_size, "mean")

    def forward(self, g, x):
        return self.conv(g, F.dropout(x, 0.5))

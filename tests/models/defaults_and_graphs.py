"""forward's defaults and flags, and forward over several graphs, written the way third-party
DGL code writes them (our own code, in the styles of HAN implementations over metapath graphs,
label propagation's post_step, encoders called by keyword behind a flag; issue 35, items 2
and 4)."""

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F

# --- forward's defaults and flags --------------------------------------------------------------


class FlagBeforeFeatures(nn.Module):
    """An encoder whose flag comes first and whose features have a None default, so that
    callers write `model(g, feat=x)` (a self-supervised library's style)."""

    def __init__(self, in_dim=8, hid_dim=6, out_dim=4):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_dim, hid_dim, "mean")
        self.conv2 = dglnn.SAGEConv(hid_dim, out_dim, "mean")

    def forward(self, graph, inference=False, feat=None):
        h = F.relu(self.conv1(graph, feat))
        return self.conv2(graph, h)


class EncoderBase(nn.Module):
    def __init__(self, in_dim=8, out_dim=4):
        super().__init__()
        self.gcn = dglnn.GraphConv(in_dim, out_dim, allow_zero_in_degree=True)

    def forward(self, g, x, return_hidden=False):
        return self.gcn(g, x)


class KeywordOnlyFeatures(EncoderBase):
    """A subclass that puts the flag first and takes the features by keyword only."""

    def forward(self, g, return_hidden=False, *, x):
        return super().forward(g, x, return_hidden)


class OwnEmbeddingWhenNone(nn.Module):
    """Featureless nodes: forward falls back on the model's own embedding table."""

    def __init__(self, num_nodes=211, dim=8, out_dim=3):
        super().__init__()
        self.node_emb = nn.Embedding(num_nodes, dim)
        self.conv1 = dglnn.SAGEConv(dim, dim, "mean")
        self.conv2 = dglnn.SAGEConv(dim, out_dim, "mean")

    def forward(self, g, h=None):
        if h is None:
            h = self.node_emb.weight
        h = F.relu(self.conv1(g, h))
        return self.conv2(g, h)


class PostStepClamp(nn.Module):
    """Label propagation's style: a post step after each round, clamping in place."""

    def __init__(self, in_dim=8, out_dim=4, rounds=2):
        super().__init__()
        self.convs = nn.ModuleList(dglnn.GraphConv(in_dim if i == 0 else out_dim, out_dim, allow_zero_in_degree=True)
                                   for i in range(rounds))

    def forward(self, g, labels, post_step=lambda y: y.clamp_(0.0, 1.0)):
        y = labels
        for conv in self.convs:
            y = post_step(conv(g, y))
        return y


class ActivationParameter(nn.Module):
    """The activation passed to forward, with a function of torch as its default."""

    def __init__(self, in_dim=8, hid_dim=6, out_dim=4):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_dim, hid_dim, "gcn")
        self.conv2 = dglnn.SAGEConv(hid_dim, out_dim, "gcn")

    def forward(self, g, x, activation=F.elu):
        return self.conv2(g, activation(self.conv1(g, x)))


class PostStepOnValues(nn.Module):
    """A post step that decides on the data's values: refused at the lambda's line."""

    def __init__(self, in_dim=8, out_dim=4):
        super().__init__()
        self.conv = dglnn.GraphConv(in_dim, out_dim, allow_zero_in_degree=True)

    def forward(self, g, x, post_step=lambda y: y if y.sum() > 0 else -y):
        return post_step(self.conv(g, x))


# --- several graphs ----------------------------------------------------------------------------


class SemanticAttention(nn.Module):
    """How much each graph's embedding counts, one weight per graph for all nodes."""

    def __init__(self, in_size, hidden_size=16):
        super().__init__()
        self.project = nn.Sequential(nn.Linear(in_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, 1, bias=False))

    def forward(self, z):
        w = self.project(z).mean(0)
        beta = torch.softmax(w, dim=0)
        beta = beta.expand((z.shape[0],) + beta.shape)
        return (beta * z).sum(1)


class MetapathLayer(nn.Module):
    def __init__(self, num_graphs, in_size, out_size, heads):
        super().__init__()
        self.gat_layers = nn.ModuleList(
            dglnn.GATConv(in_size, out_size, heads, activation=F.elu, allow_zero_in_degree=True)
            for _ in range(num_graphs))
        self.semantic_attention = SemanticAttention(out_size * heads)

    def forward(self, gs, h):
        semantic_embeddings = []
        for i, g in enumerate(gs):
            semantic_embeddings.append(self.gat_layers[i](g, h).flatten(1))
        return self.semantic_attention(torch.stack(semantic_embeddings, dim=1))


class HANOverGraphList(nn.Module):
    """HAN as its implementations outside DGL's examples write it: the metapath graphs are
    made once by the caller and passed as a list; each layer runs a GAT per graph on the same
    features, then weighs the graphs by semantic attention."""

    def __init__(self, num_graphs=2, in_size=8, hidden=4, out_size=3, heads=(2, 2)):
        super().__init__()
        self.layers = nn.ModuleList([MetapathLayer(num_graphs, in_size, hidden, heads[0])])
        for layer in range(1, len(heads)):
            self.layers.append(MetapathLayer(num_graphs, hidden * heads[layer - 1], hidden, heads[layer]))
        self.predict = nn.Linear(hidden * heads[-1], out_size)

    def forward(self, gs, h):
        for gnn in self.layers:
            h = gnn(gs, h)
        return self.predict(h)


class RelationGraphsZipped(nn.Module):
    """A graph per relation, zipped with a conv each, results summed (an RGCN by hand)."""

    def __init__(self, num_rels=3, in_dim=8, out_dim=4):
        super().__init__()
        self.convs = nn.ModuleList(dglnn.GraphConv(in_dim, out_dim, norm="right", allow_zero_in_degree=True)
                                   for _ in range(num_rels))
        self.self_loop = nn.Linear(in_dim, out_dim)

    def forward(self, rel_graphs, x):
        h = self.self_loop(x)
        for conv, rel_graph in zip(self.convs, rel_graphs):
            h = h + conv(rel_graph, x)
        return F.relu(h)


class CitesAndCoauthor(nn.Module):
    """Two graphs over the same papers as two parameters, convolved and stacked."""

    def __init__(self, in_dim=8, out_dim=4):
        super().__init__()
        self.cites = dglnn.SAGEConv(in_dim, out_dim, "mean")
        self.coauthor = dglnn.GraphConv(in_dim, out_dim, allow_zero_in_degree=True)
        self.out = nn.Linear(2 * out_dim, 3)

    def forward(self, g_cites, g_coauthor, x):
        h = torch.cat([self.cites(g_cites, x), self.coauthor(g_coauthor, x)], dim=1)
        return self.out(F.relu(h))


class TwoViewsEncoder(nn.Module):
    """Two augmented views, each a graph with its own features, encoded by one shared GCN
    (as contrastive methods such as CCA-SSG write it): forward(self, graph1, feat1, graph2,
    feat2), the graphs and features interleaved."""

    def __init__(self, in_dim=8, out_dim=4):
        super().__init__()
        self.conv = dglnn.GraphConv(in_dim, out_dim, allow_zero_in_degree=True)

    def forward(self, graph1, feat1, graph2, feat2):
        return self.conv(graph1, feat1), self.conv(graph2, feat2)


class ViewsThenTested(nn.Module):
    """Two graphs side by side on the model's own embeddings, then a test of the result's dtype
    (found by the differential test: the test was refused while the list was told from blocks)."""

    def __init__(self, num_nodes=50, dim=4):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, dim)
        self.conv_a = dglnn.SAGEConv(dim, dim, "mean")
        self.conv_b = dglnn.SAGEConv(dim, dim, "mean")

    def forward(self, gs):
        x = self.emb.weight
        h = self.conv_a(gs[0], x) + self.conv_b(gs[1], x)
        if h.dtype == torch.float32:
            h = torch.tanh(h)
        return h


class SAGEOnBlocks(nn.Module):
    """A list of blocks, each layer on the next: still blocks (a chain)."""

    def __init__(self, in_dim=8, hid_dim=6, out_dim=4):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(in_dim, hid_dim, "mean"), dglnn.SAGEConv(hid_dim, out_dim, "mean")])

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = F.relu(h)
        return h


class ProjectedEmbeddingWhenNone(nn.Module):
    """The fallback is not the table itself but its projection: h given is not the table."""

    def __init__(self, num_nodes=211, dim=8, out_dim=3):
        super().__init__()
        self.node_emb = nn.Embedding(num_nodes, dim)
        self.proj = nn.Linear(dim, dim)
        self.conv = dglnn.SAGEConv(dim, out_dim, "mean")

    def forward(self, g, h=None):
        if h is None:
            h = self.proj(self.node_emb.weight)
        return self.conv(g, h)

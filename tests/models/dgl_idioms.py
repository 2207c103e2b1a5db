"""Models written with the idioms of DGL's own examples that gnn-codegen once refused: the graph
kept on the model (`self.g`, also by submodules), and inputs read from the graph
(`g.ndata["feat"]`, `blocks[0].srcdata["feat"]`, `g.edata[dgl.ETYPE]`, `g.edata["w"]`).
Written for tests/test_dgl_idioms.py in the style of those examples; the larger ones are
cases in generated_examples/."""

import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class GCNOnGraph(nn.Module):
    """DGI's example: a GCN that keeps its graph, inside an encoder that keeps it too."""

    def __init__(self, g, in_feats, n_hidden, n_layers, activation):
        super().__init__()
        self.g = g
        self.layers = nn.ModuleList([dglnn.GraphConv(in_feats, n_hidden, activation=activation)])
        for _ in range(n_layers - 1):
            self.layers.append(dglnn.GraphConv(n_hidden, n_hidden, activation=activation))

    def forward(self, features):
        h = features
        for layer in self.layers:
            h = layer(self.g, h)
        return h


class Encoder(nn.Module):
    def __init__(self, g, in_feats, n_hidden, n_layers=2):
        super().__init__()
        self.g = g
        self.conv = GCNOnGraph(g, in_feats, n_hidden, n_layers, nn.PReLU(n_hidden))

    def forward(self, features, corrupt=False):
        if corrupt:
            perm = torch.randperm(self.g.num_nodes())
            features = features[perm]
        return self.conv(features)


class FeaturesOnTheKeptGraph(nn.Module):
    """forward() takes nothing at all: the graph and its features are the model's."""

    def __init__(self, g, in_feats, hidden, n_classes):
        super().__init__()
        self.g = g
        self.conv1 = dglnn.SAGEConv(in_feats, hidden, "gcn")
        self.conv2 = dglnn.SAGEConv(hidden, n_classes, "mean")

    def forward(self):
        h = F.relu(self.conv1(self.g, self.g.ndata["feat"]))
        return self.conv2(self.g, h)


class KeepsTwoGraphs(nn.Module):
    """Two different graphs and a forward that takes none: refused."""

    def __init__(self, g, in_feats=8):
        super().__init__()
        self.g = g
        self.rev = dgl.reverse(g)
        self.conv1 = dglnn.GraphConv(in_feats, 4)
        self.conv2 = dglnn.GraphConv(4, 4)

    def forward(self, x):
        return self.conv2(self.rev, self.conv1(self.g, x))


class NodeWeightFromGraph(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        h = self.conv(g, x)
        return h * g.ndata["weight"]


class EdgeTypesFromGraph(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = dglnn.RelGraphConv(8, 4, 3)

    def forward(self, g, x):
        return self.conv(g, x, g.edata[dgl.ETYPE])


class WeightedGCN(nn.Module):
    """Edge weights the graph carries, read in forward (DGL's GCN tutorials with `g.edata["w"]`)."""

    def __init__(self, in_feats, hidden, n_classes):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_feats, hidden, norm="both", allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hidden, n_classes, norm="right", allow_zero_in_degree=True)

    def forward(self, g):
        h = g.ndata["feat"]
        h = F.relu(self.conv1(g, h, edge_weight=g.edata["w"]))
        return self.conv2(g, h, edge_weight=g.edata["w"])


class BlocksFromSrcData(nn.Module):
    """The sampled-training style of DGL's graphsage examples, reading features from the first
    block and a skip from the last block's destination data."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList([
            dglnn.SAGEConv(in_size, hid_size, "mean"),
            dglnn.SAGEConv(hid_size, out_size, "mean"),
        ])
        self.skip = nn.Linear(in_size, out_size)

    def forward(self, blocks):
        h = blocks[0].srcdata["feat"]
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = F.relu(h)
        return h + self.skip(blocks[-1].dstdata["feat"])


def encoder():
    return Encoder(dgl.rand_graph(12, 40), 8, 6)


def features_on_the_kept_graph():
    g = dgl.rand_graph(12, 40)
    g.ndata["feat"] = torch.randn(12, 8)
    return FeaturesOnTheKeptGraph(g, 8, 6, 3)


def keeps_two_graphs():
    return KeepsTwoGraphs(dgl.rand_graph(10, 30))


class InlineLocalScope(nn.Module):
    """A propagation written in forward inside a local scope, dgl.function imported there."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, g, x):
        import dgl.function as fn

        with g.local_scope():
            g.ndata["h"] = self.lin(x)
            g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return g.ndata["h"]


class TwoInlineRounds(nn.Module):
    """Two rounds written inline: edge-weighted sum (the weights are the graph's), then a max of
    source-plus-destination messages; srcdata, dstdata, pop."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)
        self.lin2 = nn.Linear(out_dim, out_dim)

    def forward(self, g, x):
        import dgl.function as fn

        with g.local_scope():
            g.ndata["h"] = self.lin(x)
            g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h"))
            h = F.relu(g.ndata.pop("h"))
            g.srcdata["h"] = self.lin2(h)
            g.dstdata["r"] = h
            g.update_all(fn.u_add_v("h", "r", "m"), fn.max("m", "z"))
            return g.dstdata["z"]


class EntityRGCN(nn.Module):
    """DGL's rgcn entity classification example: featureless nodes, the embedding table itself
    is the first layer's input; edge types and norms are edge data."""

    def __init__(self, num_nodes, h_dim, out_dim, num_rels):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, h_dim)
        self.conv1 = dglnn.RelGraphConv(h_dim, h_dim, num_rels, regularizer="basis", num_bases=num_rels,
                                        self_loop=False)
        self.conv2 = dglnn.RelGraphConv(h_dim, out_dim, num_rels, regularizer="basis", num_bases=num_rels,
                                        self_loop=False)

    def forward(self, g):
        x = self.emb.weight
        h = F.relu(self.conv1(g, x, g.edata[dgl.ETYPE], g.edata["norm"]))
        return self.conv2(g, h, g.edata[dgl.ETYPE], g.edata["norm"])


class EmbeddedNodeIDs(nn.Module):
    """Node embeddings looked up by the IDs the graph carries (a subgraph's dgl.NID), and a
    learnable feature matrix added to them."""

    def __init__(self, num_nodes, dim, out_dim):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, dim)
        self.conv = dglnn.SAGEConv(dim, out_dim, "mean")

    def forward(self, g):
        h = self.emb(g.ndata[dgl.NID])
        return self.conv(g, F.relu(h))


class SelfLoopsInForward(nn.Module):
    """Self-loops added in forward, as DGL's examples add them before the call."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size)
        self.conv2 = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, features):
        g = dgl.add_self_loop(g)
        h = F.relu(self.conv1(g, features))
        return self.conv2(g, h)


class BothDirections(nn.Module):
    """A directed model: a layer along the edges, then one against them on dgl.reverse(g), the
    in-degrees of each graph normalising its own layer."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.forward_conv = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.backward_conv = dglnn.SAGEConv(hid_size, out_size, "gcn")

    def forward(self, g, x):
        rg = dgl.reverse(g)
        h = F.relu(self.forward_conv(g, x))
        h = h / g.in_degrees().clamp(min=1).unsqueeze(1).float()
        return self.backward_conv(rg, h) * rg.in_degrees().unsqueeze(1).float()


class TwoGraphsInOneLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.along = dglnn.SAGEConv(8, 4, "mean")
        self.against = dglnn.SAGEConv(8, 4, "mean")

    def forward(self, g, x):
        return self.along(g, x) + self.against(dgl.reverse(g), x)


class EdgeWeightsIfAny(nn.Module):
    """Edge weights used when the graph has them, as DGL's GCN examples test for them."""

    def __init__(self, in_feats=8, out_feats=4):
        super().__init__()
        self.conv = dglnn.GraphConv(in_feats, out_feats, allow_zero_in_degree=True)

    def forward(self, g, x):
        if "w" in g.edata:
            return self.conv(g, x, edge_weight=g.edata["w"])
        return self.conv(g, x)


class TrainingFlagGAT(nn.Module):
    """`forward(self, g, x, training=True)` passing the flag on to F.dropout, as several papers'
    reference code does instead of self.training: traced, checked and documented at False."""

    def __init__(self, in_size, hid_size, out_size, heads=2):
        super().__init__()
        self.gat1 = dglnn.GATConv(in_size, hid_size, heads, allow_zero_in_degree=True)
        self.gat2 = dglnn.GATConv(hid_size * heads, out_size, 1, allow_zero_in_degree=True)

    def forward(self, g, x, training=True):
        h = F.dropout(x, 0.6, training=training)
        h = F.elu(self.gat1(g, h).flatten(1))
        h = F.dropout(h, 0.6, training=training)
        return self.gat2(g, h).mean(1)


class SmoothGivenFeatures(nn.Module):
    """Propagation of whatever features it is given (DGL's correct-and-smooth smooths label
    distributions this way): no module fixes the input's width, so any width is forward's."""

    def __init__(self, k=3, alpha=0.2):
        super().__init__()
        self.propagate = dglnn.APPNPConv(k, alpha)

    def forward(self, g, labels):
        return self.propagate(g, labels)


class WidthFixedByAWeightMatrix(nn.Module):
    """A raw weight matrix (no Linear) fixes the width after the propagation: the guessed width
    fails on the probe graph, and the refusal asks for --feat-dims."""

    def __init__(self):
        super().__init__()
        self.propagate = dglnn.APPNPConv(2, 0.1)
        self.weight = nn.Parameter(torch.randn(8, 3))

    def forward(self, g, x):
        return self.propagate(g, x) @ self.weight


class CentredGCN(nn.Module):
    """PairNorm's "scale individually" variant (Zhao and Akoglu, 2020) between GCN layers: each
    layer's output is centred by its mean over all nodes, then every row scaled to a fixed
    norm. The mean reads every node's row: computed in a pass over the stored layer before the
    next layer reads it."""

    def __init__(self, in_size, hid_size, out_size, scale=1.0):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hid_size, hid_size, allow_zero_in_degree=True)
        self.conv3 = dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)
        self.scale = scale

    def pair_norm(self, x):
        x = x - x.mean(dim=0)
        return self.scale * x / (1e-6 + x.pow(2).sum(dim=1, keepdim=True)).sqrt()

    def forward(self, g, features):
        h = F.relu(self.pair_norm(self.conv1(g, features)))
        h = F.relu(self.pair_norm(self.conv2(g, h)))
        return self.conv3(g, h)


class SemanticAttentionBetweenLayers(nn.Module):
    """HAN's semantic attention (DGL's han example) over two GAT views of the graph, written as
    the example writes it, then a GraphConv: the attention weights are a mean over all nodes
    (`self.project(z).mean(0)`), computed in a pass over the stored projections before the
    GraphConv's layer."""

    def __init__(self, in_size, hid_size, out_size, heads=2):
        super().__init__()
        self.views = nn.ModuleList(
            dglnn.GATConv(in_size, hid_size, heads, allow_zero_in_degree=True) for _ in range(2)
        )
        self.project = nn.Sequential(nn.Linear(hid_size * heads, 8), nn.Tanh(), nn.Linear(8, 1, bias=False))
        self.conv = dglnn.GraphConv(hid_size * heads, out_size, allow_zero_in_degree=True)

    def forward(self, g, h):
        z = torch.stack([view(g, h).flatten(1) for view in self.views], dim=1)  # (N, M, D * K)
        w = self.project(z).mean(0)  # (M, 1)
        beta = torch.softmax(w, dim=0)  # (M, 1)
        beta = beta.expand((z.shape[0],) + beta.shape)  # (N, M, 1)
        return self.conv(g, (beta * z).sum(1))


class PairNormGCN(nn.Module):
    """PairNorm in its default mode (Zhao and Akoglu, 2020, "PN") between GCN layers: centre by
    the mean over all nodes, then divide by the mean row norm of the centred rows over all
    nodes. The two reductions chain (the second reads what the first made), so a pass over
    ranges of nodes computes the centred rows between the layers."""

    def __init__(self, in_size, hid_size, out_size, scale=1.0):
        super().__init__()
        self.layers = nn.ModuleList([
            dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True),
            dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True),
        ])
        self.scale = scale

    def pair_norm(self, x):
        x = x - x.mean(dim=0)
        rownorm_mean = (1e-6 + x.pow(2).sum(dim=1).mean()).sqrt()
        return self.scale * x / rownorm_mean

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i != len(self.layers) - 1:
                h = F.relu(self.pair_norm(h))
        return h


class HANClassifier(nn.Module):
    """A one-layer HAN as DGL's han example builds it for node classification: a GAT per view
    of the graph, semantic attention over the views (a mean over all nodes), then a Linear
    classifier. The attention reads every node's projection after the last message passing, so
    a pass over ranges of nodes after the last layer applies it and the classifier."""

    def __init__(self, in_size, hid_size, out_size, heads=2, num_views=2):
        super().__init__()
        self.gats = nn.ModuleList(
            dglnn.GATConv(in_size, hid_size, heads, activation=F.elu, allow_zero_in_degree=True)
            for _ in range(num_views)
        )
        self.project = nn.Sequential(nn.Linear(hid_size * heads, 16), nn.Tanh(), nn.Linear(16, 1, bias=False))
        self.predict = nn.Linear(hid_size * heads, out_size)

    def semantic_attention(self, z):
        w = self.project(z).mean(0)
        beta = torch.softmax(w, dim=0)
        beta = beta.expand((z.shape[0],) + beta.shape)
        return (beta * z).sum(1)

    def forward(self, g, h):
        views = [gat(g, h).flatten(1) for gat in self.gats]
        z = self.semantic_attention(torch.stack(views, dim=1))
        return self.predict(z)


class StandardisedGCN(nn.Module):
    """Between GCN layers, every feature standardised over all nodes (a z-score with the
    population std, as a graph-wide normalisation in full-graph training does): the mean and
    the std are reductions over all nodes, the std of the centred rows."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True)
        self.conv2 = dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, features):
        h = self.conv1(g, features)
        h = (h - h.mean(0)) / (h.std(0, unbiased=False) + 1e-5)
        return self.conv2(g, F.relu(h))


class MinMaxScaledSAGE(nn.Module):
    """Each hidden feature scaled into [0, 1] over all nodes between SAGE layers, and the output
    divided by its largest magnitude: torch.amin / amax over nodes and .max() of every element."""

    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, out_size, "mean")

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        low, high = torch.amin(h, dim=0), torch.amax(h, dim=0)
        h = (h - low) / (high - low + 1e-6)
        h = self.conv2(g, h)
        return h / h.abs().max()


class HGTTypesAsArguments(nn.Module):
    """HGTConv as its documentation calls it, node and edge types passed to forward as tensors
    (`model(g, x, g.ndata[dgl.NTYPE], g.edata[dgl.ETYPE])`), unsorted: the node types are read
    per node at a block's source rows, whose destination prefix HGTConv slices itself; TypedLinear
    adapts each type's rows first."""

    def __init__(self, in_size, hid_size, out_size, num_ntypes=3, num_etypes=4, heads=2):
        super().__init__()
        self.adapt = dglnn.TypedLinear(in_size, hid_size, num_ntypes)
        self.conv1 = dglnn.HGTConv(hid_size, hid_size // heads, heads, num_ntypes, num_etypes)
        self.conv2 = dglnn.HGTConv(hid_size, out_size, 1, num_ntypes, num_etypes, use_norm=True)

    def forward(self, g, x, ntype, etype):
        h = F.gelu(self.adapt(x, ntype))
        h = F.relu(self.conv1(g, h, ntype, etype))
        return self.conv2(g, h, ntype, etype)


class GeniePathMemoryReturned(nn.Module):
    """GeniePath's LSTM memory, returned by forward beside the prediction: its rows on dim 1
    are forward's result, which a rows-first rewrite would change, so it stays refused."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.hid_size = hid_size
        self.breadth = dglnn.GATConv(in_size, hid_size, 1, allow_zero_in_degree=True)
        self.depth = nn.LSTM(hid_size, hid_size)
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = torch.zeros(1, x.shape[0], self.hid_size)
        c = torch.zeros(1, x.shape[0], self.hid_size)
        x = torch.tanh(self.breadth(g, x)).mean(1)
        x, (h, c) = self.depth(x.unsqueeze(0), (h, c))
        return self.out(x[0]), h


class SortedRelGraphConv(nn.Module):
    """RelGraphConv on a graph from dgl.to_homogeneous, told its edges are sorted by type
    (`presorted=True`), its edge types read from the graph."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, num_rels=4):
        super().__init__()
        self.conv1 = dglnn.RelGraphConv(in_size, hid_size, num_rels, regularizer="basis", num_bases=2)
        self.conv2 = dglnn.RelGraphConv(hid_size, out_size, num_rels)

    def forward(self, g, x):
        etype = g.edata[dgl.ETYPE]
        h = F.relu(self.conv1(g, x, etype, presorted=True))
        return self.conv2(g, h, etype, presorted=True)


class RelationSubgraphsGCN(nn.Module):
    """An RGCN written with one GraphConv per relation, each on the graph of that relation's
    edges (`g.edge_subgraph(mask, relabel_nodes=False)`: every node, some edges), plus a
    self-connection; edge types read from a graph made by dgl.to_homogeneous."""

    def __init__(self, in_size=8, hid_size=6, out_size=3, num_rels=3):
        super().__init__()
        self.num_rels = num_rels
        self.self1 = nn.Linear(in_size, hid_size)
        self.self2 = nn.Linear(hid_size, out_size)
        self.rel1 = nn.ModuleList([dglnn.GraphConv(in_size, hid_size, allow_zero_in_degree=True) for _ in range(num_rels)])
        self.rel2 = nn.ModuleList([dglnn.GraphConv(hid_size, out_size, allow_zero_in_degree=True) for _ in range(num_rels)])

    def forward(self, g, x):
        subgraphs = [g.edge_subgraph(g.edata[dgl.ETYPE] == r, relabel_nodes=False) for r in range(self.num_rels)]
        h = self.self1(x)
        for conv, sg in zip(self.rel1, subgraphs):
            h = h + conv(sg, x)
        h = F.relu(h)
        out = self.self2(h)
        for conv, sg in zip(self.rel2, subgraphs):
            out = out + conv(sg, h)
        return out


class KeptEdgesSAGE(nn.Module):
    """A SAGE layer over the edges a boolean mask on the graph keeps, then one over all edges:
    nodes whose every in-edge is dropped aggregate nothing."""

    def __init__(self, in_size=8, hid_size=6, out_size=3):
        super().__init__()
        self.kept = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.all = dglnn.SAGEConv(hid_size, out_size, "mean")

    def forward(self, g, x):
        kept = dgl.edge_subgraph(g, g.edata["keep"], relabel_nodes=False)
        h = F.relu(self.kept(kept, x))
        return self.all(g, h)


class EdgeTypesPickedInForward(nn.Module):
    """Edge types passed to forward; a GAT over the edges of types 0 and 2."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.gat = dglnn.GATConv(in_size, out_size, 2, allow_zero_in_degree=True)

    def forward(self, g, x, etypes):
        sg = dgl.edge_subgraph(g, (etypes == 0) | (etypes == 2), relabel_nodes=False)
        return self.gat(sg, x).mean(1)


class RelabelledSubgraph(nn.Module):
    """dgl.edge_subgraph with DGL's default relabel_nodes=True: the subgraph's rows are not
    forward's (refused)."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.conv = dglnn.GraphConv(in_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, x):
        sg = dgl.edge_subgraph(g, g.edata[dgl.ETYPE] == 0)
        return self.conv(sg, x)


class EdgesPickedByTheModel(nn.Module):
    """Edges picked by a learned score: not a value of the graph alone (refused)."""

    def __init__(self, in_size=8, out_size=3):
        super().__init__()
        self.score = nn.Linear(1, 1)
        self.conv = dglnn.GraphConv(in_size, out_size, allow_zero_in_degree=True)

    def forward(self, g, x):
        keep = self.score(g.edata["w"]).squeeze(1) > 0
        sg = dgl.edge_subgraph(g, keep, relabel_nodes=False)
        return self.conv(sg, x)


class EmbeddedBlockIDs(nn.Module):
    """Trained on sampled blocks: a learnt embedding per node of the training graph, looked up
    by each block's source IDs (IDs in the graph the blocks were sampled from), added to the
    features before two GraphSAGE layers."""

    def __init__(self, num_nodes, in_size, hid_size, out_size):
        super().__init__()
        self.node_emb = nn.Embedding(num_nodes, in_size)
        self.layers = nn.ModuleList(
            [dglnn.SAGEConv(in_size, hid_size, "mean"), dglnn.SAGEConv(hid_size, out_size, "mean")]
        )

    def forward(self, blocks, x):
        h = x + self.node_emb(blocks[0].srcdata[dgl.NID])
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h

"""Models whose forward derives a graph per item of a list a module holds (issue 37,
render/held_graph_lists.py): DGL's own HAN example, whose layer makes its metapath graphs in a
`for` loop over `self.meta_paths` into a dict, a model that makes them in a list comprehension in
its own forward, and one that writes each graph on a line of its own (kept apart)."""

import dgl
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import GATConv, GraphConv


class SemanticAttention(nn.Module):
    def __init__(self, in_size, hidden_size=16):
        super().__init__()
        self.project = nn.Sequential(
            nn.Linear(in_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, 1, bias=False)
        )

    def forward(self, z):
        w = self.project(z).mean(0)
        beta = torch.softmax(w, dim=0)
        beta = beta.expand((z.shape[0],) + beta.shape)
        return (beta * z).sum(1)


class DGLHANLayer(nn.Module):
    """examples/pytorch/han/model.py's HANLayer: the graphs cached in a `for` loop."""

    def __init__(self, meta_paths, in_size, out_size, layer_num_heads):
        super().__init__()
        self.gat_layers = nn.ModuleList()
        for _ in range(len(meta_paths)):
            self.gat_layers.append(
                GATConv(in_size, out_size, layer_num_heads, activation=F.elu, allow_zero_in_degree=True)
            )
        self.semantic_attention = SemanticAttention(out_size * layer_num_heads)
        self.meta_paths = list(tuple(meta_path) for meta_path in meta_paths)
        self._cached_graph = None
        self._cached_coalesced_graph = {}

    def forward(self, g, h):
        semantic_embeddings = []
        if self._cached_graph is None or self._cached_graph is not g:
            self._cached_graph = g
            self._cached_coalesced_graph.clear()
            for meta_path in self.meta_paths:
                self._cached_coalesced_graph[meta_path] = dgl.metapath_reachable_graph(g, meta_path)
        for i, meta_path in enumerate(self.meta_paths):
            new_g = self._cached_coalesced_graph[meta_path]
            semantic_embeddings.append(self.gat_layers[i](new_g, h).flatten(1))
        semantic_embeddings = torch.stack(semantic_embeddings, dim=1)
        return self.semantic_attention(semantic_embeddings)


class DGLHAN(nn.Module):
    def __init__(self, meta_paths=(("pa", "ap"), ("pf", "fp")), in_size=6, hidden_size=4, out_size=3,
                 num_heads=(2, 2)):
        super().__init__()
        self.layers = nn.ModuleList([DGLHANLayer(meta_paths, in_size, hidden_size, num_heads[0])])
        for l in range(1, len(num_heads)):
            self.layers.append(DGLHANLayer(meta_paths, hidden_size * num_heads[l - 1], hidden_size, num_heads[l]))
        self.predict = nn.Linear(hidden_size * num_heads[-1], out_size)

    def forward(self, g, h):
        for gnn in self.layers:
            h = gnn(g, h)
        return self.predict(h)


class MetapathSum(nn.Module):
    """A GraphConv per metapath graph, made in forward's comprehension, their results summed."""

    def __init__(self, metapaths=(("pa", "ap"), ("pf", "fp"), ("pa", "ap", "pa", "ap")), in_size=6, out_size=5):
        super().__init__()
        self.metapaths = [tuple(path) for path in metapaths]
        self.convs = nn.ModuleList(GraphConv(in_size, out_size, allow_zero_in_degree=True) for _ in self.metapaths)

    def forward(self, g, x):
        graphs = [dgl.metapath_reachable_graph(g, path) for path in self.metapaths]
        h = 0
        for conv, graph in zip(self.convs, graphs):
            h = h + conv(graph, x)
        return F.relu(h)


class MetapathsOneByOne(nn.Module):
    """The same, each graph on a line of its own: no loop, kept apart."""

    def __init__(self, in_size=6, out_size=5):
        super().__init__()
        self.metapaths = [("pa", "ap"), ("pf", "fp")]
        self.convs = nn.ModuleList(GraphConv(in_size, out_size, allow_zero_in_degree=True) for _ in self.metapaths)

    def forward(self, g, x):
        by_author = dgl.metapath_reachable_graph(g, self.metapaths[0])
        by_field = dgl.metapath_reachable_graph(g, self.metapaths[1])
        return F.relu(self.convs[0](by_author, x) + self.convs[1](by_field, x))

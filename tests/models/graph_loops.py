"""Models that derive a graph per value of a loop's variable (render/graph_lists.py): an R-GAT
that takes each edge type's subgraph in its loop over the model's count of edge types, as DGL's
MAG240M example does, and models that derive the same graphs otherwise (one by one, on lines of
their own; from a value the loop's variable does not give alone), which stay apart."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class LoopedEdgeTypeGAT(nn.Module):
    """A GAT per edge type in each layer, summed onto a skip: `for i ...: for j in
    range(self.num_etypes): subg = g.edge_subgraph(g.edata["etype"] == j, ...)`."""

    def __init__(self, in_size=8, hidden=8, out_size=4, num_etypes=2, num_layers=2, heads=2):
        super().__init__()
        self.convs = nn.ModuleList()
        self.skips = nn.ModuleList()
        for i in range(num_layers):
            width = in_size if i == 0 else hidden
            self.convs.append(nn.ModuleList(
                dglnn.GATConv(width, hidden // heads, heads, allow_zero_in_degree=True) for _ in range(num_etypes)))
            self.skips.append(nn.Linear(width, hidden))
        self.out = nn.Linear(hidden, out_size)
        self.num_etypes = num_etypes

    def forward(self, g, x):
        for i in range(len(self.convs)):
            x_skip = self.skips[i](x)
            for j in range(self.num_etypes):
                subg = g.edge_subgraph(g.edata["etype"] == j, relabel_nodes=False)
                x_skip = x_skip + self.convs[i][j](subg, x).flatten(1)
            x = F.elu(x_skip)
        return self.out(x)


class OneByOneEdgeTypeGAT(nn.Module):
    """The subgraphs of edge types 0 and 1 written out one by one, a module each."""

    def __init__(self, in_size=8, out_size=4, heads=2):
        super().__init__()
        self.gat0 = dglnn.GATConv(in_size, out_size // heads, heads, allow_zero_in_degree=True)
        self.gat1 = dglnn.GATConv(in_size, out_size // heads, heads, allow_zero_in_degree=True)
        self.num_etypes = 2

    def forward(self, g, x):
        etype = g.edata["etype"]
        g0 = g.edge_subgraph(etype == 0, relabel_nodes=False)
        g1 = g.edge_subgraph(etype == 1, relabel_nodes=False)
        return self.gat0(g0, x).flatten(1) + self.gat1(g1, x).flatten(1)


class ShiftedEdgeTypeGAT(nn.Module):
    """A loop over the count whose line takes edge type j + 1: the graphs are not `etype == j`
    (edge type 0 is no graph's), so not that comprehension."""

    def __init__(self, in_size=8, out_size=4, num_etypes=2, heads=2):
        super().__init__()
        self.gats = nn.ModuleList(dglnn.GATConv(in_size, out_size // heads, heads, allow_zero_in_degree=True)
                                  for _ in range(num_etypes))
        self.num_etypes = num_etypes

    def forward(self, g, x):
        h = 0
        for j in range(self.num_etypes):
            subg = g.edge_subgraph(g.edata["etype"] == j + 1, relabel_nodes=False)
            h = h + self.gats[j](subg, x).flatten(1)
        return h


class LayerUnevenEdgeTypeGAT(nn.Module):
    """Forward's two loops, but the last layer's GATs average their heads where the first's
    are flattened: the layers' passes are not one function (each layer's own loop over its
    graphs stays, graph_pass_loops.py)."""

    def __init__(self, in_size=8, hidden=8, out_size=4, num_etypes=3, num_layers=2, heads=2):
        super().__init__()
        self.convs = nn.ModuleList()
        self.skips = nn.ModuleList()
        for i in range(num_layers):
            width = in_size if i == 0 else hidden
            self.convs.append(nn.ModuleList(
                dglnn.GATConv(width, hidden if i == num_layers - 1 else hidden // heads, heads,
                              allow_zero_in_degree=True)
                for _ in range(num_etypes)))
            self.skips.append(nn.Linear(width, hidden))
        self.out = nn.Linear(hidden, out_size)
        self.num_etypes = num_etypes

    def forward(self, g, x):
        for i in range(len(self.convs)):
            x_skip = self.skips[i](x)
            for j in range(self.num_etypes):
                subg = g.edge_subgraph(g.edata["etype"] == j, relabel_nodes=False)
                h = self.convs[i][j](subg, x)
                x_skip = x_skip + (h.mean(1) if i == len(self.convs) - 1 else h.flatten(1))
            x = F.elu(x_skip)
        return self.out(x)


class WrittenOutEdgeTypeGAT(nn.Module):
    """Per layer, the subgraphs of edge types 0 and 1 written out one by one in forward, each
    with a module of its own and its own code (heads flattened for one, averaged for the
    other): passes over derived graphs that are not one loop's, which stay apart."""

    def __init__(self, in_size=8, hidden=8, out_size=4, num_layers=2, heads=2):
        super().__init__()
        self.flat = nn.ModuleList()
        self.mean = nn.ModuleList()
        for i in range(num_layers):
            width = in_size if i == 0 else hidden
            self.flat.append(dglnn.GATConv(width, hidden // heads, heads, allow_zero_in_degree=True))
            self.mean.append(dglnn.GATConv(width, hidden, heads, allow_zero_in_degree=True))
        self.out = nn.Linear(hidden, out_size)

    def forward(self, g, x):
        etype = g.edata["etype"]
        g0 = g.edge_subgraph(etype == 0, relabel_nodes=False)
        g1 = g.edge_subgraph(etype == 1, relabel_nodes=False)
        for i in range(len(self.flat)):
            h = self.flat[i](g0, x).flatten(1)
            h = h + self.mean[i](g1, x).mean(1)
            x = F.elu(h)
        return self.out(x)


class UnevenEdgeTypeGAT(nn.Module):
    """Forward's loop over edge types, but edge type 1's GAT averages its heads where the
    others' are flattened: its pass is not the others' code, so no pass folds with it."""

    def __init__(self, in_size=8, hidden=8, out_size=4, num_etypes=4, num_layers=2, heads=2):
        super().__init__()
        self.convs = nn.ModuleList()
        self.skips = nn.ModuleList()
        for i in range(num_layers):
            width = in_size if i == 0 else hidden
            self.convs.append(nn.ModuleList(
                dglnn.GATConv(width, hidden if j == 1 else hidden // heads, heads, allow_zero_in_degree=True)
                for j in range(num_etypes)))
            self.skips.append(nn.Linear(width, hidden))
        self.out = nn.Linear(hidden, out_size)
        self.num_etypes = num_etypes

    def forward(self, g, x):
        for i in range(len(self.convs)):
            x_skip = self.skips[i](x)
            for j in range(self.num_etypes):
                subg = g.edge_subgraph(g.edata["etype"] == j, relabel_nodes=False)
                h = self.convs[i][j](subg, x)
                x_skip = x_skip + (h.mean(1) if j == 1 else h.flatten(1))
            x = F.elu(x_skip)
        return self.out(x)

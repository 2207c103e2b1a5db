"""Recommendation models in the styles of XGCN (CGCL-codes/XGCN_library, model/Block_LightGCN.py,
model/LightGCN.py, model/GAT.py, model/GIN.py, model/GraphSAGE.py, model/BaseGNNModel.py) and
RecHub (yusanshi/RecHub, src/model/heterogeneous/aggregator/base.py and gcn.py,
ngcf/ngcf_conv.py). Our own code, small widths."""

import dgl
import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn


class BlockLightGCN(nn.Module):
    """Follows CGCL-codes/XGCN_library model/Block_LightGCN.py.
    XGCN's LightGCN_Module: no weights, `for i in range(len(blocks))`, each block's srcdata
    written, `update_all(u_mul_e('h', 'ew'))` with the symmetric norm the training script put on
    the graph's edges as 'ew', the message functions built once in __init__. Constructs:
    `forward(self, blocks, x)` whose depth is `len(blocks)`, an edge field read from the graph,
    srcdata/dstdata written on blocks."""

    def __init__(self):
        super().__init__()
        self.gcn_msg = fn.u_mul_e("h", "ew", "m")
        self.gcn_reduce = fn.sum(msg="m", out="h")

    def forward(self, blocks, x):
        for i in range(len(blocks)):
            blocks[i].srcdata["h"] = x
            blocks[i].update_all(self.gcn_msg, self.gcn_reduce)
            x = blocks[i].dstdata["h"]
        return x


class GATModule(nn.Module):
    """Follows CGCL-codes/XGCN_library model/GAT.py.
    XGCN's GAT_Module: the architecture as a string evaluated in __init__ (`eval(arch)`, with
    `torch.tanh` inside), `assert len(blocks) == len(self.gnn_layers)`, heads merged by
    `x.mean(dim=-2)`. Constructs: blocks style, an assert on the blocks list, dgl.nn.GATConv on
    blocks (it refuses nodes without in-edges)."""

    def __init__(self, arch="[{'in_feats': 8, 'out_feats': 8, 'num_heads': 2, 'activation': torch.tanh}, "
                            "{'in_feats': 8, 'out_feats': 8, 'num_heads': 2}]"):
        super().__init__()
        if isinstance(arch, str):
            arch = eval(arch)
        self.gnn_layers = nn.ModuleList([dglnn.GATConv(**layer_arch) for layer_arch in arch])

    def forward(self, blocks, x):
        assert len(blocks) == len(self.gnn_layers)
        for i, (block, gnn_layer) in enumerate(zip(blocks, self.gnn_layers)):
            x = gnn_layer(block, x)
            x = x.mean(dim=-2)
        return x


class _MLP(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.m = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))

    def forward(self, x):
        return self.m(x)


class GINModule(nn.Module):
    """Follows CGCL-codes/XGCN_library model/GIN.py.
    XGCN's GIN_Module: the MLPs in one ModuleList, GINConv modules built over them in another
    (each MLP registered twice), sum aggregation. Constructs: blocks style with
    `assert len(blocks) == len(self.gnn_layers)`, a module registered under two parents."""

    def __init__(self, num_gcn_layers=2, width=8):
        super().__init__()
        self.gin_mlp_list = nn.ModuleList([_MLP(width) for _ in range(num_gcn_layers)])
        self.gnn_layers = nn.ModuleList(
            [dglnn.GINConv(apply_func=self.gin_mlp_list[i], aggregator_type="sum") for i in range(num_gcn_layers)]
        )

    def forward(self, blocks, x):
        assert len(blocks) == len(self.gnn_layers)
        for i, (block, gnn_layer) in enumerate(zip(blocks, self.gnn_layers)):
            x = gnn_layer(block, x)
        return x


class GraphSAGEModule(nn.Module):
    """Follows CGCL-codes/XGCN_library model/GraphSAGE.py.
    XGCN's GraphSAGE_Module: an evaluated architecture string of SAGEConv('pool') layers,
    blocks style with the assert. Constructs: `eval` of an architecture string, blocks style,
    SAGEConv's pool aggregator."""

    def __init__(self, arch="[{'in_feats': 8, 'out_feats': 8, 'aggregator_type': 'pool', 'activation': torch.tanh}, "
                            "{'in_feats': 8, 'out_feats': 8, 'aggregator_type': 'pool'}]"):
        super().__init__()
        if isinstance(arch, str):
            arch = eval(arch)
        self.gnn_layers = nn.ModuleList([dglnn.SAGEConv(**layer_arch) for layer_arch in arch])

    def forward(self, blocks, x):
        assert len(blocks) == len(self.gnn_layers)
        for i, (block, gnn_layer) in enumerate(zip(blocks, self.gnn_layers)):
            x = gnn_layer(block, x)
        return x


class LightGCNConv(nn.Module):
    """XGCN's LightGCNConv: num_layers rounds of `update_all(u_mul_e('h', 'ew'))` in one call, over
    the symmetric norm the training script put on the graph's edges as 'ew'; with stack_layers
    every round is kept and the rounds' mean returned (`torch.stack(X_list, dim=1).mean(dim=1)`)."""

    def __init__(self, num_layers, stack_layers=True):
        super().__init__()
        self.num_layers = num_layers
        self.stack_layers = stack_layers
        self.gcn_msg = fn.u_mul_e("h", "ew", "m")
        self.gcn_reduce = fn.sum(msg="m", out="h")

    def forward(self, graph, X):
        with graph.local_scope():
            if self.stack_layers:
                X_list = [X]
                for _ in range(self.num_layers):
                    graph.srcdata["h"] = X_list[-1]
                    graph.update_all(self.gcn_msg, self.gcn_reduce)
                    X_list.append(graph.dstdata["h"])
                X_out = torch.stack(X_list, dim=1).mean(dim=1)
            else:
                for _ in range(self.num_layers):
                    graph.srcdata["h"] = X
                    graph.update_all(self.gcn_msg, self.gcn_reduce)
                    X = graph.dstdata["h"]
                X_out = X
            return X_out


class LightGCN(nn.Module):
    """Follows CGCL-codes/XGCN_library model/LightGCN.py (LightGCNConv, LightGCN_DGL).
    XGCN's LightGCN_DGL (`get_out_emb`: `self.gcn(self.undi_g, self.base_emb_table)`), with the
    graph given to forward: the embedding table of every node as the input (`forward(self, g)`
    takes no features), the propagation rounds inside one user module, the result split into the
    users' rows and the items' (`out_emb_table[self.num_users:]` in prepare_for_eval).
    Constructs: a model whose input is its own weight, K-round propagation in a user module, an
    edge field read from the graph, results split by a count of the model's."""

    def __init__(self, num_nodes, num_users, emb_dim, num_gcn_layers, stack_layers=True):
        super().__init__()
        self.num_users = num_users
        self.base_emb_table = nn.Embedding(num_nodes, emb_dim)
        self.gcn = LightGCNConv(num_layers=num_gcn_layers, stack_layers=stack_layers)

    def forward(self, g):
        out_emb = self.gcn(g, self.base_emb_table.weight)
        return out_emb[: self.num_users], out_emb[self.num_users:]


class NGCFConv(nn.Module):
    """RecHub's NGCFConv: out-degree norm on the sources, a sum of the normed rows and a Python
    message `edges.src['h'] * edges.dst['h_original']` for the interaction term, in-degree norm
    on the destinations, a self term from the unnormed input."""

    def __init__(self, in_features, out_features, activation=None):
        super().__init__()
        self.activation = activation
        self.weight_self = nn.Parameter(torch.empty(in_features, out_features))
        self.weight_interaction = nn.Parameter(torch.empty(in_features, out_features))
        nn.init.xavier_uniform_(self.weight_self)
        nn.init.xavier_uniform_(self.weight_interaction)

    def forward(self, graph, feature):
        with graph.local_scope():
            feature_original = feature
            degs = graph.out_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5)
            shp = norm.shape + (1,) * (feature.dim() - 1)
            norm = torch.reshape(norm, shp)
            feature = feature * norm
            graph.srcdata["h"] = feature
            graph.srcdata["h_original"] = feature_original
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h_self"))

            def message_func(edges):
                return {"m": torch.mul(edges.src["h"], edges.dst["h_original"])}

            graph.update_all(message_func, fn.sum("m", "h_interaction"))
            rst = torch.matmul(graph.dstdata["h_self"], self.weight_self) + torch.matmul(
                graph.dstdata["h_interaction"], self.weight_interaction
            )
            degs = graph.in_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5)
            shp = norm.shape + (1,) * (feature.dim() - 1)
            norm = torch.reshape(norm, shp)
            rst = rst * norm
            rst = rst + torch.matmul(feature_original, self.weight_self)
            if self.activation is not None:
                rst = self.activation(rst)
            return rst


class NGCF(nn.Module):
    """Follows yusanshi/RecHub src/model/heterogeneous/aggregator/ngcf/ngcf_conv.py.
    RecHub's NGCF: two NGCFConv with a ReLU between. Constructs: a Python message function
    reading both ends, a user module reading its sources' out-degrees."""

    def __init__(self, in_feats, hidden_size, out_feats):
        super().__init__()
        self.layer1 = NGCFConv(in_feats, hidden_size)
        self.layer2 = NGCFConv(hidden_size, out_feats)

    def forward(self, g, inputs):
        h = self.layer1(g, inputs)
        h = torch.relu(h)
        return self.layer2(g, h)


class HeteroAggregatorGCN(nn.Module):
    """Follows yusanshi/RecHub src/model/heterogeneous/aggregator/base.py, gcn.py.
    RecHub's HeterogeneousAggregator with its GCN layers: one stack of HeteroGraphConv per
    primary relation (relations named `x` and `x-by`), `forward(self, blocks, input_embeddings)`
    that accepts features by node type or by relation (`isinstance(list(...values())[0], dict)`),
    each stack run on `dgl.edge_type_subgraph(block, [etype, reverse])` of every block, the
    results returned per relation and node type. Constructs: blocks style on a heterograph,
    type subgraphs made in forward, isinstance on the input's values, a dict keyed by canonical
    edge types, `str(etype)` keys into a ModuleDict."""

    def __init__(self, graph_embedding_dims, etypes):
        super().__init__()
        etypes = [tuple(x) for x in etypes]
        self.primary_etypes = [x for x in etypes if not x[1].endswith("-by")]
        self.layer_dict = nn.ModuleDict()
        for etype in self.primary_etypes:
            layers = nn.ModuleList()
            for i in range(len(graph_embedding_dims) - 2):
                layers.append(dglnn.HeteroGraphConv(
                    {e: dglnn.GraphConv(graph_embedding_dims[i], graph_embedding_dims[i + 1], activation=nn.ReLU(),
                                        allow_zero_in_degree=True)
                     for e in [etype[1], f"{etype[1]}-by"]}))
            layers.append(dglnn.HeteroGraphConv(
                {e: dglnn.GraphConv(graph_embedding_dims[-2], graph_embedding_dims[-1], allow_zero_in_degree=True)
                 for e in [etype[1], f"{etype[1]}-by"]}))
            self.layer_dict[str(etype)] = layers

    def single_forward(self, layers, blocks, h):
        for layer, block in zip(layers, blocks):
            h = layer(block, h)
        return h

    def forward(self, blocks, input_embeddings):
        different_embeddings = True if isinstance(list(input_embeddings.values())[0], dict) else False
        output_embeddings = {}
        for etype in self.primary_etypes:
            if different_embeddings:
                h = input_embeddings[etype]
            else:
                h = {node_name: input_embeddings[node_name] for node_name in [etype[0], etype[2]]}
            assert len(h) == 2
            layers = self.layer_dict[str(etype)]
            sub_blocks = [dgl.edge_type_subgraph(block, [etype, (etype[2], f"{etype[1]}-by", etype[0])])
                          for block in blocks]
            h = self.single_forward(layers, sub_blocks, h)
            output_embeddings[etype] = h
        return output_embeddings


class EmbeddingGNN(nn.Module):
    """Follows CGCL-codes/XGCN_library model/BaseGNNModel.py, model/GraphSAGE.py.
    XGCN's BaseGNNModel at evaluation (`self.gnn(blocks, self.base_emb_table(input_nids))`),
    with the input node IDs read where a sampler puts them, `blocks[0].srcdata[dgl.NID]`: an
    embedding table as the input, then the GraphSAGE module on the blocks. Constructs: blocks
    style, a block's source node IDs (IDs in the sampled graph) indexing a table of the model."""

    def __init__(self, num_nodes, emb_dim=8):
        super().__init__()
        self.base_emb_table = nn.Embedding(num_nodes, emb_dim)
        self.gnn = GraphSAGEModule()

    def forward(self, blocks):
        input_nids = blocks[0].srcdata[dgl.NID]
        return self.gnn(blocks, self.base_emb_table(input_nids))

"""The survey's table: one row per model class of tests/models/survey/, with the options the
README would tell a user to give (only those a user could know), whether exact layer-wise
inference is possible in principle (per-node outputs, no data-dependent control flow on feature
values, no randomness, no whole-graph readout), the mechanisms of issue 35 it exercises (1..10,
empty for none), and how benchmarks/survey.py builds the graph and forward's arguments for its own
independent check of a written module.

Argument specs, in forward's order after self:
  "g"            the graph            "g2"          a second graph on the same nodes
  "blocks:L"     [g] * L (inference is then called with g)
  "graphs:K"     K graphs on the same nodes, side by side
  "x:W"          float rows (N, W)    "xt:TYPE:W"   float rows of one node type (heterograph)
  "seq:T:W"      float (N, T, W)      "ids:V"       int64 (N,) in [0, V)
  "e:W"          float edge rows (E, W)
  "hd:T=W,..."   a dict of float rows by node type
Graph kinds: "homo" (200 nodes, some without in-edges unless self_loops), "hetero" (the
metagraph's relations, 50 nodes per type unless num_nodes says), "typed" (dgl.to_homogeneous of
such a heterograph, carrying dgl.NTYPE / dgl.ETYPE). gdata adds fields: {"ndata": {name: shape},
"edata": {name: shape}} (shape after the row count)."""

from __future__ import annotations

from dataclasses import dataclass, field

ACM = "paper:pa:author,author:ap:paper,paper:ps:subject,subject:sp:paper"
ACM_ETYPES = ["pa", "ap", "ps", "sp"]
REV = "author:writes:paper,paper:rev-writes:author,paper:cites:paper,paper:rev-cites:paper"
YELP = "review:rur:review,review:rtr:review,review:rsr:review"
SAGEMAKER = ("target:target<>card:card,card:card<>target:target,target:target<>addr:addr,"
             "addr:addr<>target:target,target:self_relation:target")
SAGEMAKER_ETYPES = ["target<>card", "card<>target", "target<>addr", "addr<>target", "self_relation"]
RECHUB = "user:buy:item,item:buy-by:user,user:like:tag,tag:like-by:user"
ALL6 = "author=6,paper=6,subject=6"

MECHANISMS = {
    1: "static decisions taken for data",
    2: "forward's defaults and flags",
    3: "graphs built in forward",
    4: "several graphs",
    5: "values derived from the graph",
    6: "the user's own message-passing modules",
    7: "propagation loops in user modules",
    8: "heterogeneous forms beyond HeteroGraphConv",
    9: "rows on another axis",
    10: "crashes seen",
}


@dataclass(frozen=True)
class SurveyCase:
    name: str  # the class in the file
    family: str  # the file under tests/models/survey/, without .py
    source: str  # "owner/repo path" of the public code it follows
    init: dict | None
    args: tuple[str, ...]
    possible: bool
    mechanisms: tuple[int, ...]
    graph: str = "homo"
    metagraph: str | None = None  # the --metagraph option, where the README asks a user for it
    schema: str | None = None  # the check graph's relations where --metagraph is not given
    feat_dims: str | None = None
    self_loops: bool = False  # the model refuses nodes without in-edges; its users add self-loops
    gdata: dict = field(default_factory=dict)
    num_nodes: dict | None = None  # per node type, for "hetero"
    blocks_style: bool = False
    # forward reads blocks[0].srcdata[dgl.NID]: it is called on [g] * L with g's own IDs there (what
    # a sampler's blocks carry), inference on g carrying a parent graph's IDs (as
    # dgl.to_homogeneous or a subgraph leaves them), which a block of g would not show
    parent_ids: bool = False
    # the --blocks option: forward's depth is the number of blocks it is given, which its user knows
    blocks: int | None = None
    why_not: str = ""  # why exact inference is impossible, when it is

    @property
    def target(self) -> str:
        return f"tests/models/survey/{self.family}.py:{self.name}"

    @property
    def relations(self) -> str | None:
        return self.schema or self.metagraph

    @property
    def heterogeneous(self) -> bool:
        return self.graph == "hetero"


OHG = "BUPT-GAMMA/OpenHGNN"
BG = "graphdeeplearning/benchmarking-gnns"
AGDN = "skepsun/Adaptive-Graph-Diffusion-Networks"
XGCN = "CGCL-codes/XGCN_library"

CASES: tuple[SurveyCase, ...] = (
    # --- OpenHGNN -------------------------------------------------------------------------
    SurveyCase("HAN", "openhgnn_style", f"{OHG} openhgnn/models/HAN.py, openhgnn/layers/MetapathConv.py",
               {"meta_paths_dict": {"pap": ["pa", "ap"], "psp": ["ps", "sp"]}, "category": "paper",
                "in_size": 6, "hidden_size": 4, "out_size": 3, "num_heads": [2, 2]},
               ("g", "hd:paper=6"), True, (1, 3, 8), graph="hetero", feat_dims="paper=6", schema=ACM),
    SurveyCase("HANV0", "openhgnn_style", f"{OHG} openhgnn/models/HAN.py",
               {"meta_paths": [["pa", "ap"], ["ps", "sp"]], "category": "paper", "in_size": 6, "hidden_size": 4,
                "out_size": 3, "num_heads": [2]},
               ("g", "hd:paper=6"), True, (1, 3, 8), graph="hetero", feat_dims="paper=6", schema=ACM),
    SurveyCase("HPN", "openhgnn_style", f"{OHG} openhgnn/models/HPN.py",
               {"meta_paths_dict": {"pap": ["pa", "ap"], "psp": ["ps", "sp"]}, "category": ["paper"],
                "in_size": 6, "out_size": 3, "out_embedsize": 8, "k_layer": 3, "alpha": 0.1},
               ("g", "hd:paper=6"), True, (1, 3, 7, 8), graph="hetero", feat_dims="paper=6", schema=ACM),
    SurveyCase("RGCN", "openhgnn_style", f"{OHG} openhgnn/models/RGCN.py",
               {"in_dim": 6, "hidden_dim": 8, "out_dim": 3, "etypes": ACM_ETYPES, "num_bases": 2,
                "num_hidden_layers": 0, "use_self_loop": True},
               ("g", f"hd:{ALL6}"), True, (1, 8), graph="hetero", metagraph=ACM, feat_dims=ALL6),
    SurveyCase("RGCNOnBlocks", "openhgnn_style", f"{OHG} openhgnn/models/RGCN.py (mini-batch branch)",
               {"in_dim": 6, "hidden_dim": 8, "out_dim": 3, "etypes": ACM_ETYPES, "num_bases": 2,
                "num_hidden_layers": 0, "use_self_loop": True},
               ("blocks:2", f"hd:{ALL6}"), True, (1, 8), graph="hetero", metagraph=ACM, feat_dims=ALL6,
               blocks_style=True),
    SurveyCase("SimpleHGN", "openhgnn_style", f"{OHG} openhgnn/models/SimpleHGN.py",
               {"edge_dim": 4, "num_etypes": 4, "in_dim": [6], "hidden_dim": 4, "num_classes": 3, "num_layers": 2,
                "heads": [2, 1], "negative_slope": 0.2, "residual": True, "beta": 0.05,
                "ntypes": ["author", "paper", "subject"]},
               ("g", f"hd:{ALL6}"), True, (1, 3, 5, 6, 8), graph="hetero", metagraph=ACM, feat_dims="h_dict=6"),
    SurveyCase("SimpleHGNOnBlocks", "openhgnn_style", f"{OHG} openhgnn/models/SimpleHGN.py (mini-batch branch)",
               {"edge_dim": 4, "num_etypes": 4, "in_dim": 6, "hidden_dim": 4, "num_classes": 3, "heads": [2, 1],
                "beta": 0.05},
               ("blocks:2", "x:6"), True, (5, 6), graph="typed", feat_dims="h=6", schema=ACM,
               blocks_style=True),
    SurveyCase("HGT", "openhgnn_style", f"{OHG} openhgnn/models/HGT.py",
               {"in_dim": 8, "out_dim": 3, "num_heads": 2, "num_etypes": 4, "num_ntypes": 3, "num_layers": 2},
               ("g", "hd:author=8,paper=8,subject=8"), True, (3, 5, 8), graph="hetero", metagraph=ACM,
               feat_dims="h_dict=8"),
    SurveyCase("HGTOnBlocks", "openhgnn_style", f"{OHG} openhgnn/models/HGT.py (mini-batch branch)",
               {"in_dim": 8, "out_dim": 3, "num_heads": 2, "num_etypes": 4, "num_ntypes": 3, "num_layers": 2},
               ("blocks:2", "x:8"), True, (5, 6), graph="typed", schema=ACM, blocks_style=True),
    SurveyCase("CompGCN", "openhgnn_style", f"{OHG} openhgnn/models/CompGCN.py",
               {"in_dim": 6, "hid_dim": 8, "out_dim": 3, "etypes": ["writes", "rev-writes", "cites", "rev-cites"],
                "n_rels": 4, "num_layers": 2},
               ("g", "hd:author=6,paper=6"), True, (1, 6, 8), graph="hetero", metagraph=REV,
               feat_dims="author=6,paper=6"),
    SurveyCase("GTN", "openhgnn_style", f"{OHG} openhgnn/models/GTN_sparse.py",
               {"num_edge_type": 5, "num_channels": 2, "in_dim": 6, "hidden_dim": 8, "num_class": 3,
                "category_id": 1},
               ("g", f"hd:{ALL6}"), True, (3, 5, 8), graph="hetero", metagraph=ACM, feat_dims=ALL6),
    SurveyCase("RGAT", "openhgnn_style", f"{OHG} openhgnn/models/RGAT.py",
               {"in_dim": 6, "out_dim": 3, "h_dim": 4, "etypes": ACM_ETYPES, "num_heads": 2},
               ("g", f"hd:{ALL6}"), True, (1, 2, 6, 8), graph="hetero", metagraph=ACM, feat_dims=ALL6,
               self_loops=True),
    # --- fraud detection ----------------------------------------------------------------------
    SurveyCase("BWGNN", "fraud_style", "squareRoot3/Rethinking-Anomaly-Detection BWGNN.py",
               {"in_feats": 8, "h_feats": 8, "num_classes": 2, "d": 2}, ("g", "x:8"), True, (5, 7)),
    SurveyCase("BWGNNBatch", "fraud_style", "squareRoot3/Rethinking-Anomaly-Detection BWGNN.py (batch, PolyConvBatch)",
               {"in_feats": 8, "h_feats": 8, "num_classes": 2, "d": 2}, ("blocks:1", "x:8"), True, (5, 6, 7),
               blocks_style=True),
    SurveyCase("BWGNNHetero", "fraud_style", "squareRoot3/Rethinking-Anomaly-Detection BWGNN.py (BWGNN_Hetero)",
               {"in_feats": 8, "h_feats": 8, "num_classes": 2, "d": 2}, ("g", "xt:review:8"), True, (1, 3, 7, 8),
               # forward takes the review rows as one tensor, in_feat: its width by that name
               graph="hetero", metagraph=YELP, feat_dims="in_feat=8"),
    SurveyCase("MultiGraphBWGNN", "fraud_style", "Ling-Fei-Ren/mlcg-fd BWGNN.py (BWGNN_Hetero)",
               {"in_feats_voc": 4, "in_feats_sms": 4, "in_feats_personal": 5, "h_feats": 8, "num_classes": 2},
               ("graphs:3", "seq:5:4", "seq:5:4", "x:5"), True, (4, 7),
               # a sequence of 5 steps per node: the LSTMs' width alone does not tell the rows' shape
               feat_dims="voc_features=5x4,sms_features=5x4"),
    SurveyCase("HeteroRGCN", "fraud_style", "awslabs/sagemaker-graph-fraud-detection source/sagemaker/dgl-fraud-detection/model.py",
               {"num_nodes": {"card": 50, "addr": 50}, "in_size": 8, "hidden_size": 8, "out_size": 2, "n_layers": 2,
                "embedding_size": 8, "etypes": SAGEMAKER_ETYPES},
               ("g", "xt:target:8"), True, (1, 8), graph="hetero", metagraph=SAGEMAKER, feat_dims="target=8"),
    # --- self-supervised ------------------------------------------------------------------------
    SurveyCase("GraphMAEGAT", "ssl_style", "THUDM/GraphMAE graphmae/models/gat.py",
               {"in_dim": 8, "num_hidden": 4, "out_dim": 4, "num_layers": 2, "nhead": 2, "nhead_out": 1,
                "activation": "prelu", "residual": True, "concat_out": True, "encoding": True},
               ("g", "x:8"), True, (2, 6), self_loops=True),
    SurveyCase("GraphMAEPreModel", "ssl_style", "THUDM/GraphMAE graphmae/models/edcoder.py",
               {"in_dim": 8, "num_hidden": 4}, ("g", "x:8"), False, (), self_loops=True,
               why_not="random masking in forward (torch.randperm)"),
    SurveyCase("CCASSG", "ssl_style", "hengruizhang98/CCA-SSG model.py", {"in_dim": 8, "hid_dim": 8, "out_dim": 4,
               "n_layers": 2}, ("g", "x:8", "g2", "x:8"), True, (4,)),
    SurveyCase("CCASSGMLP", "ssl_style", "hengruizhang98/CCA-SSG model.py (MLP backbone)",
               {"nfeat": 8, "nhid": 8, "nclass": 3}, ("g", "x:8"), True, ()),
    SurveyCase("GGD", "ssl_style", "zyzisastudyreallyhardguy/Graph-Group-Discrimination GGD_ogbn_arxiv_1epoch/ggd.py",
               {"in_feats": 8, "n_hidden": 8, "n_layers": 1, "num_hop": 10}, ("g", "x:8"), True, (2, 5, 7, 9)),
    # --- benchmarking-gnns ----------------------------------------------------------------------
    SurveyCase("GatedGCNNet", "benchmarking_gnns_style",
               f"{BG} nets/SBMs_node_classification/gated_gcn_net.py, layers/gated_gcn_layer.py",
               {"in_dim": 5, "hidden_dim": 8, "n_classes": 3, "n_layers": 2}, ("g", "ids:5", "e:1"), True, (1, 2, 6)),
    SurveyCase("GatedGCNIsotropicNet", "benchmarking_gnns_style",
               f"{BG} nets/WikiCS_node_classification/gated_gcn_net.py, layers/gated_gcn_layer.py",
               {"in_dim": 6, "hidden_dim": 8, "n_classes": 3, "n_layers": 2}, ("g", "x:6", "e:1"), True, (6,),
               feat_dims="e=1"),
    SurveyCase("MoNet", "benchmarking_gnns_style", f"{BG} nets/SBMs_node_classification/mo_net.py, layers/gmm_layer.py",
               {"in_dim": 5, "hidden_dim": 8, "out_dim": 8, "n_classes": 3, "kernel": 2, "dim": 2, "n_layers": 2},
               ("g", "ids:5", "e:1"), True, (5, 6), feat_dims="e=1"),
    SurveyCase("GCNNet", "benchmarking_gnns_style", f"{BG} nets/WikiCS_node_classification/gcn_net.py, layers/gcn_layer.py",
               {"in_dim": 6, "hidden_dim": 8, "out_dim": 8, "n_classes": 3, "n_layers": 2}, ("g", "x:6", "e:1"),
               True, (6,), feat_dims="e=1"),
    SurveyCase("GCNGraphClassifier", "benchmarking_gnns_style", f"{BG} nets/TUs_graph_classification/gcn_net.py",
               {"in_dim": 6, "hidden_dim": 8, "out_dim": 8, "n_classes": 3, "n_layers": 2}, ("g", "x:6", "e:1"),
               False, (), feat_dims="e=1", why_not="whole-graph readout (dgl.mean_nodes)"),
    SurveyCase("GraphSageNet", "benchmarking_gnns_style",
               f"{BG} nets/SBMs_node_classification/graphsage_net.py, layers/graphsage_layer.py",
               {"in_dim": 5, "hidden_dim": 8, "n_classes": 3, "n_layers": 2}, ("g", "ids:5", "e:1"), True, (6,),
               feat_dims="e=1", self_loops=True),  # max over no messages leaves NaN rows: SBM graphs have none
    SurveyCase("GINNet", "benchmarking_gnns_style", f"{BG} nets/SBMs_node_classification/gin_net.py, layers/gin_layer.py",
               {"in_dim": 5, "hidden_dim": 8, "n_classes": 3, "n_layers": 2}, ("g", "ids:5", "e:1"), True, (6,),
               feat_dims="e=1"),
    SurveyCase("GATNet", "benchmarking_gnns_style", f"{BG} nets/SBMs_node_classification/gat_net.py, layers/gat_layer.py",
               {"in_dim": 5, "hidden_dim": 4, "out_dim": 8, "n_classes": 3, "num_heads": 2, "n_layers": 2},
               ("g", "ids:5", "e:1"), True, (6,), feat_dims="e=1"),
    # --- OGB leaderboard (AGDN, C&S) ------------------------------------------------------------
    SurveyCase("GCNHA", "ogb_style", f"{AGDN} ogbn-arxiv/src/models.py (GCNHAConv)",
               {"in_feats": 8, "n_hidden": 4, "n_classes": 3, "n_layers": 2, "n_heads": 2, "K": 3},
               ("g", "x:8"), True, (1, 5, 6, 7), self_loops=True, gdata={"edata": {"gcn_norm": [1, 1]}},
               feat_dims="gcn_norm=1x1"),  # AGDN's script sets it as (E, 1, 1): a user knows it
    SurveyCase("ProductsGAT", "ogb_style", f"{AGDN} ogbn-products/src/models.py (GAT)",
               {"node_feats": 8, "edge_feats": 4, "n_classes": 3, "n_layers": 2, "n_heads": 2, "n_hidden": 4,
                "edge_emb": 4},
               ("g",), True, (1, 2, 5), gdata={"ndata": {"feat": [8]}, "edata": {"feat": [4]}}),
    SurveyCase("AGDN", "ogb_style", f"{AGDN} ogbn-products/src/models.py (AGDN, AGDNConv)",
               {"node_feats": 8, "n_classes": 3, "n_layers": 2, "n_heads": 2, "n_hidden": 4, "K": 2},
               ("g",), True, (1, 5, 6, 7), gdata={"ndata": {"feat": [8]}}),
    SurveyCase("OutcomeCorrelation", "ogb_style", f"{AGDN} ogbn-arxiv/src/correct_and_smooth.py",
               {"n_prop": 4, "alpha": 0.7, "use_norm": True}, ("g", "x:3"), True, (2, 5, 7), feat_dims="y0=3"),
    # --- recommendation (XGCN, RecHub, LightGCN) -----------------------------------------------
    SurveyCase("BlockLightGCN", "recsys_style", f"{XGCN} model/Block_LightGCN.py", None, ("blocks:2", "x:8"), True,
               (5, 6), feat_dims="x=8", gdata={"edata": {"ew": []}}, blocks_style=True, blocks=2),
    SurveyCase("GATModule", "recsys_style", f"{XGCN} model/GAT.py", None, ("blocks:2", "x:8"), True, (6,),
               self_loops=True, blocks_style=True),
    SurveyCase("GINModule", "recsys_style", f"{XGCN} model/GIN.py", {"num_gcn_layers": 2, "width": 8},
               ("blocks:2", "x:8"), True, (), blocks_style=True),
    SurveyCase("GraphSAGEModule", "recsys_style", f"{XGCN} model/GraphSAGE.py", None, ("blocks:2", "x:8"), True, (),
               blocks_style=True),
    SurveyCase("EmbeddingGNN", "recsys_style", f"{XGCN} model/BaseGNNModel.py, model/GraphSAGE.py",
               {"num_nodes": 200, "emb_dim": 8}, ("blocks:2",), True, (5,), blocks_style=True, parent_ids=True),
    SurveyCase("LightGCN", "recsys_style", f"{XGCN} model/LightGCN.py (LightGCNConv, LightGCN_DGL)",
               {"num_nodes": 200, "num_users": 120, "emb_dim": 8, "num_gcn_layers": 3}, ("g",), True, (5, 6, 7),
               gdata={"edata": {"ew": []}}),
    SurveyCase("NGCF", "recsys_style", "yusanshi/RecHub src/model/heterogeneous/aggregator/ngcf/ngcf_conv.py",
               {"in_feats": 8, "hidden_size": 8, "out_feats": 4}, ("g", "x:8"), True, (5, 6),
               feat_dims="inputs=8"),
    SurveyCase("HeteroAggregatorGCN", "recsys_style",
               "yusanshi/RecHub src/model/heterogeneous/aggregator/base.py, gcn.py",
               {"graph_embedding_dims": [6, 8, 4],
                "etypes": [["user", "buy", "item"], ["item", "buy-by", "user"], ["user", "like", "tag"],
                           ["tag", "like-by", "user"]]},
               ("blocks:2", "hd:item=6,tag=6,user=6"), True, (1, 3, 8), graph="hetero", metagraph=RECHUB,
               feat_dims="item=6,tag=6,user=6", blocks_style=True),
)


def by_name() -> dict[str, SurveyCase]:
    return {case.name: case for case in CASES}

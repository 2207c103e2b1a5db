"""Issue 35's survey found models gnn-codegen got wrong, crashed on, or refused for a size it
chose itself (benchmarks/results/survey.md). Each is pinned here on the survey's own model class
(tests/models/survey/), and where a module is written, judged by the survey's independent check
(benchmarks/survey_check.py: the user's forward against the written inference on its own graph)."""

from __future__ import annotations

import re

import importlib
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import dgl
import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all, regenerate_command
from tests.cases import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import survey_check  # noqa: E402

RECSYS = "tests/models/survey/recsys_style.py"


def _written_and_checked(name: str, target: str, options: GenerateOptions, tmp_path: Path) -> dict:
    """The module gnn-codegen writes for `target`, judged by the survey's own check."""
    generated = generate_all(target, options)
    out = tmp_path / f"{name}_inference.py"
    out.write_text(generated.source)
    return survey_check.check(name, out)


# --- 1. a blocks-style forward whose depth is the number of blocks it is given ----------------


def test_a_depth_given_by_the_blocks_is_refused_naming_the_line_that_measures_them() -> None:
    """BlockLightGCN (XGCN): `for i in range(len(blocks))` over weightless propagation. Traced
    with 1 block it was written as forward([g] * 1, x) while its users call it with 2 or 3:
    silently wrong. Now the count is the user's to give."""
    with pytest.raises(errors.BlockCountError) as info:
        generate_all(f"{RECSYS}:BlockLightGCN", GenerateOptions(feat_dims="x=8"))
    message = str(info.value)
    assert message.startswith(f"{RECSYS}:27 (`for i in range(len(blocks)):`): ")
    assert "traced with 1 block in blocks it runs 1 hop, with 2 it runs 2" in message
    assert "--blocks 2" in message


def test_blocks_gives_the_depth_and_the_module_equals_forward_called_so(tmp_path: Path) -> None:
    options = GenerateOptions(feat_dims="x=8", blocks=2)
    generated = generate_all(f"{RECSYS}:BlockLightGCN", options)
    assert generated.program.num_blocks == 2
    assert "self.forward([g] * 2, x)" in generated.source  # the docstring says the depth
    assert "--blocks 2" in regenerate_command(f"{RECSYS}:BlockLightGCN", options)
    assert generated.verification is not None  # the check before writing called forward with 2 blocks
    assert _written_and_checked("BlockLightGCN", f"{RECSYS}:BlockLightGCN", options, tmp_path)["outcome"] == "exact"


@pytest.mark.parametrize("name", ["GraphSAGEModule", "GATModule"])
def test_forwards_that_zip_their_layers_with_the_blocks_keep_their_own_count(name: str) -> None:
    """`zip(blocks, self.gnn_layers)`: one block more changes nothing (or fails an assert)."""
    generated = generate_all(f"{RECSYS}:{name}", GenerateOptions(verify=False))
    assert generated.program.num_blocks == 2


def _model_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "blocks_model.py"
    path.write_text(textwrap.dedent('''\
        import dgl.nn as dglnn
        import torch.nn as nn
    ''') + textwrap.dedent(body))
    return str(path)


def test_a_forward_that_indexes_its_layers_by_block_keeps_its_count(tmp_path: Path) -> None:
    """`self.convs[i]` for i in range(len(blocks)): a block more indexes past the layers."""
    path = _model_file(tmp_path, '''
        class SAGE(nn.Module):
            def __init__(self):
                super().__init__()
                self.convs = nn.ModuleList([dglnn.SAGEConv(8, 8, "mean") for _ in range(3)])

            def forward(self, blocks, x):
                h = x
                for i in range(len(blocks)):
                    h = self.convs[i](blocks[i], h)
                return h
    ''')
    generated = generate_all(f"{path}:SAGE", GenerateOptions(feat_dims="x=8"))
    assert generated.program.num_blocks == 3


def test_one_conv_applied_to_every_block_is_refused_without_blocks(tmp_path: Path) -> None:
    path = _model_file(tmp_path, '''
        class Shared(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = dglnn.SAGEConv(8, 8, "mean")

            def forward(self, blocks, x):
                h = x
                for block in blocks:
                    h = self.conv(block, h)
                return h
    ''')
    with pytest.raises(errors.BlockCountError, match=r"blocks_model.py:\d+ \(`for block in blocks:`\)"):
        generate_all(f"{path}:Shared", GenerateOptions(feat_dims="x=8"))
    assert generate_all(f"{path}:Shared", GenerateOptions(feat_dims="x=8", blocks=3)).program.num_blocks == 3


def test_blocks_for_a_forward_of_one_graph_is_refused() -> None:
    with pytest.raises(errors.OptionsError, match="one graph, not a list of blocks"):
        generate_all("generated_examples/gcn/model.py:GCN",
                     GenerateOptions(init='{"in_size": 16, "hid_size": 16, "out_size": 4, "num_layers": 3}', blocks=2))


# --- 2. an input forward hands through unread ----------------------------------------------------

BG = "tests/models/survey/benchmarking_gnns_style.py"


def test_edge_features_a_layer_hands_through_unread_are_taken_with_any_rows(tmp_path: Path) -> None:
    """GatedGCNIsotropicNet (benchmarking-gnns): `h, e = conv(g, h, e)` where the isotropic layer
    returns e untouched. The written inference checked e as a row per node, so forward's own
    call (e a row per edge) raised ValueError; the check before writing passed because it gave e
    a row per node to both."""
    options = GenerateOptions(init='{"in_dim": 6, "hidden_dim": 8, "n_classes": 3, "n_layers": 2}', feat_dims="e=1")
    generated = generate_all(f"{BG}:GatedGCNIsotropicNet", options)
    assert generated.program.unread_inputs() == {"e"}
    assert '"e": e' not in generated.source  # no row check of it
    out = tmp_path / "gated_inference.py"
    out.write_text(generated.source)
    assert survey_check.check("GatedGCNIsotropicNet", out)["outcome"] == "exact"


# --- 3. a table indexed by node IDs fixes the graph's node count --------------------------------


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_embedding_indexed_by_node_ids_sizes_the_check_and_is_checked_at_entry(tmp_path: Path) -> None:
    """EmbeddingGNN (XGCN's BaseGNNModel): `self.base_emb_table(blocks[0].srcdata[dgl.NID])` on
    a 200-row table. The check before writing ran forward on 240 nodes and failed (exit 1)."""
    options = GenerateOptions(init='{"num_nodes": 200, "emb_dim": 8}')
    generated = generate_all(f"{RECSYS}:EmbeddingGNN", options)
    assert generated.attributes.node_tables == (("base_emb_table", 200),)
    assert generated.verification is not None and generated.verification.num_nodes == 200
    out = tmp_path / "embedding_inference.py"
    out.write_text(generated.source)
    assert survey_check.check("EmbeddingGNN", out)["outcome"] == "exact"
    model = _import(out, "embedding_inference").EmbeddingGNN(num_nodes=200, emb_dim=8)
    # more nodes than rows: forward would index past the table (fewer are the table's first
    # nodes, as forward on such a graph reads them)
    with pytest.raises(ValueError, match=r"self.base_emb_table \(200 rows\) by node ID: g must have at most 200 "
                                         r"nodes, one per row, not 250"):
        model.inference(dgl.rand_graph(250, 600), batch_size=64, device="cpu")


# --- 3. a user module that reads graph data the tracer cannot see from outside ------------------


def test_a_user_module_reading_an_edge_field_of_the_graph_is_traced_into(tmp_path: Path) -> None:
    """XGCN's LightGCNConv reads the graph's 'ew' inside (`fn.u_mul_e("h", "ew", "m")`): kept
    whole it failed on the probe graph (which has no 'ew'), refused as `RuntimeError: ew`. Traced
    into, 'ew' becomes an edge input read from the graph, and the rounds hops of their own."""
    model_file = tmp_path / "lightgcn_model.py"
    model_file.write_text(textwrap.dedent('''\
        import torch.nn as nn

        from tests.models.survey.recsys_style import LightGCNConv


        class LightGCNAll(nn.Module):
            def __init__(self, num_nodes, emb_dim, num_gcn_layers):
                super().__init__()
                self.base_emb_table = nn.Embedding(num_nodes, emb_dim)
                self.gcn = LightGCNConv(num_layers=num_gcn_layers, stack_layers=True)

            def forward(self, g):
                return self.gcn(g, self.base_emb_table.weight)
    '''))
    generated = generate_all(f"{model_file}:LightGCNAll",
                             GenerateOptions(init='{"num_nodes": 200, "emb_dim": 8, "num_gcn_layers": 3}'))
    assert 'ew = g.edata["ew"]  # as forward reads it' in generated.source
    assert generated.plan.num_layers == 3
    assert generated.verification is not None and generated.verification.ok


def test_lightgcn_split_into_users_and_items_is_written_and_exact(tmp_path: Path) -> None:
    """The survey's LightGCN splits its result into users' and items' rows by a count of the
    model's (`out_emb[: self.num_users], out_emb[self.num_users:]`): refused as mixing rows, it
    is a choice of rows of the result for all nodes (row_ranges.py), written and exact."""
    options = GenerateOptions(init='{"num_nodes": 200, "num_users": 120, "emb_dim": 8, "num_gcn_layers": 3}')
    generated = generate_all(f"{RECSYS}:LightGCN", options)
    assert "batches.result_rows(X_out,None,120,nodes=nodes" in "".join(generated.source.split())
    assert _written_and_checked("LightGCN", f"{RECSYS}:LightGCN", options, tmp_path)["outcome"] == "exact"


# --- 4. len() of a tensor in forward --------------------------------------------------------------

FRAUD = "tests/models/survey/fraud_style.py"
BWGNN_INIT = '{"in_feats": 8, "h_feats": 8, "num_classes": 2, "d": 2}'


def test_len_of_a_tensor_is_its_row_count_made_per_batch(tmp_path: Path) -> None:
    """BWGNN's `torch.zeros([len(in_feat), 0])`, the wavelet convs' results concatenated onto it
    (here in an nn.ModuleList, as item 5 asks of the original): torch.fx refused `len` on a traced
    tensor. It is the tensor's rows, which a batch has as many of as it computes."""
    model_file = tmp_path / "bwgnn_model.py"
    model_file.write_text(textwrap.dedent('''\
        import torch
        import torch.nn as nn

        from tests.models.survey.fraud_style import PolyConv, beta_wavelet_thetas


        class BWGNN(nn.Module):
            def __init__(self, in_feats, h_feats, num_classes, d=2):
                super().__init__()
                self.thetas = beta_wavelet_thetas(d)
                self.conv = nn.ModuleList([PolyConv(h_feats, h_feats, theta, lin=False) for theta in self.thetas])
                self.linear = nn.Linear(in_feats, h_feats)
                self.linear3 = nn.Linear(h_feats * len(self.conv), num_classes)
                self.act = nn.ReLU()

            def forward(self, g, in_feat):
                h = self.act(self.linear(in_feat))
                h_final = torch.zeros([len(in_feat), 0])
                for conv in self.conv:
                    h0 = conv(g, h)
                    h_final = torch.cat([h_final, h0], -1)
                return self.linear3(h_final)
    '''))
    generated = generate_all(f"{model_file}:BWGNN", GenerateOptions(init=BWGNN_INIT))
    # the row count of the rows it is made for: the input's, or the batch's (a tensor a layer
    # reads only for its count is not passed to it)
    assert re.search(r"torch\.zeros\(\[(in_feat\.shape\[0\]|block\.num_(dst|src)_nodes\(\)), 0\]\)",
                     generated.source), generated.source
    assert generated.verification is not None and generated.verification.ok
    assert "len" not in vars(importlib.import_module("tests.models.survey.fraud_style"))  # put back


# --- 5. modules in a plain Python list -----------------------------------------------------------


@pytest.mark.parametrize("name", ["BWGNN", "BWGNNBatch", "MultiGraphBWGNN"])
def test_modules_in_a_plain_list_are_called_as_forward_calls_them(name: str, tmp_path: Path) -> None:
    """BWGNN keeps its convs in `self.conv = []` (mlcg-fd its heads and linears too): refused
    until now (torch.fx: "module is not installed as a submodule"), traced by their path through
    the list now (plain_containers.py), exact, with a note that their weights are outside the
    state_dict where they have any (mlcg-fd's W_f and linear5)."""
    case = survey_check.by_name()[name]
    options = GenerateOptions(init=json.dumps(case.init), feat_dims=case.feat_dims)
    generated = generate_all(f"{FRAUD}:{name}", options)
    assert generated.verification is not None and generated.verification.ok
    out = tmp_path / f"{name}_inference.py"
    out.write_text(generated.source)
    assert survey_check.check(name, out)["outcome"] == "exact"
    if name == "MultiGraphBWGNN":
        assert "self.W_f[2](h_filters)" in generated.source and "self.linear5[1](res)" in generated.source
        assert any(n.startswith("self.W_f, self.conv, self.conv_hf, self.conv_lf, self.linear5 keep modules")
                   for n in generated.notes)


# --- 8 with 3 and 5: a tensor per node type written on the heterograph, then dgl.to_homogeneous

OHG = "tests/models/survey/openhgnn_style.py"
ACM = "paper:pa:author,author:ap:paper,paper:ps:subject,subject:sp:paper"


def test_openhgnns_hgt_takes_its_dict_and_returns_rows_by_type(tmp_path: Path) -> None:
    """`hg.ndata['h'] = h_dict`, to_homogeneous, HGTConv by the `_TYPE` fields, split back by
    `torch.where` over hg.ntypes: refused before for --metagraph ("this model has none")."""
    options = GenerateOptions(init=json.dumps({"in_dim": 8, "out_dim": 3, "num_heads": 2, "num_etypes": 4,
                                               "num_ntypes": 3, "num_layers": 2}), metagraph=ACM)
    generated = generate_all(f"{OHG}:HGT", options)
    assert 'if g.ntypes != ["author", "paper", "subject"]:' in generated.source
    assert _written_and_checked("HGT", f"{OHG}:HGT", options, tmp_path)["outcome"] == "exact"


@pytest.mark.parametrize("name, init, feat_dims, line", [
    ("SimpleHGN", {"edge_dim": 4, "num_etypes": 4, "in_dim": [6], "hidden_dim": 4, "num_classes": 3,
                   "num_layers": 2, "heads": [2, 1], "negative_slope": 0.2, "residual": True, "beta": 0.05,
                   "ntypes": ["author", "paper", "subject"]}, "h_dict=6", 354),
    # its check failed on a table of the wrong rows; given its node types per node, forward([g] * 2)
    # carries the attention from block to block, which the check now sees
    ("SimpleHGNOnBlocks", {"edge_dim": 4, "num_etypes": 4, "in_dim": 6, "hidden_dim": 4, "num_classes": 3,
                           "heads": [2, 1], "beta": 0.05}, "h=6", 623),
])
def test_simplehgns_attention_kept_on_the_graph_is_refused_naming_it(name: str, init: dict, feat_dims: str,
                                                                     line: int) -> None:
    options = GenerateOptions(init=json.dumps(init), feat_dims=feat_dims, metagraph=ACM if name == "SimpleHGN" else None)
    with pytest.raises(errors.UnsupportedModuleError) as info:
        generate_all(f"{OHG}:{name}", options)
    assert str(info.value).startswith(f"{OHG}:{line} ")
    assert "self.hgn_layers.0 (SimpleHGNConv) leaves g.edata['alpha'] on the graph forward gives it" in str(info.value)


# --- 6. user message-passing modules: empty mailboxes, out-degrees with two update_alls ------------

BENCHMARKING = "tests/models/survey/benchmarking_gnns_style.py"


@pytest.mark.parametrize("name, target, options", [
    # a Python mailbox reduce: no field on a block without edges (the runtime's _with_companion)
    ("GATNet", f"{BENCHMARKING}:GATNet", GenerateOptions(
        init='{"in_dim": 5, "hidden_dim": 4, "out_dim": 8, "n_classes": 3, "num_heads": 2, "n_layers": 2}',
        feat_dims="e=1")),
    # max + an apply node module: -inf (NaN after it) on g's nodes without in-edges, 0 on an empty block
    ("GraphSageNet", f"{BENCHMARKING}:GraphSageNet", GenerateOptions(
        init='{"in_dim": 5, "hidden_dim": 8, "n_classes": 3, "n_layers": 2}', feat_dims="e=1")),
    # out-degrees and two update_alls of one hop, a Python message reading both ends (as a graph)
    ("NGCF", f"{RECSYS}:NGCF", GenerateOptions(init='{"in_feats": 8, "hidden_size": 8, "out_feats": 4}',
                                               feat_dims="inputs=8")),
])
def test_user_modules_once_refused_equal_forward(name: str, target: str, options: GenerateOptions,
                                                 tmp_path: Path) -> None:
    assert _written_and_checked(name, target, options, tmp_path)["outcome"] == "exact"


def test_agdn_is_refused_naming_its_rounds_and_its_attention_over_out_edges() -> None:
    """AGDNConv's K rounds and its edge_softmax(norm_by='src') read beyond a block's in-edges:
    the refusal names both (not the rounds alone, whose way out would still not be exact)."""
    ogb = "tests/models/survey/ogb_style.py"
    with pytest.raises(errors.UnsupportedModuleError) as info:
        generate_all(f"{ogb}:AGDN", GenerateOptions(
            init='{"node_feats": 8, "n_classes": 3, "n_layers": 2, "n_heads": 2, "n_hidden": 4, "K": 2}'))
    message = str(info.value)
    assert message.startswith(f"{ogb}:356 (`h = self.convs[i](subgraphs[i], h).flatten(1, -1)`): self.convs[0] "
                              "(AGDNConv")
    assert ("it runs several rounds of message passing, each one hop further, and it normalises over each "
            "source node's out-edges with edge_softmax(norm_by='src')") in message
    assert "or evaluate this model with its full-graph forward." in message


# --- 7. the width of an edge field a user module reads inside ----------------------------------

OGB = "tests/models/survey/ogb_style.py"


def test_gcnha_given_the_width_of_its_edge_field_is_written_and_exact(tmp_path: Path) -> None:
    """AGDN's GCNHAConv loops `for i in range(a.shape[-1])` over hops whose messages are scaled by
    the graph's 'gcn_norm' (E, 1, 1): the refusal asked for --feat-dims gcn_norm=WIDTH, and the
    option then refused gcn_norm as no input of forward. Given, the module is written and exact."""
    case = survey_check.by_name()["GCNHA"]
    with pytest.raises(errors.FeatDimsError, match="--feat-dims gcn_norm=WIDTH"):
        generate_all(f"{OGB}:GCNHA", GenerateOptions(init=json.dumps(case.init), verify=False))
    options = GenerateOptions(init=json.dumps(case.init), feat_dims="gcn_norm=1x1")
    assert _written_and_checked("GCNHA", f"{OGB}:GCNHA", options, tmp_path)["outcome"] == "exact"


# --- 8. g.apply_edges with a Python edge function, inline in forward ---------------------------

BG = "tests/models/survey/benchmarking_gnns_style.py"


def test_monet_pseudo_coordinates_by_an_edge_function_are_followed(tmp_path: Path) -> None:
    """benchmarking-gnns' MoNet: `g.apply_edges(self.compute_pseudo)`, a Python function of both
    ends' degrees, was refused as inline message passing gnn-codegen did not follow."""
    case = survey_check.by_name()["MoNet"]
    options = GenerateOptions(init=json.dumps(case.init), feat_dims=case.feat_dims)
    generated = generate_all(f"{BG}:MoNet", options)
    assert "srcs = in_degrees[block.edges()[0]]  # each edge's source row" in generated.source
    assert _written_and_checked("MoNet", f"{BG}:MoNet", options, tmp_path)["outcome"] == "exact"


# --- 9. rows on another axis -----------------------------------------------------------------

SSL = "tests/models/survey/ssl_style.py"


def test_ggd_rows_kept_as_a_batch_of_one_graph_are_followed(tmp_path: Path) -> None:
    """GGD: `feat = h_1.clone().squeeze(0)` (a no-op on many rows) was refused as mixing rows,
    and `h_2 = feat.unsqueeze(0)` returned puts the rows on axis 1 (row_axis.py)."""
    case = survey_check.by_name()["GGD"]
    options = GenerateOptions(init=json.dumps(case.init))
    generated = generate_all(f"{SSL}:GGD", options)
    assert ".unsqueeze(0).detach()" in generated.source
    assert _written_and_checked("GGD", f"{SSL}:GGD", options, tmp_path)["outcome"] == "exact"


# --- 3 with 8: relation graphs and type subgraphs built in forward ------------------------------


@pytest.mark.parametrize("name, target", [("BWGNNHetero", f"{FRAUD}:BWGNNHetero"),
                                          ("HeteroAggregatorGCN", f"{RECSYS}:HeteroAggregatorGCN")])
def test_graphs_of_some_relations_built_in_forward_are_written_and_exact(name: str, target: str,
                                                                         tmp_path: Path) -> None:
    """BWGNN_Hetero's `g[relation]` for each of `g.canonical_etypes` (relation_graphs.py: made
    once at the top of inference), RecHub's `dgl.edge_type_subgraph(block, [etype, reverse])`
    under a HeteroGraphConv stack (hetero/type_subgraphs.py: the whole graph's blocks, which
    run the same relations): refused until now."""
    case = survey_check.by_name()[name]
    options = GenerateOptions(init=json.dumps(case.init), feat_dims=case.feat_dims, metagraph=case.metagraph)
    generated = generate_all(target, options)
    if name == "BWGNNHetero":
        assert 'g_rur = g[("review", "rur", "review")]' in generated.source
    assert _written_and_checked(name, target, options, tmp_path)["outcome"] == "exact"

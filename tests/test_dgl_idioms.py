"""DGL's idioms (tests/models/dgl_idioms.py): the graph kept on the model, inputs read from the
graph and message passing written inline in forward are generated, and the generated inference equals forward on graphs with and without
nodes lacking in-edges, for batch sizes that do and do not divide the node count."""

from __future__ import annotations

import re

import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

# pytest -m long (CI runs it after the README's quick command): every DGL idiom's test model, each
# generated and checked in full
pytestmark = pytest.mark.long

MODEL = "tests/models/dgl_idioms.py"

CASES = {
    "encoder": GenerateOptions(),
    "features_on_the_kept_graph": GenerateOptions(),
    "NodeWeightFromGraph": GenerateOptions(feat_dims="weight=1"),
    "EdgeTypesFromGraph": GenerateOptions(),
    "WeightedGCN": GenerateOptions(init='{"in_feats": 8, "hidden": 6, "n_classes": 3}'),
    "BlocksFromSrcData": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "InlineLocalScope": GenerateOptions(),
    "TwoInlineRounds": GenerateOptions(init='{"in_dim": 8, "out_dim": 5}'),
    "EntityRGCN": GenerateOptions(init='{"num_nodes": 40, "h_dim": 6, "out_dim": 3, "num_rels": 4}'),
    "EmbeddedNodeIDs": GenerateOptions(init='{"num_nodes": 300, "dim": 6, "out_dim": 3}'),
    "EmbeddedBlockIDs": GenerateOptions(init='{"num_nodes": 300, "in_size": 8, "hid_size": 6, "out_size": 3}'),
    "SelfLoopsInForward": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "BothDirections": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "TrainingFlagGAT": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "CentredGCN": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "SemanticAttentionBetweenLayers": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "PairNormGCN": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "HANClassifier": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "StandardisedGCN": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "MinMaxScaledSAGE": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "HGTTypesAsArguments": GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'),
    "TwoGraphsInOneLayer": GenerateOptions(),
    "SortedRelGraphConv": GenerateOptions(),
    "RelationSubgraphsGCN": GenerateOptions(),
    "KeptEdgesSAGE": GenerateOptions(),
    "EdgeTypesPickedInForward": GenerateOptions(),
}

# what the generated method's signature and first lines must say
SIGNATURES = {
    "encoder": "def inference(self, g, features, batch_size, device",
    "features_on_the_kept_graph": "def inference(self, g, batch_size, device",
    "NodeWeightFromGraph": "def inference(self, g, x, batch_size, device",
    "EdgeTypesFromGraph": "def inference(self, g, x, batch_size, device",
    "WeightedGCN": "def inference(self, g, batch_size, device",
    "BlocksFromSrcData": "def inference(self, g, batch_size, device",
    "InlineLocalScope": "def inference(self, g, x, batch_size, device",
    "TwoInlineRounds": "def inference(self, g, x, batch_size, device",
    "EntityRGCN": "def inference(self, g, batch_size, device",
    "EmbeddedNodeIDs": "def inference(self, g, batch_size, device",
    "EmbeddedBlockIDs": "def inference(self, g, x, batch_size, device",
    "SelfLoopsInForward": "def inference(self, g, features, batch_size, device",
    "BothDirections": "def inference(self, g, x, batch_size, device",
    "TrainingFlagGAT": "def inference(self, g, x, batch_size, device",
    "CentredGCN": "def inference(self, g, features, batch_size, device",
    "SemanticAttentionBetweenLayers": "def inference(self, g, h, batch_size, device",
    "PairNormGCN": "def inference(self, g, features, batch_size, device",
    "HANClassifier": "def inference(self, g, h, batch_size, device",
    "StandardisedGCN": "def inference(self, g, features, batch_size, device",
    "MinMaxScaledSAGE": "def inference(self, g, x, batch_size, device",
    "HGTTypesAsArguments": "def inference(self, g, x, ntype, etype, batch_size, device",
    "TwoGraphsInOneLayer": "def inference(self, g, x, batch_size, device",
    "SortedRelGraphConv": "def inference(self, g, x, batch_size, device",
    "RelationSubgraphsGCN": "def inference(self, g, x, batch_size, device",
    "KeptEdgesSAGE": "def inference(self, g, x, batch_size, device",
    "EdgeTypesPickedInForward": "def inference(self, g, x, etypes, batch_size, device",
}
READS = {
    # the mean over all nodes: a pass over the stored layer before the next layer's loop
    "CentredGCN": ["h1_mean = batches.sum_nodes(h1) / h1.shape[0]", "x = h1 - h1_mean",
                   "h2_mean = batches.sum_nodes(h2) / h2.shape[0]"],
    # HAN's semantic attention: the mean, then what is computed from it alone, once
    "SemanticAttentionBetweenLayers": ["w = batches.sum_nodes(project) / project.shape[0]",
                                       "beta = torch.softmax(w, dim=0)"],
    # chained reductions: a pass over ranges of nodes between the layers makes what the second reduces
    # (forward's loop over its two layers: one round of a loop, the last layer after it, round_loops.py)
    "PairNormGCN": ["for i in range(len(self.layers) - 1):", "h_mean = batches.sum_nodes(h) / h.shape[0]",
                    "def before_next_layer(h, h_mean=h_mean):",
                    "rownorm_mean_terms = x.pow(2).sum(dim=1)",
                    "rownorm_mean_terms_mean = (batches.sum_nodes(rownorm_mean_terms).sum() / rownorm_mean_terms.numel())",
                    "rownorm_mean = (1e-06 + rownorm_mean_terms_mean).sqrt()", "def layer_2(block,"],
    # a reduction after the last layer: a pass over ranges of nodes after it
    "HANClassifier": ["w = batches.sum_nodes(project) / project.shape[0]", "beta = torch.softmax(w, dim=0)",
                      "def after_last_layer(z1):", "return self.predict(hidden)",
                      "out = batches.map_nodes(after_last_layer, z1, nodes=needed[1])",
                      "return batches.result(out, nodes=nodes)"],
    "TrainingFlagGAT": ["self.forward(g, x, training=False) in eval mode"],
    "features_on_the_kept_graph": ['feat = g.ndata["feat"]'],
    "NodeWeightFromGraph": ['weight = g.ndata["weight"]'],
    "EdgeTypesFromGraph": ["etype = g.edata[dgl.ETYPE]"],
    "WeightedGCN": ['feat = g.ndata["feat"]', 'w = g.edata["w"]'],
    "BlocksFromSrcData": ['feat = g.ndata["feat"]'],
    # dgl.function imported inside forward: spelled in full
    "InlineLocalScope": ['block.update_all(dgl.function.copy_u("h", "m"), dgl.function.sum("m", "h"))'],
    "TwoInlineRounds": [
        'w = g.edata["w"]', 'block.edata["w"] = w', 'block.dstdata["r"] = h1',
        'block.update_all(dgl.function.u_add_v("h", "r", "m"), dgl.function.max("m", "z"))',
    ],
    "EntityRGCN": ["emb = self.emb.weight", "etype = g.edata[dgl.ETYPE]", 'norm = g.edata["norm"]'],
    "EmbeddedNodeIDs": ["ids = g.ndata[dgl.NID]"],
    # a block's IDs are IDs in the graph it was sampled from: g here, whatever g carries
    "EmbeddedBlockIDs": ["ids = torch.arange(g.num_nodes(), device=g.device)"],
    # convolutions of one layer on two graphs: a loop each, the second reading the first's rows
    "TwoGraphsInOneLayer": ["h1 = batches.map(layer_1,", "return h1 + _sage_conv_mean(self.against,",
                            "out = batches_reversed.map(layer_2,"],
    # edge subgraphs: the mask on the whole graph's edges, once, the subgraph batched over
    # ...made in forward's comprehension over the model's count: one comprehension (graph_lists.py)
    "RelationSubgraphsGCN": ["etype = g.edata[dgl.ETYPE]", "dgl.edge_subgraph(g, etype == r, relabel_nodes=False)",
                             "for r in range(self.num_rels)", "subgraph_batches = [batches.over(subgraph) for subgraph in subgraphs]",
                             "needed = batches.needed(nodes, layers=subgraph_batches * 2)", "subgraph_batches[1].map(layer_2"],
    "KeptEdgesSAGE": ['keep = g.edata["keep"]', "kept = dgl.edge_subgraph(g, keep, relabel_nodes=False)",
                      "h1, feat1 = batches_subgraph.map(layer_1"],
    "EdgeTypesPickedInForward": ["sg = dgl.edge_subgraph(g, (etypes == 0) | (etypes == 2), relabel_nodes=False)"],
    # written out (write_out.py): the weights per (relation, node) sum, which sorts by type itself
    "SortedRelGraphConv": ["etype = g.edata[dgl.ETYPE]", "_rel_graph_conv(self.conv1, block, x, x_dst, etypes=etype, presorted=True)"],
    # node types per node: source rows beside the features; edge types per edge
    "HGTTypesAsArguments": ["batches.check_rows(nodes={\"x\": x, \"ntype\": ntype}, edges={\"etype\": etype})",
                            "return F.gelu(self.adapt(x, ntype))",
                            "h0 = batches.map_nodes(prologue, x, ntype, nodes=needed[0])",
                            "self.conv1(block, h0, ntype, etype)",
                            "source_rows=dict(h0=h0, ntype=ntype), edge_rows=dict(etype=etype)"],
    # derived graphs: once, at the top, with batches of their own
    "SelfLoopsInForward": [
        "g_with_loops = dgl.add_self_loop(g)",
        "batches_with_loops = batches.over(g_with_loops)",
        "needed = batches.needed(nodes, layers=[batches_with_loops, batches_with_loops])",
        "out_degrees = g_with_loops.out_degrees()", "batches_with_loops.map(layer_2",
    ],
    "BothDirections": [
        "rg = dgl.reverse(g)", "in_degrees = g.in_degrees()",
        "rg_in_degrees = rg.in_degrees()", "batches.map(layer_1", "batches_reversed.map(layer_2",
    ],
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    method = generated.source.split("    @torch.no_grad()\n    def inference")[1]
    method = "def inference" + method.split("# --- gnn-codegen runtime")[0]
    assert " ".join(method.split()).replace("( ", "(").startswith(SIGNATURES[name]), method[:200]
    for line in READS.get(name, []):  # as black wraps it or not
        assert "".join(line.split()) in "".join(method.split()).replace(",)", ")"), line
    assert not re.search(r"self\.g\b", method.split('"""')[2])  # the code after the docstring uses g
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_the_kept_graph_is_the_models_again_after_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate("encoder", monkeypatch)
    model = generated.loaded.model
    assert type(model).__name__ == "Encoder" and type(model).forward.__code__.co_varnames[:2] == ("self", "features")
    assert model.g is model.conv.g and model.g.num_nodes() == 12


def test_the_constructors_graph_is_a_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    source = (REPO / "generated_examples/citation_gcn/model.py").read_text()
    assert "def __init__(self, g," in source
    generated = generate_all("generated_examples/citation_gcn/model.py:GCN",
                             GenerateOptions(init='{"in_feats": 8, "n_hidden": 6, "n_classes": 3, "n_layers": 1}'))
    assert generated.loaded.stand_in_graphs == ("g",)
    assert any("stand-in" in note for note in generated.notes)


def test_two_kept_graphs_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.SignatureError) as caught:
        generate_all(f"{MODEL}:keeps_two_graphs")
    assert str(caught.value) == (
        "KeepsTwoGraphs keeps 2 different graphs (self.g, self.rev) and its forward takes none, so "
        "which graph each layer runs on cannot become one graph argument of inference. Keep one "
        "graph (every module reading the same object), or pass the graph to forward (def "
        "forward(self, g, features))."
    )


@pytest.mark.parametrize("declared", [False, True])
def test_a_test_of_the_graphs_data_is_decided_and_checked(declared: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """`if "w" in g.edata:` is decided for graphs with w when --feat-dims names it, without it
    otherwise; the generated method refuses a graph that disagrees instead of computing the
    other branch's result."""
    import dgl
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source

    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:EdgeWeightsIfAny", GenerateOptions(feat_dims="w=1" if declared else None))
    assert generated.program.decisions == (("edata", "w", declared),)
    assert any('forward tests "w" in g.edata' in note for note in generated.notes)
    assert check(generated, num_nodes=61, seed=3, batch_sizes=(7, 61)).ok
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = dgl.rand_graph(20, 60)
    if not declared:  # the graph the module was not generated for: one with weights
        g.edata["w"] = torch.ones(60, 1)
    with pytest.raises(ValueError, match="generated for graphs without" if not declared else "which g lacks"):
        model.inference(g, torch.randn(20, 8), batch_size=8, device="cpu")


def test_an_input_whose_width_no_module_fixes_is_checked_at_a_width_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """No --feat-dims and no module that says the input's width: generated anyway, checked at
    a width gnn-codegen picks and says so; the generated method takes any width."""
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source

    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:SmoothGivenFeatures")
    assert any("fixes the width of forward's input labels" in note for note in generated.notes)
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = __import__("dgl").rand_graph(30, 120)
    labels = torch.rand(30, 11)  # another width than the check's
    assert torch.allclose(model.inference(g, labels, batch_size=7, device="cpu"), model(g, labels), atol=1e-5)


def test_a_guessed_width_that_forward_rejects_asks_for_feat_dims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.FeatDimsError, match=r"--feat-dims x=WIDTH"):
        generate_all(f"{MODEL}:WidthFixedByAWeightMatrix")


def test_explain_lists_reductions_and_passes_over_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """--explain names the passes over ranges of nodes that reductions need: between layers
    where they chain (PairNorm), after the last layer (HAN's semantic attention)."""
    from gnn_codegen.explain.plan_text import explain_data, explain_text

    pair_norm = explain_text(explain_data(_generate("PairNormGCN", monkeypatch)))
    assert "\nPass before layer 2 (once per node)\n  reduce h1.mean(0) over all nodes" in pair_norm
    # the second reduction is read by GraphConv's norm per source row: a second pass, once per node
    assert "\nPass before layer 2 (once per node)\n  reduce rownorm_mean_terms.mean() over all nodes" in pair_norm
    assert "\nLayer 2 of 2\n  load   feat1 on source rows" in pair_norm
    han = explain_data(_generate("HANClassifier", monkeypatch))
    assert [s["kind"] for s in han["stages"]] == ["prologue", "layer", "pass"]
    text = explain_text(han)
    assert text.startswith("Plan for tests/models/dgl_idioms.py:HANClassifier: 1 layer, with a prologue")
    assert "\nPass after the last layer (once per node)\n  reduce project.mean(0) over all nodes" in text
    assert "  run    self.predict (Linear) on node rows\n" in text


def test_an_lstm_memory_forward_returns_stays_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """GeniePath's memory is rewritten rows first only where nothing but LSTM steps reads it."""
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.UnsupportedOperationError) as caught:
        generate_all(f"{MODEL}:GeniePathMemoryReturned")
    assert "x, (h, c) = self.depth(x.unsqueeze(0), (h, c))" in " ".join(str(caught.value).split())


def test_an_edge_subgraph_that_renumbers_nodes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.UnsupportedOperationError) as caught:
        generate_all(f"{MODEL}:RelabelledSubgraph")
    message = str(caught.value)
    assert message.startswith("tests/models/dgl_idioms.py:550 (`sg = dgl.edge_subgraph(g, g.edata[dgl.ETYPE] == 0)`)")
    assert "Pass relabel_nodes=False" in message


def test_edges_picked_by_the_model_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.UnsupportedOperationError) as caught:
        generate_all(f"{MODEL}:EdgesPickedByTheModel")
    message = " ".join(str(caught.value).split())
    assert message.startswith("tests/models/dgl_idioms.py:564 (`sg = dgl.edge_subgraph(g, keep, relabel_nodes=False)`)")
    assert "computed with self.score (Linear), not from forward's inputs alone" in message


def test_a_blocks_ids_are_ids_in_g_not_a_field_g_carries(monkeypatch: pytest.MonkeyPatch) -> None:
    """blocks[0].srcdata[dgl.NID] is the source nodes' IDs in the graph the blocks come from.
    On a graph that carries its parent's IDs (dgl.to_homogeneous, a subgraph), inference equals
    forward on real blocks of that graph, as training saw them; reading g.ndata[dgl.NID]
    instead gave other embeddings with no error (issue 35, item 5)."""
    import dgl
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source, random_graph

    generated = _generate("EmbeddedBlockIDs", monkeypatch)
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = random_graph(120, seed=4)
    x = torch.randn(120, 8, generator=torch.Generator().manual_seed(4))
    blocks = [dgl.to_block(g, torch.arange(120)) for _ in range(2)]
    with torch.no_grad():
        expected = model(blocks, x)
    g.ndata[dgl.NID] = torch.randperm(300, generator=torch.Generator().manual_seed(5))[:120]  # a parent's
    for batch_size in (7, 120):
        assert torch.allclose(model.inference(g, x, batch_size, "cpu"), expected, atol=1e-5)
    assert torch.allclose(model.inference(g, x, 7, "cpu", nodes=torch.tensor([5, 3])), expected[[5, 3]], atol=1e-5)

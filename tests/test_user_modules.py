"""The user's own message-passing modules (tests/models/user_modules.py), as third-party DGL code
writes them: each is generated without options and equals forward on graphs with and without
nodes lacking in-edges, for batch sizes that do and do not divide N (issue 35, items 6, 7, 9);
what stays refused says why, and suggests only what leads somewhere."""

from __future__ import annotations

import re

import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/user_modules.py"
SIZES = '{"in_size": 8, "hid_size": 6, "out_size": 3}'

# model -> (options, layers of the generated inference)
CASES = {
    # 6a: refuses nodes without in-edges; forward adds self-loops
    "SelfLoopGAT": (GenerateOptions(init=SIZES), 2),
    # 6b: graph data read inside the module, followed into it and read from the user's graph
    "EdgeWeightNet": (GenerateOptions(init=SIZES), 2),
    "StoredNormGCN": (GenerateOptions(init=SIZES), 2),
    # 6b: edge types or an edge norm read in a Python message function: the module is kept
    # whole and each block carries the user's graph's data (with the module's own arguments)
    "RelationalNet": (GenerateOptions(init=SIZES), 2),
    "NormedRGCN": (GenerateOptions(init=SIZES), 2),
    # 6b: edge types passed as an argument, used as an index
    "RelationalNetByArgument": (GenerateOptions(init=SIZES), 2),
    # 6d: a symmetric norm from the module's own graph.out_degrees(), traced into, or kept whole
    # (edge_softmax) and given the whole graph's out-degrees on each block
    "SymmetricGCN": (GenerateOptions(init=SIZES), 2),
    "NormedGAT": (GenerateOptions(init=SIZES), 2),
    # 7: propagation loops, a layer per round
    "MLPThenLabelPropagation": (GenerateOptions(init='{"in_size": 8, "out_size": 3}'), 3),
    "CorrectAndSmooth": (GenerateOptions(init='{"in_size": 8, "out_size": 3}'), 3),
    "DAGNN": (GenerateOptions(init=SIZES), 3),
    "GPRGNN": (GenerateOptions(init=SIZES), 3),
    # 7: rounds over edge weights forward passes in: one number per edge, found by running it
    "WeightedRoundsNet": (GenerateOptions(init='{"in_size": 8, "out_size": 3}'), 2),
    # 9: a GRU's and an LSTM's state over layers kept as (1, N, d)
    "SAGEWithGRUState": (GenerateOptions(init=SIZES), 2),
    "SAGEWithLSTMState": (GenerateOptions(init=SIZES), 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_users_module_is_exact_layer_by_layer(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    options, layers = CASES[name]
    generated = generate_all(f"{MODEL}:{name}", options)
    # the last layer alone, or the last of a loop of alike layers (render/last_copies.py)
    assert re.search(rf"# Layers? (\d+ to )?{layers} of {layers}[:,]", generated.source)
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_a_module_that_refuses_nodes_without_in_edges_is_proven_where_forward_adds_self_loops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """6a: MyGATLayer raises on nodes without in-edges, as dgl.nn's GATConv does; it is proven on
    graphs where every node has one, and the notes say so (once per call)."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:SelfLoopGAT", GenerateOptions(init=SIZES))
    said = [n for n in generated.notes if "raises on a graph with nodes without in-edges" in n]
    assert len(said) == 2
    assert said[0] == (
        "tests/models/user_modules.py:57 (`h = F.elu(self.layer1(g, x)).flatten(1)`): self.layer1 "
        "(MyGATLayer, the class at tests/models/user_modules.py:22) raises on a graph with nodes without "
        "in-edges (RuntimeError: graph has 0-in-degree nodes; add self-loops): it was proven exact on the "
        "blocks of graphs where every node has an in-edge (as when forward adds self-loops), and on other "
        "graphs the generated method raises where forward does"
    )


def test_graph_data_read_in_a_module_comes_from_the_users_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """6b: inference reads the fields the modules read from the graph it is given, with the
    shape forward uses (a weight per edge, a norm column per node) and the dtype (edge types
    used as an index: IDs below the relation count)."""
    monkeypatch.chdir(REPO)
    edge_weight = generate_all(f"{MODEL}:EdgeWeightNet", GenerateOptions(init=SIZES))
    assert 'w = g.edata["w"]' in edge_weight.source
    assert [(s.param, s.rows, s.shape) for s in edge_weight.attributes.inputs if s.param == "w"] == [("w", "edge", ())]
    norm = generate_all(f"{MODEL}:StoredNormGCN", GenerateOptions(init=SIZES))
    assert 'norm = g.ndata["norm"]' in norm.source
    assert [(s.rows, s.shape) for s in norm.attributes.inputs if s.param == "norm"] == [("node", (1,))]
    typed = generate_all(f"{MODEL}:RelationalNetByArgument", GenerateOptions(init=SIZES))
    [etype] = [s for s in typed.attributes.inputs if s.param == "etype"]
    assert (etype.rows, etype.shape, etype.dtype, etype.high) == ("edge", (), "torch.int64", 3)


def test_a_graph_field_read_in_a_python_message_function_is_set_on_each_block(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """6b: MyRelConv reads edges.data["etype"] in a Python message function, which cannot be
    followed: each block carries the user's graph's edge types while it runs, proven on blocks
    and checked; edge types as IDs below the relation count. With the input's width given, as
    the old message asked (--feat-dims), the same."""
    monkeypatch.chdir(REPO)
    for options in (GenerateOptions(init=SIZES), GenerateOptions(init=SIZES, feat_dims="x=8")):
        generated = generate_all(f"{MODEL}:RelationalNet", options)
        assert 'etype = g.edata["etype"]' in generated.source
        assert '_with_graph_data(self.conv2, block, h1, (("edata", "etype"),), etype)' in generated.source
        [etype] = [s for s in generated.attributes.inputs if s.param == "etype"]
        assert (etype.rows, etype.shape, etype.dtype, etype.high) == ("edge", (), "torch.int64", 3)


def test_a_graph_field_read_where_the_call_cannot_be_rewritten_is_refused_with_ways_that_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """6b, 6c: NormedRGCNByKeyword passes the edge types by keyword, so the call cannot carry the
    field too: refused, naming the field and two ways that work (by position: NormedRGCN; as an
    argument: RelationalNetByArgument), never --feat-dims, which cannot help."""
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.UnsupportedModuleError) as refused:
        generate_all(f"{MODEL}:NormedRGCNByKeyword", GenerateOptions(init=SIZES))
    assert str(refused.value) == (
        "tests/models/user_modules.py:470 (`return self.conv2(g, F.relu(self.conv1(g, x, etypes=etypes)), "
        "etypes=etypes)`): self.conv1 (NormedRelConv, the class at tests/models/user_modules.py:436) reads "
        '"norm" of the graph it is given (graph.edata, srcdata, dstdata or ndata, or edges.data in a message '
        "function), data the user's graph carries and a block of layer-wise inference does not. gnn-codegen "
        "gives a module the data of forward's own graph on each block where it calls the module on that "
        "graph with its arguments by position, and follows what the module reads where its message passing "
        "is update_all with DGL's built-in functions (dgl.function); this module and its call are neither. "
        "Call the module on forward's graph with its arguments by position, or read the field in forward and "
        'pass it to the module as an argument (`self.conv1(g, h, g.edata["norm"])`, the module setting it on '
        "its graph), or evaluate this model with its full-graph forward."
    )


def test_a_missing_edge_field_never_asks_for_feat_dims(monkeypatch: pytest.MonkeyPatch) -> None:
    """6c: EdgeWeightNet's module reads g.edata["w"]; with --feat-dims x=8 the tool said "If an
    input width is wrong, give it with --feat-dims NAME=WIDTH", and --feat-dims w=1 was then
    refused as no input of forward. Now it is generated, with or without the width."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:EdgeWeightNet", GenerateOptions(init=SIZES, feat_dims="x=8"))
    assert generated.verification is not None and generated.verification.ok


@pytest.mark.parametrize("name", ["UDFRoundsNet", "OpsSmoothing"])
def test_rounds_that_cannot_be_followed_stay_refused_as_rounds(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """7: a loop of update_all with a Python message and reduce, or of dgl.ops.copy_u_sum,
    cannot be followed round by round; the refusal says it runs rounds (OpsLabelPropagation
    also reads out-degrees, which it was once told was the reason, and which alone would not
    keep it from running) and how to make each round a call of its own."""
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.UnsupportedModuleError) as refused:
        generate_all(f"{MODEL}:{name}", GenerateOptions(init='{"in_size": 8, "out_size": 3}'))
    message = str(refused.value)
    assert "it runs several rounds of message passing, each one hop further" in message
    assert "Make each round its own single-hop module call in forward" in message
    assert "--feat-dims" not in message


def test_a_module_reading_out_degrees_gets_the_whole_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """6d: NormedAttention reads graph.out_degrees() and computes edge_softmax, which cannot be
    traced into: each block's call answers out_degrees() with the whole graph's, computed once,
    as GraphConv's norm is; before, it was refused for giving other results on blocks."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:NormedGAT", GenerateOptions(init=SIZES))
    assert "out_degrees = g.out_degrees()  # of the whole graph, once" in generated.source
    assert "_with_graph_out_degrees(self.att1, block, x, out_degrees)" in generated.source

"""A user's layer that writes g.ndata (tests/models/block_as_graph.py) runs on each batch's block
as a graph over the block's source nodes (gnn_codegen/analysis/block_as_graph.py): generated, equal to
forward on random graphs with nodes without in-edges, for batch sizes that do and do not divide
the node count; its edge output kept by the block's edge IDs; a layer that reads out-degrees is
given the whole graph's; one that runs two rounds stays refused."""

from __future__ import annotations

import black
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/block_as_graph.py"

CASES = {
    "GatedEdgeNet": GenerateOptions(init='{"in_dim": 6, "edge_dim": 2, "hidden_dim": 8, "n_classes": 3}',
                                    feat_dims="w=2"),
    "EdgeScoresNet": GenerateOptions(init='{"in_dim": 6, "edge_dim": 2, "hidden_dim": 8}', feat_dims="w=2"),
    "SumAggregatorNet": GenerateOptions(init='{"in_dim": 6, "hidden_dim": 8, "n_classes": 3}', feat_dims="x=6"),
    "OutDegreeNormNet": GenerateOptions(init='{"dim": 6}', feat_dims="x=6"),
}
# what the generated layers must say
READS = {
    "GatedEdgeNet": ["graph = _block_as_graph(block)", "h, e = self.layers[0](graph, h, e)",
                     "return h[: block.num_dst_nodes()], e", 'returns=("nodes", "edges")'],
    "EdgeScoresNet": ["h, e = self.layer(graph, embed_h, embed_e)", "h = h[: block.num_dst_nodes()]",
                      "return h, e.sum(-1)"],
    "SumAggregatorNet": ["torch.relu(self.conv1(graph, x)[: block.num_dst_nodes()])"],
    # the whole graph's out-degrees, of the graph's nodes (the block's sources)
    "OutDegreeNormNet": ["out_degrees = g.out_degrees()",
                         "return _with_graph_out_degrees(self.conv, graph, x, out_degrees)[: block.num_dst_nodes()]"],
}


def _generate(name: str, options: GenerateOptions, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", options)


def _method(source: str) -> str:
    return source.split("def inference")[1].split("# --- gnn-codegen runtime")[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_on_the_block_as_a_graph_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, CASES[name], monkeypatch)
    method = "".join(_method(generated.source).split())
    for line in READS[name]:
        assert "".join(line.split()) in method, line
    assert "\ndef _block_as_graph(block):" in generated.source
    assert any("_block_as_graph" in note for note in generated.notes)
    for seed in (1, 2):  # the check's graphs have nodes without in-edges; 13 divides neither
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_a_layer_written_with_builtins_is_still_traced_into(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracing into a layer runs its per-node work once per node: preferred where it works."""
    options = GenerateOptions(init='{"in_dim": 6, "hidden_dim": 8, "n_classes": 3}')
    generated = _generate("MeanNet", options, monkeypatch)
    assert "_block_as_graph" not in generated.source
    assert 'block.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))' in generated.source
    assert check(generated, num_nodes=97, seed=1, batch_sizes=(13, 97)).ok


@pytest.mark.parametrize("name, why", [
    ("TwoRoundsNet", "it runs several rounds of message passing, each one hop further"),
])
def test_a_layer_not_exact_as_a_graph_stays_refused(name: str, why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.UnsupportedModuleError) as caught:
        _generate(name, GenerateOptions(init='{"dim": 6}', feat_dims="x=6"), monkeypatch)
    message = str(caught.value)
    assert message.startswith(f"{MODEL}:")
    assert ("gives other results on 1-hop blocks (each as a graph over its source nodes, as it fails "
            "on a block) than on the whole graph") in message
    assert why in message


# reduces over an empty mailbox: a Python reduce (no field on a block without edges), a min read
# by an apply function (-inf on g, 0 on a block without edges); as a graph and on blocks
EMPTY_MAILBOXES = {
    "MailboxSoftmaxNet": GenerateOptions(init='{"dim": 6}', feat_dims="x=6"),
    "MedianBlockNet": GenerateOptions(init='{"dim": 6, "n_classes": 3}', feat_dims="x=6"),
    "MinApplyNet": GenerateOptions(init='{"dim": 6}', feat_dims="x=6"),
}


@pytest.mark.parametrize("name", sorted(EMPTY_MAILBOXES))
def test_a_reduce_over_an_empty_mailbox_gives_forwards_rows(name: str, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path) -> None:
    """A batch whose nodes have no in-edges gets a node with in-edges along (the runtime's
    _with_companion), so the module never sees a block without edges, which g never is: DGL then
    makes the Python reduce's field, zeros for nodes without in-edges, and gives an apply function
    -inf from min, as on g. Equal to forward for all nodes, for some (nodes=) and in files."""
    import copy

    from gnn_codegen.verify.harness import (
        allclose,
        flatten,
        full_graph_forward,
        generated_model,
        import_source,
        make_inputs,
        random_graph_for,
        rows_for,
        run_inference,
        some_nodes,
    )
    from gnn_codegen.analysis.perturb import perturb

    generated = _generate(name, EMPTY_MAILBOXES[name], monkeypatch)
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 3)
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent),
                            reference.eval())
    g = random_graph_for(generated, 61, seed=3, zero_in_degree=True)  # a fifth without in-edges
    assert int((g.in_degrees() == 0).sum()) > 5
    inputs = make_inputs(generated, 61, 3, g.num_edges())
    expected = full_graph_forward(reference, generated, g, inputs)
    for batch_size in (1, 4, 61):
        actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu")
        assert allclose(flatten(actual), flatten(expected), atol=1e-5, rtol=1e-5), batch_size
    nodes = some_nodes(61, 9, seed=4)
    actual = run_inference(model, generated, g, inputs, batch_size=2, device="cpu", nodes=nodes,
                           storage=str(tmp_path))
    assert allclose(flatten(actual), rows_for(generated, expected, nodes), atol=1e-5, rtol=1e-5)


def test_two_update_alls_of_one_hop_reading_out_degrees_get_the_whole_graphs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two update_all calls that both read the layer's input are one hop, not two rounds: a layer
    that also reads its graph's out-degrees is given the whole graph's on each block and proven
    so, where it was refused as rounds."""
    options = GenerateOptions(init='{"dim": 6, "n_classes": 3}', feat_dims="x=6")
    generated = _generate("TwoAggregatesNet", options, monkeypatch)
    method = "".join(_method(generated.source).split())
    assert "".join("_with_graph_out_degrees(self.conv1, block, x, out_degrees)".split()) in method
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"max |difference| {result.max_abs_diff}"


def test_a_batch_without_in_edges_takes_one_node_with_some_along() -> None:
    """_with_companion: every batch of a graph with edges has one (of `nodes` where one has)."""
    import dgl

    from gnn_codegen.render.runtime import runtime_class

    g = dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([7, 7, 8])), num_nodes=10)
    batches = runtime_class()(torch.nn.Linear(1, 1), g, 3, "cpu", 2**30, False)
    assert [b if isinstance(b, slice) else b.tolist()
            for b in batches._with_companion([slice(0, 3), slice(6, 9)], None)] == [[0, 1, 2, 7], slice(6, 9)]
    assert [b.tolist() for b in batches._with_companion([torch.tensor([1, 2])], torch.tensor([1, 2, 8]))] == [
        [1, 2, 8]]
    empty = runtime_class()(torch.nn.Linear(1, 1), dgl.graph(([], []), num_nodes=4), 3, "cpu", 2**30, False)
    assert list(empty._with_companion([slice(0, 3)], None)) == [slice(0, 3)]  # as forward: no edge anywhere


def test_the_runtime_lists_a_blocks_destinations_first() -> None:
    """_block_as_graph relies on it: in every block the runtime makes (node ranges, nodes=, IDs
    of int32), source i < num_dst_nodes() is destination i."""
    import dgl

    from gnn_codegen.render.runtime import block_as_graph, runtime_class

    g = dgl.rand_graph(50, 300)
    ids = torch.arange(50).unsqueeze(1)
    for graph in (g, g.int()):
        batches = runtime_class()(torch.nn.Linear(1, 1), graph, 7, "cpu", 2**30, False)
        for dst_nodes in (slice(14, 21), torch.tensor([3, 9, 40])):
            _, block, (rows,) = batches._prepare(dst_nodes, [ids], [], [], False, True)
            expected = torch.arange(50)[dst_nodes].unsqueeze(1)
            assert torch.equal(rows[: block.num_dst_nodes()], expected)
            as_graph = block_as_graph(block)
            assert as_graph.num_nodes() == block.num_src_nodes()
            assert torch.equal(torch.stack(as_graph.edges()), torch.stack(block.edges()))
            assert torch.equal(as_graph.edata[dgl.EID], block.edata[dgl.EID])


def test_the_runtime_with_block_as_graph_renders_black_formatted() -> None:
    from gnn_codegen.render.method import BLOCK_AS_GRAPH, RUNTIME, render_helpers

    helpers = render_helpers(RUNTIME, set(), {}, "0", BLOCK_AS_GRAPH).strip("\n") + "\n"
    assert black.format_str(helpers, mode=black.Mode()) == helpers
    # a helper of the module, above the runtime's banner; none where no layer calls it
    assert "def _block_as_graph(block):" in helpers.split("# --- gnn-codegen runtime")[0]
    assert "_block_as_graph" not in render_helpers(RUNTIME, set(), {}, "0")


def test_an_input_forward_never_reads_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`e` has rows of nobody's choosing (here one per edge): inference takes it and never
    refuses it, as forward does."""
    import dgl

    from gnn_codegen.verify.harness import generated_model, import_source

    options = GenerateOptions(init='{"in_dim": 6, "n_classes": 3}', feat_dims="h=6,e=1")
    generated = _generate("UnusedEdgeInputNet", options, monkeypatch)
    assert '"e": e' not in _method(generated.source)
    module = import_source(generated.source, generated.loaded.path.parent, "unused_edge_input")
    model = generated_model(generated, module, generated.loaded.model).eval()
    g = dgl.rand_graph(30, 120)
    h, e = torch.randn(30, 6), torch.randn(120, 1)
    with torch.no_grad():
        expected = generated.loaded.model.eval()(g, h, e)
        assert torch.allclose(model.inference(g, h, e, 7, "cpu"), expected, atol=1e-5)

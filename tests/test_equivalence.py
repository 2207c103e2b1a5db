"""The generated `inference` of every case equals the model's full-graph forward, on seeded
random graphs (with zero-in-degree nodes where the model allows them), for batch sizes 1, 7,
one that does not divide N and one of at least N, with weights and BatchNorm statistics
perturbed away from their initial values."""

from __future__ import annotations

import copy

import pytest
import torch

from gnn_codegen.verify.harness import (
    allclose,
    full_graph_forward,
    gather_sources_always,
    generated_model,
    import_source,
    inference_arguments,
    make_inputs,
    max_difference,
    random_graph,
    random_graph_for,
    run_inference,
    with_tables,
)
from gnn_codegen.analysis.perturb import perturb
from tests.cases import CASES_BY_NAME, Case, all_cases, generate_case
from tests.deletion_watch import views_kept_alive
from tests.row_counter import RowCounter

# pytest -m long (CI runs it after the README's quick command): every example in every mode (batch
# sizes, rows in place or gathered): a stress run; the quick run checks each example through the
# tool's own check (test_goldens)
pytestmark = pytest.mark.long

CASES = all_cases()
NUM_NODES = 301  # prime: no batch size below divides it


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sources", ["in place", "gathered"])
def test_inference_equals_full_graph_forward(case: Case, seed: int, sources: str) -> None:
    """On the CPU, layers that only aggregate source rows read them in place; "gathered" makes
    every layer gather them, as it does when the device is a GPU."""
    generated = generate_case(case)
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    reference.eval()
    module = import_source(generated.source, generated.loaded.path.parent)
    if sources == "gathered":
        gather_sources_always(module)
    model = generated_model(generated, module, reference)
    g = random_graph_for(generated, NUM_NODES, seed=seed, zero_in_degree=True)
    inputs = make_inputs(generated, NUM_NODES, seed, g.num_edges())
    try:
        expected = full_graph_forward(reference, generated, g, inputs)
    except Exception as exc:  # the model itself refuses zero-in-degree nodes (GATConv's default)
        assert "in-degree" in str(exc)
        with pytest.raises(type(exc), match="0-in-degree"):  # and so does inference
            run_inference(model, generated, g, inputs, batch_size=7, device="cpu")
        g = random_graph_for(generated, NUM_NODES, seed=seed, zero_in_degree=False)
        inputs = make_inputs(generated, NUM_NODES, seed, g.num_edges())
        expected = full_graph_forward(reference, generated, g, inputs)
    for batch_size in (1, 7, 64, NUM_NODES, NUM_NODES + 50):
        actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu")
        assert allclose(actual, expected, atol=1e-4, rtol=1e-4), (
            f"batch_size={batch_size}: max |difference| {max_difference(actual, expected)}"
        )
    # "auto" with a budget that forces several batches of a size that does not divide N
    actual = run_inference(model, generated, g, inputs, batch_size="auto", device="cpu", max_memory=AUTO_BUDGET)
    assert allclose(actual, expected, atol=1e-4, rtol=1e-4), f"auto: {max_difference(actual, expected)}"


AUTO_BUDGET = 60_000  # bytes: tens of nodes per batch for these widths


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("sources", ["in place", "gathered"])
def test_a_graph_without_nodes(case: Case, sources: str) -> None:
    """No batches, but the `del`s after each loop name the last batch's locals: every loop
    runs one empty batch, and the result is forward()'s, or its error where forward refuses."""
    generated = generate_case(case)
    module = import_source(generated.source, generated.loaded.path.parent)
    if sources == "gathered":
        gather_sources_always(module)
    model = generated_model(generated, module)
    g = random_graph_for(generated, 0)
    inputs = make_inputs(generated, 0, 0, 0)
    try:
        expected = full_graph_forward(generated.loaded.model.eval(), generated, g, inputs)
    except Exception as exc:
        with pytest.raises(type(exc)):
            run_inference(model, generated, g, inputs, batch_size=7, device="cpu")
        return
    for batch_size in (7, "auto"):
        actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu")
        assert allclose(actual, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["sage", "gat", "edge_features"])
def test_auto_batch_size_follows_the_memory_budget(name: str) -> None:
    generated = generate_case(CASES_BY_NAME[name])
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module)
    g = random_graph(NUM_NODES, seed=0, zero_in_degree=False)
    rows = torch.zeros(NUM_NODES, 16)  # 64 bytes a row

    def auto(budget: float) -> int:
        batches = module._FullNeighbourBatches(model, g, "auto", "cpu", budget, False)
        return batches._batch_size([rows], [rows], [])

    small = auto(AUTO_BUDGET)
    assert 1 <= small < NUM_NODES and NUM_NODES % small
    assert auto(10**12) == NUM_NODES
    assert auto(1) == 1
    # a budget twice as large allows batches about twice as large
    assert abs(auto(2 * AUTO_BUDGET) - 2 * small) <= 1


def test_perturb_changes_what_it_must() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    before = [t.clone() for t in model.state_dict().values() if t.is_floating_point()]
    perturb(model, 0)
    after = [t for t in model.state_dict().values() if t.is_floating_point()]
    assert all(not torch.equal(a, b) for a, b in zip(before, after))


def test_progress_bar_changes_nothing_but_stderr(capfd) -> None:
    generated = generate_case(CASES_BY_NAME["sage"])
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = random_graph(NUM_NODES, seed=0)
    (x,) = make_inputs(generated, NUM_NODES, 0)
    quiet = model.inference(g, x, 50, "cpu")
    capfd.readouterr()
    loud = model.inference(g, x, 50, "cpu", progress=True)
    assert torch.equal(quiet, loud)
    assert "batch" in capfd.readouterr().err  # tqdm's bar (tqdm comes with dgl)


@pytest.mark.parametrize("name, expected", [
    # every layer only aggregates the rows it reads on source rows: SAGEConv("mean") written
    # out, its last layer's fc_neigh computed at the end of layer 2
    ("sage", [True, True, True]),
    # the Linear encoder runs in the prologue, once per node, and SAGEConv reads its result in
    # place; GATConv and GraphConv(norm="both") are written out, their work per source row (fc
    # and attn_l, the out-degree scaling) at the end of the layer before, and then read in place
    ("mixed", [True, True, True]),
])
def test_sources_are_read_in_place_only_by_layers_that_only_aggregate(name: str, expected: list[bool]) -> None:
    generated = generate_case(CASES_BY_NAME[name])
    module = import_source(generated.source, generated.loaded.path.parent)
    runtime = module._FullNeighbourBatches
    calls = []
    prepare = runtime._prepare

    def recording(self, dst_nodes, src, dst, edges, in_place, blocks):
        prepared = prepare(self, dst_nodes, src, dst, edges, in_place, blocks)
        if blocks and dst_nodes.start == 0:
            calls.append(in_place)
            assert prepared[1].num_src_nodes() == (self.num_nodes if in_place else len(prepared[2][0]))
        return prepared

    runtime._prepare = recording
    model = generated_model(generated, module)
    g = random_graph(NUM_NODES, seed=0)
    (x,) = make_inputs(generated, NUM_NODES, 0)
    model.inference(g, x, 50, "cpu")
    assert calls == expected
    calls.clear()
    model.inference(g, x, 50, torch.device("cpu"))
    assert calls == expected


@pytest.mark.parametrize("name", ["sage", "gcn", "gat"])
def test_no_work_per_batch_on_every_node_where_layers_read_in_place(name: str) -> None:
    """Every layer of these reads its source rows in place (blocks whose sources are all of g's
    nodes): what a convolution computes on each source row must then run once per node
    (write_out.py, placed by the cut), and never per batch, where it would cost a pass over
    every node for each batch. So the tensors with one row per node of g that inference makes
    are the same in number with 30 batches as with 5."""
    generated = generate_case(CASES_BY_NAME[name])
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module)
    g = random_graph(NUM_NODES, seed=0, zero_in_degree=False)  # gcn and gat refuse them
    (x,) = make_inputs(generated, NUM_NODES, 0)
    counts = []
    for batch_size in (NUM_NODES // 30 + 1, NUM_NODES // 5 + 1):
        counter = RowCounter()
        with counter:
            model.inference(g, x, batch_size, "cpu")
        counts.append(counter.rows.count(NUM_NODES))
    assert counts[0] == counts[1] > 0


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_deleted_tensor_is_freed(case: Case) -> None:
    """Every `del` in inference frees what it names: no view of the deleted tensor is left (at
    1M nodes, views of the last batch's rows kept GAT's per-node tensors alive, 1 GB more)."""
    generated = generate_case(case)
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module)
    g = random_graph_for(generated, NUM_NODES, seed=0, zero_in_degree=False)
    inputs = make_inputs(generated, NUM_NODES, 0, g.num_edges())
    with with_tables(model, generated, inputs):
        kept = views_kept_alive(model.inference, *inference_arguments(generated, g, inputs),
                                batch_size=NUM_NODES // 4 + 1, device="cpu")
    assert kept == []

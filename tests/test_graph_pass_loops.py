"""Passes over graphs forward derives by an index of its loop (a GAT per edge type, DGL's
MAG240M R-GAT), alike up to that index and the module's, read best as forward's own two loops:
an inner loop over the graphs inside the loop over the user's layers, the rows of each graph in
lists indexed by the inner loop's variable (issue 37; the reviewer of rgat_mag240m read
`layer_1..layer_6` and 7-tuples). Passes written out one by one in forward stay apart, and
nodes= and changed= compute forward's rows whatever the method's shape."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.pipeline import GenerateOptions
from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    generated_model,
    import_source,
    make_inputs,
    max_difference,
    random_graph_for,
    run_inference,
)
from tests.cases import REPO, Case, generate_case
from tests.graph_updates import updated

MODELS = "tests/models/graph_loops.py"
NUM_NODES = 61


def _case(name: str, **init: int) -> Case:
    label = "_".join(f"{k}{v}" for k, v in init.items())
    return Case(f"{name}_{label}", REPO / "tests" / "models", f"{MODELS}:{name}",
                GenerateOptions(init=json.dumps(init) if init else None))


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 4), (3, 4)])
def test_passes_over_a_loops_graphs_are_an_inner_loop(num_layers: int, num_etypes: int) -> None:
    method = _method(generate_case(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                         num_etypes=num_etypes)).source)  # checked exact
    # each user's layer: its passes over the graphs but the last (which ends the layer) one
    # loop over j, the first layer's first pass joined with its skip under `if j == 0:`
    assert method.count("for j in range(self.num_etypes - 1):") == num_layers, method
    assert method.count("if j == 0:") == 1 and "self.skips[0](x_skip0)" in method, method
    assert "x_skip0=x if j == 0 else x_skip0" in method, method
    for i in range(num_layers):
        assert f"self.convs[{i}][j], block, feat{i}, el{i}, feat{i}_dst" in method, method
        assert f"source_rows=dict(feat{i}=feat{i}[j], el{i}=el{i}[j])" in method, method
        assert f"nodes=needed[j + {i * num_etypes + 1}]" in method, method
        assert f"self.convs[{i}][{num_etypes - 1}], block" in method, method  # the last pass apart
    assert "graph_batches[j].map(" in method, method
    assert len(re.findall(r"^ +def layer_\w*\(", method, re.M)) == 2 * num_layers, method


@pytest.mark.xfail(strict=True, reason="issue 37: the loop over the user's layers around it, not done yet")
@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (3, 4)])
def test_the_inner_loop_is_inside_a_loop_over_the_users_layers(num_layers: int, num_etypes: int) -> None:
    method = _method(generate_case(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                         num_etypes=num_etypes)).source)  # checked exact
    assert re.search(r"^ +for i in range\(len\(self\.convs\)\):$", method, re.M), method
    assert "self.convs[i][j]" in method, method
    assert len(re.findall(r"^ +def layer_\w*\(", method, re.M)) <= 2, method


@pytest.mark.parametrize("num_etypes", [2, 3])
def test_passes_that_differ_stay_apart(num_etypes: int) -> None:
    """Two edge types: each layer's passes are its first and its last, which differ (no loop of
    one); a pass that frees a value, or reads another module, is never a loop's."""
    method = _method(generate_case(_case("LoopedEdgeTypeGAT", num_layers=2, num_etypes=num_etypes)).source)
    loops = method.count("for j in range(self.num_etypes - 1):")
    assert loops == (0 if num_etypes == 2 else 2), method


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (3, 4)])
def test_rows_for_every_graph_are_lists_made_in_a_loop(num_layers: int, num_etypes: int) -> None:
    method = _method(generate_case(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                         num_etypes=num_etypes)).source)  # checked exact
    assert "_etype_" not in method, method
    # each layer's GATs' source work: one loop over the graphs, its rows appended to lists
    for i in range(num_layers):
        assert f"self.convs[{i}][j]'s fc and attention term" in method, method
        assert f"feat{i}, el{i} = [], []" in method and f"feat{i}.append(feat)" in method, method
    assert method.count("for j in range(self.num_etypes):") == num_layers, method
    # bound as lists, `x_skip1, feat1, el1 = ...`, each pass reading its graph's item
    for i in range(1, num_layers):
        assert re.search(rf"^ +x_skip{i}, feat{i}, el{i} = graph_batches\[{num_etypes - 1}\]\.map\(", method, re.M), method
    last = num_etypes - 1  # the last graph's pass, apart; the others' in a loop over j where they fold
    assert f"source_rows=dict(feat0=feat0[{last}], el0=el0[{last}])" in method, method
    assert "source_rows=dict(feat0=feat0[j], el0=el0[j])" in method or num_etypes == 2, method


def test_passes_whose_code_differs_by_graph_stay_apart() -> None:
    """Edge type 1's pass averages its GAT's heads, the others flatten theirs: between it and
    the first and last passes no two alike passes are consecutive, so none folds."""
    method = _method(generate_case(_case("UnevenEdgeTypeGAT")).source)  # checked exact
    assert "def layer_j(" not in method and "graph_batches[j]" not in method, method
    assert ".mean(1)" in method and method.count(".flatten(1)") == 6, method


def test_passes_written_out_one_by_one_stay_apart() -> None:
    method = _method(generate_case(_case("WrittenOutEdgeTypeGAT")).source)  # checked exact
    assert "graphs = [" not in method and not re.search(r"^ +for j\b", method, re.M), method
    for module in ("self.flat[0]", "self.mean[0]", "self.flat[1]", "self.mean[1]"):
        assert module in method, method


def _prepared(case: Case):
    """The generated model with perturbed weights, a graph with a self-loop on each node (GATConv
    refuses nodes without in-edges), inputs."""
    generated = generate_case(case)
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 0)
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent), reference)
    g = random_graph_for(generated, NUM_NODES, seed=0, zero_in_degree=False)
    return generated, model, g, make_inputs(generated, NUM_NODES, 0, g.num_edges())


@pytest.mark.parametrize("num_layers, num_etypes", [(3, 4)])
def test_nodes_gives_forwards_rows_of_those_nodes(num_layers: int, num_etypes: int) -> None:
    generated, model, g, inputs = _prepared(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                                  num_etypes=num_etypes))
    every = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
    nodes = __import__("torch").tensor([1, 7, 30, 60])
    some = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", nodes=nodes)
    assert allclose(some, [t[nodes] for t in flatten(every)], atol=1e-5, rtol=1e-5), max_difference(
        some, [t[nodes] for t in flatten(every)])


@pytest.mark.parametrize("num_layers, num_etypes", [(3, 4)])
def test_changed_equals_a_fresh_run(num_layers: int, num_etypes: int, tmp_path: Path) -> None:
    generated, model, g, inputs = _prepared(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                                  num_etypes=num_etypes))
    storage = str(tmp_path)
    run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage, keep_layers=True)
    for step in range(2):  # two updates in a row: the second starts from the first's kept layers
        g, inputs, changed = updated(generated, g, inputs, seed=step, self_loops=True)
        fresh = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
        actual = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage,
                               changed=changed)
        assert allclose(actual, fresh, atol=1e-4, rtol=1e-4), (step, max_difference(actual, fresh))

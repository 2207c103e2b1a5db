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
from gnn_codegen.render.alike_bodies import bindings_kept
from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    full_graph_forward,
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


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (2, 4), (3, 4)])
def test_the_inner_loop_is_inside_a_loop_over_the_users_layers(num_layers: int, num_etypes: int) -> None:
    """forward's two loops: every pass one function, each layer's ending under `if j == last:`,
    the last layer's under `if i == last:`; the first layer's skip in the prologue, where later
    layers' runs at the end of the layer before (test_graph_layer_loops.py)."""
    method = _method(generate_case(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                         num_etypes=num_etypes)).source)  # checked exact
    assert re.search(r"^ +for i in range\(len\(self\.convs\)\):\n +for j in range\(self\.num_etypes\):$",
                     method, re.M), method
    assert "self.convs[i][j]" in method, method
    assert len(re.findall(r"^ +def layer_\w*\(", method, re.M)) == 1, method
    assert "i == 0" not in method and "x_skip = self.skips[0](x)" in method, method
    assert "if j == self.num_etypes - 1:" in method and "if i == len(self.convs) - 1:" in method, method
    assert "return self.out(x_skip), None, None" in method and "return x_skip, None, None" in method, method
    assert "x_skip = x\n" not in method and " if j == 0 else " not in method, method
    assert "nodes=needed[i * self.num_etypes + j + 1]" in method, method
    assert "layers=graph_batches * len(self.convs)" in method, method
    assert "feat, el = feat_next, el_next" in method, method
    assert not re.search(r"\b(feat|el|x_skip)\d", method.split("for i in range(")[1]), method


def test_passes_that_differ_stay_apart() -> None:
    """Edge type 1's pass averages its GAT's heads, the others flatten theirs: the layers'
    passes are not one function, and no pass is a loop's (each stays apart)."""
    method = _method(generate_case(_case("UnevenEdgeTypeGAT")).source)  # checked exact
    assert not re.search(r"^ +for i in ", method, re.M) and "for j in range(self.num_etypes - 1):" not in method


def test_layers_that_differ_keep_a_loop_over_the_graphs_each() -> None:
    """The last layer averages its GATs' heads, the first flattens them: no loop over the
    user's layers; each layer's passes over the graphs but the last still one loop."""
    method = _method(generate_case(_case("LayerUnevenEdgeTypeGAT")).source)  # checked exact
    assert not re.search(r"^ +for i in ", method, re.M), method
    assert method.count("for j in range(self.num_etypes - 1):") == 2, method
    assert ".mean(1)" in method and ".flatten(1)" in method, method


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (3, 4)])
def test_rows_for_every_graph_are_lists_made_in_a_loop(num_layers: int, num_etypes: int) -> None:
    method = _method(generate_case(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                         num_etypes=num_etypes)).source)  # checked exact
    assert "_etype_" not in method, method
    # each layer's GATs' source work: one loop over the graphs, its rows appended to lists
    # (the first layer's in the prologue, the next layer's in the loops' function)
    assert "self.convs[0][j]'s fc and attention term" in method, method
    assert "feat0, el0 = [], []" in method and "feat0.append(feat)" in method, method
    assert "self.convs[i + 1][k]'s fc and attention term" in method, method
    assert "feat_next, el_next = [], []" in method and "feat_next.append(feat_k)" in method, method
    assert method.count("for j in range(self.num_etypes):") == 2, method  # the prologue's, the loops'
    # bound as lists, each pass reading its graph's item
    assert "x_skip, feat_next, el_next = graph_batches[j].map(" in method, method
    assert "source_rows=dict(feat=feat[j], el=el[j])" in method, method


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


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (3, 4)])
def test_nodes_gives_forwards_rows_of_those_nodes(num_layers: int, num_etypes: int) -> None:
    generated, model, g, inputs = _prepared(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                                  num_etypes=num_etypes))
    every = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
    nodes = __import__("torch").tensor([1, 7, 30, 60])
    some = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", nodes=nodes)
    assert allclose(some, [t[nodes] for t in flatten(every)], atol=1e-5, rtol=1e-5), max_difference(
        some, [t[nodes] for t in flatten(every)])
    expected = [t[nodes] for t in flatten(full_graph_forward(model, generated, g, inputs))]
    assert allclose(some, expected, atol=1e-4, rtol=1e-4), max_difference(some, expected)


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (3, 4)])
def test_changed_equals_a_fresh_run(num_layers: int, num_etypes: int, tmp_path: Path) -> None:
    generated, model, g, inputs = _prepared(_case("LoopedEdgeTypeGAT", num_layers=num_layers,
                                                  num_etypes=num_etypes))
    storage = str(tmp_path)
    run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage, keep_layers=True)
    for step in range(2):  # two updates in a row: the second starts from the first's kept layers
        g, inputs, changed = updated(generated, g, inputs, seed=step, self_loops=True)
        fresh = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
        assert allclose(fresh, full_graph_forward(model, generated, g, inputs), atol=1e-4, rtol=1e-4), step
        actual = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage,
                               changed=changed)
        assert allclose(actual, fresh, atol=1e-4, rtol=1e-4), (step, max_difference(actual, fresh))


def test_a_layers_name_given_the_loops_keeps_what_each_read_reads() -> None:
    """`x_skip0` read as the loop's `x_skip` where the body's own x_skip rebinds it after its
    last read: the same values; where the body's x_skip is read beside it, not so (refused)."""
    ours = {"block": "p0_", "x_skip0": "p1_"}
    theirs = {"block": "p0_", "x_skip": "p1_"}
    assert bindings_kept(["x_skip = x_skip0 + 1", "return x_skip"], ["x_skip = x_skip + 1", "return x_skip"],
                         ours, theirs)
    assert not bindings_kept(["x_skip = self.fc(x_skip0)", "return x_skip + x_skip0"],
                             ["x_skip = self.fc(x_skip)", "return x_skip + x_skip"], ours, theirs)

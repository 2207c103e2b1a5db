"""Differential test: random models built only of supported pieces (tests/random_models.py) go
through generate_all, and the generated `inference` must equal the model's full-graph forward
(atol = rtol = 1e-4) on a random graph of 60-120 nodes with zero-in-degree nodes, for a batch
size below N that does not divide it and one of at least N, and every `del` in it must free
what it names (tests/deletion_watch.py); for a third of the draws, after a full run that keeps its
layers and an update (features redrawn, edges added and removed), `changed=` must equal a fresh
run on the new graph (issue 39). A refusal (GnnCodegenError) is a failure too: every
piece the generator draws is meant to be supported. The same models with one convolution
replaced by a user module that propagates twice in one call must be refused instead, naming it
(test_multi_round_user_module_is_refused, 20 examples; GNN_CODEGEN_DIFF_REFUSALS for more).

200 examples by default under the `long` marker (`pytest -m long`), and 20 new ones every quick run
(`pytest -m "not long"`). To run thousands locally:

    GNN_CODEGEN_DIFF_EXAMPLES=5000 python -m pytest tests/test_differential.py

With CI=true the examples are derandomized (the same ones every run). Hypothesis prints the
shrunk spec of a failing example; the model source it renders is printed with it. Minimised
failures live on as named cases in tests/models/regressions.py (tests/test_regressions.py).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest
import torch
from hypothesis import HealthCheck, currently_in_test_context, given, note, settings
from hypothesis import strategies as st

from gnn_codegen.errors import CheckFailedError, GnnCodegenError
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.harness import (
    allclose,
    full_graph_forward,
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
from gnn_codegen.trace.metapaths import rows_graph
from gnn_codegen.trace.several_graphs import first_graph
from gnn_codegen.analysis.perturb import perturb
from tests.deletion_watch import views_kept_alive
from tests.graph_updates import updated
from tests.random_models import (
    RELATIONS_METAGRAPH, USER_MODULES, ModelSpec, Step, model_specs, multi_round_specs, render_model_source,
    user_propagation_specs,
)

MIN_NODES, MAX_NODES = 60, 120
ATOL = RTOL = 1e-4


def graph_and_batch_sizes(seed: int) -> tuple[int, tuple[int, int]]:
    """N in [60, 120]; a batch size in [N/4, N) that does not divide N, and one of at least N."""
    rng = random.Random(seed)
    num_nodes = rng.randint(MIN_NODES, MAX_NODES)
    small = rng.choice([b for b in range(num_nodes // 4, num_nodes) if num_nodes % b])
    large = num_nodes + rng.randint(0, 10)
    return num_nodes, (small, large)


def options_for(spec: ModelSpec) -> GenerateOptions:
    """The input's width, as a user gives it (--feat-dims) when the model's own message-passing
    module reads it first, or one of DGL's traced into whose first use of it is no Linear:
    nothing outside that module's forward says how wide it is."""
    untold = (*USER_MODULES, "inline", "APPNPConv", "GatedGraphConv")
    user_module = any(step.kind in untold for step in spec.steps)
    user_module = user_module and not spec.table  # a table of the model says its own width
    # a relation graph of forward's heterograph: its relations, as a user gives them
    metagraph = RELATIONS_METAGRAPH if spec.derived_graph == "relation" else None
    return GenerateOptions(feat_dims=f"x={spec.in_width}" if user_module else None, metagraph=metagraph)


def _note(text: str) -> None:
    if currently_in_test_context():  # check_spec also runs outside hypothesis (exploration)
        note(text)


def check_spec(spec: ModelSpec, seed: int) -> None:
    """Generate inference for the rendered model and compare it with the full-graph forward;
    raises AssertionError (pytest.fail) on a refusal or a difference."""
    source = render_model_source(spec)
    _note(f"model source:\n{source}")
    with _model_file(source) as (folder, path):
        try:
            generated = generate_all(f"{path}:RandomModel", options_for(spec))
        except CheckFailedError as exc:
            pytest.fail(f"the check before writing failed: {exc}")
        except GnnCodegenError as exc:
            pytest.fail(f"refused a model built only of supported pieces: {type(exc).__name__}: {exc}")
        _note(f"generated source:\n{generated.source}")
        module = import_source(generated.source, folder)
        reference = generated.loaded.model
        perturb(reference, seed)
        reference.eval()
        model = generated_model(generated, module)
        num_nodes, batch_sizes = graph_and_batch_sizes(seed)
        # forward(self, gs, x): two random graphs over the same nodes (random_models._several_graphs)
        # or a heterograph of one node type whose relation forward takes (relation_graphs.py)
        g = random_graph_for(generated, num_nodes, seed) if spec.several_graphs or spec.derived_graph == "relation" \
            else random_graph(num_nodes, seed=seed, zero_in_degree=True)
        inputs = make_inputs(generated, num_nodes, seed, first_graph(g).num_edges())
        assert int((first_graph(rows_graph(generated.program, g)).in_degrees() == 0).sum()) > 0
        expected = full_graph_forward(reference, generated, g, inputs)
        for batch_size in batch_sizes:
            actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu")
            if not allclose(actual, expected, ATOL, RTOL):
                pytest.fail(
                    f"N={num_nodes}, batch_size={batch_size}: inference differs from the full-graph "
                    f"forward, max |difference| {max_difference(actual, expected):.3g}"
                )
        if seed % 3 == 0:  # a third of the draws: an update, and incremental re-inference after it
            _check_incremental(model, generated, g, inputs, batch_sizes[0], seed)
        with with_tables(model, generated, inputs):
            kept = views_kept_alive(model.inference, *inference_arguments(generated, g, inputs),
                                    batch_size=batch_sizes[0], device="cpu")
        if kept:
            pytest.fail(f"a `del` in inference frees nothing: {', '.join(kept)}")


def _check_incremental(model, generated, g, inputs, batch_size: int, seed: int) -> None:
    """After a full run that keeps its layers, a few features redrawn and edges added and removed
    (features only on several graphs or a heterograph): inference(..., changed=the nodes they
    change) must equal a fresh run on the new graph and inputs (issue 39)."""
    with tempfile.TemporaryDirectory(prefix="gnn_codegen_diff_kept_") as storage:
        run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu", storage=storage,
                      keep_layers=True)
        new_g, new_inputs, changed = updated(generated, g, inputs, seed)
        _note(f"update: changed nodes {changed.tolist()}")
        fresh = run_inference(model, generated, new_g, new_inputs, batch_size=batch_size, device="cpu")
        actual = run_inference(model, generated, new_g, new_inputs, batch_size=batch_size, device="cpu",
                               storage=storage, changed=changed)
        if not allclose(actual, fresh, ATOL, RTOL):
            pytest.fail(f"changed= differs from a fresh run after an update, max |difference| "
                        f"{max_difference(actual, fresh):.3g}")


@contextlib.contextmanager
def _model_file(source: str) -> Iterator[tuple[Path, Path]]:
    """A scratch folder holding the model's file, and one torch thread while it is used: the
    tensors are tiny, and one thread is several times faster than torch's default pool, above
    all on a loaded 2-core machine where idle pool threads spin."""
    folder = Path(tempfile.mkdtemp(prefix="gnn_codegen_diff_"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        path = folder / f"random_model_{uuid.uuid4().hex[:12]}.py"
        path.write_text(source)
        yield folder, path
    finally:
        torch.set_num_threads(threads)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.long
@given(model_specs(), st.integers(0, 2**16))
@settings(
    max_examples=int(os.environ.get("GNN_CODEGEN_DIFF_EXAMPLES", "200")),
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow],
)
def test_generated_inference_equals_full_graph_forward(spec: ModelSpec, seed: int) -> None:
    check_spec(spec, seed)


@pytest.mark.parametrize("then", [Step("conv", (1,), 5, "SAGEConv", "mean"),
                                  Step("conv", (1,), 6, "APPNPConv", edge_weight=True)],
                         ids=["update", "edge_weight_norm"])
def test_a_table_left_on_forwards_graph_keeps_its_rows(then: Step) -> None:
    """A table as x (`x = self.table.weight`, 50 rows) into NdataConv, which leaves it on
    forward's graph as g.ndata["h"]; the check swapped the table's rows in place, so that column
    went back to 50 rows afterwards: the next layer's EdgeWeightNorm(g, w) on the check's graph
    raised (a false "bug in gnn-codegen"), and the update's copy of the graph's columns into a
    graph of N nodes did. Seed 3: the draw runs the update and changed= (check_spec)."""
    spec = ModelSpec(style="full", in_width=6, table=True, edge_weights=then.edge_weight,
                     steps=(Step("conv", (0,), 6, "NdataConv", "sum"), then), outputs=(2,))
    check_spec(spec, seed=3)


@given(model_specs(), st.integers(0, 2**16))
@settings(max_examples=20, deadline=None, derandomize=os.environ.get("CI") == "true",
          suppress_health_check=[HealthCheck.too_slow])
def test_a_few_random_models_equal_forward(spec: ModelSpec, seed: int) -> None:
    """The quick run's draws (`pytest -m "not long"`): new ones every run (the same ones with
    CI=true); the 200 above run under the long marker."""
    check_spec(spec, seed)


@given(user_propagation_specs(), st.integers(min_value=0, max_value=2**16))
@settings(
    max_examples=int(os.environ.get("GNN_CODEGEN_DIFF_USER_PROPAGATION", "10")),
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_user_propagation_loops_and_out_degree_norms_equal_forward(spec: ModelSpec, seed: int) -> None:
    """A user's rounds with a post-step after each, and a user's layer normalised by its graph's
    out-degrees (tests/random_models.py: USER_PROPAGATION), among the drawn models' layers."""
    check_spec(spec, seed)


@given(model_specs().filter(lambda spec: spec.several_graphs), st.integers(0, 2**16))
@settings(
    max_examples=int(os.environ.get("GNN_CODEGEN_DIFF_GRAPHS", "20")),
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_graphs_side_by_side_equal_forward(spec: ModelSpec, seed: int) -> None:
    """forward(self, gs, x), a convolution on each of two graphs at a depth (issue 35, item 4)."""
    check_spec(spec, seed)


@given(multi_round_specs())
@settings(
    max_examples=int(os.environ.get("GNN_CODEGEN_DIFF_REFUSALS", "20")),
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow],
)
def test_multi_round_user_module_is_refused(spec: ModelSpec) -> None:
    source = render_model_source(spec)
    _note(f"model source:\n{source}")
    with _model_file(source) as (_, path):
        with pytest.raises(GnnCodegenError) as refused:
            generate_all(f"{path}:RandomModel", options_for(spec))
    assert not isinstance(refused.value, CheckFailedError), f"written, then caught by the check: {refused.value}"
    assert "TwoRoundUDFConv" in str(refused.value), str(refused.value)

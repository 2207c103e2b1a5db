"""Differential test of heterogeneous models: random models of tests/random_hetero_models.py
go through generate_all (whose check before writing runs every one on random heterographs,
batch sizes that do and do not divide the node counts, a relation without edges and a
simulated GPU), then are checked once more on a larger heterograph with other batch sizes. A
refusal is a failure: every piece the generator draws is meant to be supported. Then an update
(issue 39): after a full run that keeps its layers, a few rows of each type's features redrawn
and edges added and removed in every other relation (tests/graph_updates.updated_hetero),
`changed=` the nodes it changed, and `changed="auto"`, must each equal a fresh run on the new
graph (atol = rtol = 1e-4). A model whose module refuses incremental re-inference by design is
accepted only with the refusal its docstring names (render/hetero_incremental.py).

60 examples by default under the `long` marker (GNN_CODEGEN_HETERO_DIFF_EXAMPLES for more; derandomized
with CI=true), and 6 new ones every quick run (`pytest -m "not long"`)."""

from __future__ import annotations

import copy
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.errors import GnnCodegenError
from gnn_codegen.generated import Generated
from gnn_codegen.load.hetero_schema import random_heterograph
from gnn_codegen.verify.check import instantiate
from gnn_codegen.verify.harness import allclose, max_difference
from gnn_codegen.verify.hetero import check_hetero, cut_tables, inference_arguments, node_counts, random_inputs
from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.graph_updates import updated_hetero
from tests.random_hetero_models import random_hetero_spec

EXAMPLES = int(os.environ.get("GNN_CODEGEN_HETERO_DIFF_EXAMPLES", "60"))


def check_seed(seed: int) -> None:
    spec = random_hetero_spec(seed)
    note(f"model source:\n{spec.source}\nmetagraph: {spec.metagraph}")
    with tempfile.TemporaryDirectory(prefix="gnn_codegen_hetero_diff_") as folder:
        path = Path(folder) / f"random_hetero_{uuid.uuid4().hex[:8]}.py"
        path.write_text(spec.source)
        options = GenerateOptions(metagraph=None if spec.canonical_keys else spec.metagraph,
                                  forward_args=spec.forward_args)
        try:
            generated = generate_all(f"{path}:RandomHetero", options)
        except GnnCodegenError as exc:
            pytest.fail(f"refused or failed its check: {exc}\n{spec.source}", pytrace=False)
        result = check_hetero(generated, 200, seed=seed % 1000, batch_sizes=(13, 1000))
        assert result.ok, ([(b.batch_size, b.sources, b.max_abs_diff) for b in result.batches], spec.source)
        check_update(generated, seed % 1000)


# the words that open the refusal a module renders where incremental re-inference cannot be
# exact for its model (render/hetero_incremental.py), and those its docstring says it with
REFUSAL = "changed= and keep_layers= (incremental re-inference) are not done for this model: "
DOCUMENTED = "changed= and keep_layers= (incremental re-inference): ValueError, as "


def check_update(generated: Generated, seed: int, batch_size: int = 13) -> None:
    """After a full run that keeps its layers (in two folders) and an update, changed= the
    update's nodes and changed="auto" each equal a fresh run on the new graph and features."""
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    model, _ = instantiate(generated, reference.eval(), "generated_hetero_update", gather=False)
    counts = node_counts(generated, 200)
    with cut_tables(generated, counts, reference, model), tempfile.TemporaryDirectory() as folder:
        g = random_heterograph(generated.schema, counts, seed=seed)
        inputs = random_inputs(generated, counts, seed)
        kept = {how: str(Path(folder) / how) for how in ("ids", "auto")}
        new_g, new_inputs, changed = updated_hetero(g, inputs, seed)
        note(f"update: changed nodes {({t: ids.tolist() for t, ids in changed.items()})}")
        fresh = _run(generated, model, new_g, new_inputs, batch_size)
        try:
            for storage in kept.values():
                _run(generated, model, g, inputs, batch_size, storage=storage, keep_layers=True)
            updates = {how: _run(generated, model, new_g, new_inputs, batch_size, storage=kept[how], changed=ids)
                       for how, ids in (("ids", changed), ("auto", "auto"))}
        except ValueError as exc:
            _refused_as_documented(generated, exc)
            return
    for how, actual in updates.items():
        assert allclose(actual, fresh, 1e-4, 1e-4), (
            f"changed={how} differs from a fresh run after an update, max |difference| "
            f"{max_difference(actual, fresh):.3g}")


def _run(generated: Generated, model: Any, g: Any, inputs: dict, batch_size: int, **kwargs: Any) -> Any:
    """The generated inference on g and the features, as a user calls it."""
    arguments = inference_arguments(generated, g, inputs)  # (sets those forward reads from g on g)
    return getattr(model, generated.method_name)(g, *arguments.values(), batch_size=batch_size, device="cpu",
                                                 **kwargs)


def _refused_as_documented(generated: Generated, exc: ValueError) -> None:
    """A refusal of keep_layers= or changed= is the model's by design only where the module renders it and
    its docstring gives the same reason; any other ValueError is a failure."""
    message = " ".join(str(exc).split())
    source = " ".join(generated.source.split())
    reason = message.removeprefix(REFUSAL)
    if not message.startswith(REFUSAL) or DOCUMENTED + reason not in source:
        pytest.fail(f"incremental re-inference raised a ValueError that is no documented refusal: {exc}",
                    pytrace=False)
    note(f"incremental re-inference refused by design: {reason}")


@pytest.mark.long
@settings(max_examples=EXAMPLES, deadline=None, derandomize=os.environ.get("CI") == "true",
          suppress_health_check=[HealthCheck.too_slow], database=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_random_hetero_models_equal_forward(seed: int) -> None:
    check_seed(seed)


@settings(max_examples=6, deadline=None, derandomize=os.environ.get("CI") == "true",
          suppress_health_check=[HealthCheck.too_slow], database=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_a_few_random_hetero_models_equal_forward(seed: int) -> None:
    """The quick run's draws: new ones every run (the same ones with CI=true); the 60 above
    run under the long marker."""
    check_seed(seed)


@pytest.mark.parametrize("seed", [18, 23])
def test_graph_conv_weights_through_mod_kwargs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeds whose models give GraphConv(weight=False) a weight per relation through mod_kwargs
    (DGL's rgcn-hetero form; drawn in about one model in eight), one that narrows (the weight
    applied once per source node) and one that does not, checked whatever the random draw."""
    assert '{"weight": self.w' in random_hetero_spec(seed).source
    monkeypatch.setattr(f"{__name__}.note", lambda *args: None)  # outside a hypothesis test
    check_seed(seed)


def test_a_refusal_by_design_is_accepted_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose module refuses changed= (forward reads an edge count of g: edges added or
    removed change every row) passes the update's check with that refusal; another ValueError
    from incremental re-inference (a wrong argument, say) fails it."""
    from tests.cases import REPO

    notes: list[str] = []
    monkeypatch.setattr(f"{__name__}.note", notes.append)  # outside a hypothesis test
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/hetero.py:ReadsGraphSizes", GenerateOptions(feat_dims="user=8,game=8"))
    check_update(generated, seed=1)
    assert "refused by design: forward reads g.num_edges(" in notes[-1], notes
    with pytest.raises(pytest.fail.Exception, match="no documented refusal"):
        _refused_as_documented(generated, ValueError('changed must be a dict of node IDs per type or "auto"'))
    with pytest.raises(pytest.fail.Exception, match="no documented refusal"):
        _refused_as_documented(generated, ValueError(REFUSAL + "forward reads g.num_nodes(), said nowhere"))

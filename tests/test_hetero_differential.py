"""Differential test of heterogeneous models: random models of tests/random_hetero_models.py
go through generate_all (whose check before writing runs every one on random heterographs,
batch sizes that do and do not divide the node counts, a relation without edges and a
simulated GPU), then are checked once more on a larger heterograph with other batch sizes. A
refusal is a failure: every piece the generator draws is meant to be supported.

60 examples by default under the `long` marker (GNN_CODEGEN_HETERO_DIFF_EXAMPLES for more; derandomized
with CI=true), and 6 new ones every quick run (`pytest -m "not long"`)."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from gnn_codegen.errors import GnnCodegenError
from gnn_codegen.verify.hetero import check_hetero
from gnn_codegen.pipeline import GenerateOptions, generate_all
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

"""A value of no rows that a layer reads more than once (ChebConv's re_norm, a user's rate
cast to the features' dtype) is computed once in that layer's function, under the user's name,
not written out at every reader (render/shared_constants.py) — and stays exact."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO


def _layer_functions(source: str) -> list[str]:
    method = source[source.index("    def inference("):source.index("# --- gnn-codegen runtime")]
    return re.split(r"\n        def ", method)[1:]


def test_chebnet_computes_re_norm_once_per_layer() -> None:
    """The golden: `re_norm = 2.0 / lambda_max` once in every layer that reads it, the cast to
    the layer's input (forward's `features`, whose dtype is the caller's) kept as written."""
    layers = _layer_functions((REPO / "generated_examples" / "chebnet" / "generated.py").read_text())
    readers = [f for f in layers if "torch.tensor([2.0]" in f]
    assert len(readers) == 4
    for function in readers:
        assert function.count("torch.tensor(") == 1, function
        assert function.count("re_norm = 2.0 / torch.tensor(") == 1 and "(re_norm - 1)" in function
    assert all(re.search(r"\.to\(\s*features\s*\)", f) for f in readers[:2])


def test_a_users_rate_read_twice_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/shared_constants.py:MixedRateGCN",
                             GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'))
    readers = [f for f in _layer_functions(generated.source) if "torch.tensor(" in f]
    assert readers
    for function in readers:
        assert function.count("torch.tensor(") == 1, function
        assert re.search(r"\bmix = 1\.0 / torch\.tensor\(", function), function
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"

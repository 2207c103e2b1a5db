"""A value of no rows that a layer reads more than once (a user's rate cast to the features'
dtype, made from a list the way ChebConv makes re_norm) is computed once in that layer's function, under the user's name,
not written out at every reader (render/shared_constants.py) — and stays exact."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO


def _layer_functions(source: str) -> list[str]:
    method = source[source.index("    def inference("):source.index("# --- gnn-codegen runtime")]
    return re.split(r"\n {8,12}def ", method)[1:]  # in a loop too (period_loops.py)


def test_chebnet_builds_no_constant_tensor_per_batch() -> None:
    """The golden: ChebConv's `re_norm = 2.0 / torch.tensor([2.0])` is 1 in every float dtype, so
    it is folded where the code is generated (analysis/constant_scalars.py), not built in every
    layer function per batch; the Chebyshev terms keep their names."""
    layers = _layer_functions((REPO / "generated_examples" / "chebnet" / "generated.py").read_text())
    assert len(layers) >= 3  # the prologue, and a function per hop in the loop over the layers
    assert not [f for f in layers if "torch.tensor(" in f]
    assert sum("t1 = " in f for f in layers) == 1 and sum("t2 = " in f for f in layers) == 1


def test_a_users_rate_read_twice_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/shared_constants.py:MixedRateGCN",
                             # 1/3 rounds differently in each float dtype: not folded, shared
                             GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3, "rate": 3.0}'))
    readers = [f for f in _layer_functions(generated.source) if "torch.tensor(" in f]
    assert readers
    for function in readers:
        assert function.count("torch.tensor(") == 1, function
        assert re.search(r"\bmix = 1\.0 / torch\.tensor\(", function), function
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"

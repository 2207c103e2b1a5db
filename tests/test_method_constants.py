"""A constant a library line names and computes from numbers alone (ChebConv's `re_norm = 2.0 /
lambda_max`) is computed once in the method, before the first layer that reads it, and read by
the layers' functions from there (render/method_constants.py): issue 37's review of chebnet saw
`re_norm = 2.0 / 2.0` with its comment repeated in every function. Each exact."""

from __future__ import annotations

import re

import pytest

from tests.cases import REPO
from tests.generated_text import generated_and_checked, inference_method

MODEL = "tests/models/propagation_idioms.py"
INIT = '{"in_size": 6, "hid_size": 5, "out_size": 3}'


def _generated(name: str, monkeypatch: pytest.MonkeyPatch):
    return generated_and_checked(MODEL, name, INIT, monkeypatch, num_nodes=61, seed=3,
                                 batch_sizes=(1, 17, 61))


def test_every_chebconvs_re_norm_is_computed_once_before_its_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    method = inference_method(_generated("ChebStack", monkeypatch).source)
    assert method.count("re_norm = 2.0 / lambda_max") == 2, method  # the comment's and the line
    assert re.search(r"\n {8}re_norm = 2\.0 / lambda_max\n", method), method  # the method's, not a function's
    # read by each layer's hops (one function per hop in the loop over the layers), assigned
    # nowhere else
    assert len(re.findall(r"^ *re_norm = ", method, re.M)) == 1, method
    assert method.count("-re_norm * h") == 1 and method.count("-2 * re_norm * h") == 1, method
    # before the first layer that reads it, with the line it comes from
    first_layer = method.index("def hop_1(")
    assert method.index("re_norm = 2.0 / lambda_max\n") < first_layer, method
    assert "`re_norm = 2.0 / lambda_max` as chebconv.py computes it" in method[:first_layer], method


def test_forwards_number_is_named_as_the_library_line_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37's review of chebnet: `re_norm = 2.0 / 2.0` did not say which 2.0 forward gave;
    `lambda_max = 2.0`, from forward's line, then the library's own line."""
    method = inference_method(_generated("ChebStack", monkeypatch).source)
    assert "        lambda_max = 2.0  # forward's, in `h = layer(g, h, [2])`\n" in method, method
    assert method.index("lambda_max = 2.0") < method.index("re_norm = 2.0 / lambda_max\n"), method
    assert "2.0 / 2.0" not in method, method


def test_a_constant_of_another_value_takes_a_name_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """lambda_max 2 and 4: two values of DGL's one name, never one read for the other."""
    method = inference_method(_generated("ChebTwoLambdas", monkeypatch).source)
    assert "re_norm = 2.0 / lambda_max\n" in method and "re_norm_2 = 2.0 / lambda_max_2\n" in method, method
    assert "lambda_max = 2.0  #" in method and "lambda_max_2 = 4.0  #" in method, method
    assert method.index("re_norm_2 = ") > method.index("def layer_2("), method


def test_the_chebnet_golden_computes_re_norm_once() -> None:
    method = inference_method((REPO / "generated_examples" / "chebnet" / "generated.py").read_text())
    assert method.count("re_norm = 2.0 / lambda_max\n") == 1 and method.count("in every float") == 1, method
    assert "lambda_max = 2.0  # forward's, in `h = layer(self.g, h, [2])`" in method, method

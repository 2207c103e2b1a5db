"""DGL's propagation modules as a reviewer reads them (issue 37, part 2): ChebConv's constants
folded where exact (analysis/constant_scalars.py), GCN2Conv's initial residual read whole where
its rows are the layer's (analysis/whole_prefixes.py), DGL's norm reshape as an unsqueeze with
the input rank it assumes checked (analysis/trailing_ones.py), and the in-degrees a 0-in-degree
check reads computed once (render/preamble.py). Each is exact against forward."""

from __future__ import annotations

import re

import dgl
import pytest
import torch

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from gnn_codegen.verify.harness import full_graph_forward, generated_model, import_source, run_inference
from tests.cases import REPO

MODEL = "tests/models/propagation_idioms.py"


def _generate(name: str, init: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions(init=init))


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _exact(generated) -> None:
    result = check(generated, num_nodes=61, seed=3, batch_sizes=(1, 17, 61))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


def _both(generated, x: torch.Tensor, g: dgl.DGLGraph):
    module = import_source(generated.source, REPO / "tests" / "models", "propagation_idioms_generated")
    model = generated_model(generated, module)
    return full_graph_forward(generated.loaded.model, generated, g, [x]), run_inference(model, generated, g, [x], 7, "cpu")


def _inf_and_nan_as_forward(generated) -> None:
    """Rows with an infinity and a NaN give forward's NaN, infinities and numbers."""
    g = dgl.add_self_loop(dgl.rand_graph(40, 160))
    x = torch.randn(40, 6)
    x[3, 2], x[11, 0] = float("inf"), float("nan")
    expected, got = _both(generated, x, g)
    assert torch.equal(expected.isnan(), got.isnan()) and expected.isnan().any()
    assert torch.equal(expected.isinf(), got.isinf())
    torch.testing.assert_close(got, expected, equal_nan=True)


@pytest.mark.parametrize("lambda_max", [2.0, 4.0])
def test_chebconv_re_norm_is_named_as_dgl_computes_it(lambda_max: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """re_norm = 2.0 / torch.tensor([lambda_max]) is the same number in every float dtype: no
    tensor built per batch, and it keeps DGL's name and its recurrence's form
    (analysis/named_constants.py), `-re_norm * h + X_0 * (re_norm - 1)`, not `-h + X_0 * 0.0`
    with a comment defending the product by zero; infinities and NaN are forward's."""
    init = f'{{"in_size": 6, "hid_size": 5, "out_size": 3, "lambda_max": {lambda_max}}}'
    method = _method((generated := _generate("ChebTwoLayers", init, monkeypatch)).source)
    assert "torch.tensor(" not in method and "* 0.0" not in method and "infinities and NaN" not in method
    # once, in the method, for both layers' hops (render/method_constants.py)
    assert method.count("re_norm = 2.0 / lambda_max\n") == 1, method
    # forward's number under the library line's name, with the line of forward that gives it
    assert f"lambda_max = {lambda_max}  # forward's, in `h = self.convs[0](g, x, [self.lambda_max])`" in method
    # DGL's lines, one line each (render/layer.py's nesting, render/code.py's parentheses)
    assert "t1 = -re_norm * h + x * (re_norm - 1)\n" in method, method
    assert "t2 = -2 * re_norm * h + t1 * 2 * (re_norm - 1) - x\n" in method, method
    _exact(generated)
    _inf_and_nan_as_forward(generated)


@pytest.mark.parametrize("lambda_max", [3.0, 1.5])
def test_chebconv_constants_not_the_same_in_every_dtype_stay(lambda_max: float,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """lambda_max 3 or 1.5: 2 / 3 and 2 / 1.5 round differently in float16 and float32, so the
    tensor forward builds stays, computed once per layer function as re_norm."""
    init = f'{{"in_size": 6, "hid_size": 5, "out_size": 3, "lambda_max": {lambda_max}}}'
    generated = _generate("ChebTwoLayers", init, monkeypatch)
    method = _method(generated.source)
    assert "torch.tensor(" in method and re.search(r"\bre_norm = 2\.0 / torch\.tensor\(", method)
    _exact(generated)
    _inf_and_nan_as_forward(generated)


def test_a_constant_of_the_users_own_line_is_folded_into_its_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a library line's names are kept: the user's `mix = 1.0 / torch.tensor([4.0])...`
    (0.25 in every dtype) is folded into `h * 0.25 + F.relu(h) * 0.75` as before."""
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/shared_constants.py:MixedRateGCN",
                             GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3, "rate": 4.0}'))
    method = _method(generated.source)
    assert "mix" not in method and "torch.tensor(" not in method and "* 0.25" in method, method
    _exact(generated)


def test_initial_residual_on_the_layers_rows_is_not_sliced(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate("WeightedInitialResidual", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch)
    method = _method(generated.source)
    assert ".size(0)]" not in method, method
    _exact(generated)


@pytest.mark.parametrize("name", ["TopologyAdaptive", "PersonalisedPageRank"])
def test_the_norm_reshape_is_an_unsqueeze_with_its_rank_checked(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`torch.reshape(norm, norm.shape + (1,) * (feat.dim() - 1))` on rows of one vector is
    `norm.unsqueeze(1)`; features of another rank, which forward would take, are refused at
    entry rather than broadcast wrongly."""
    init = '{"in_size": 6, "hid_size": 5, "out_size": 3}' if name == "TopologyAdaptive" else '{"in_size": 6, "out_size": 3}'
    generated = _generate(name, init, monkeypatch)
    method = _method(generated.source)
    assert "torch.reshape(" not in method and ".unsqueeze(1)" in method
    assert "if x.dim() != 2:" in method
    _exact(generated)
    module = import_source(generated.source, REPO / "tests" / "models", f"{name}_generated")
    model = generated_model(generated, module)
    with pytest.raises(ValueError, match="x: generated for 2 dimensions"):
        model.inference(dgl.rand_graph(8, 20), torch.randn(8, 2, 6), 4, "cpu")


def test_a_library_line_stays_one_line_where_it_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """GCN2Conv's `rst = (1 - self.beta) * feat_sum + self.beta * feat_proj_sum`, traced into
    (with edge weights): its first product is read by the sum, after the second product, and
    the line stays one line (render/joined_lines.py)."""
    init = '{"in_size": 6, "hid_size": 5, "out_size": 3}'
    method = _method(_generate("WeightedInitialResidual", init, monkeypatch).source)
    assert "rst = (1 - self.conv1.beta) * feat_sum + self.conv1.beta * feat_proj_sum\n" in method, method


def test_a_dgl_modules_result_takes_the_users_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """TAGConv names its result `rst`, as it names the rows it scales to send: the tensors the
    method keeps of each layer's result are the user's `hidden` and `logits`
    (lower/dgl_names.py's with_callers_names), the rows sent on are named for them, `hidden2_src`
    (render/stored_names.scaled_rows), not DGL's `rst`, which names the result too."""
    generated = _generate("TopologyAdaptiveNamed", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch)
    method = _method(generated.source)
    assert re.search(r"\bhidden2, hidden2_src = batches\.map\(", method), method
    assert "logits = batches.map(" in method and "batches.result(logits, nodes=nodes)" in method
    _exact(generated)


def test_the_in_degrees_a_zero_in_degree_check_reads_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate("SimplifiedGCN", '{"in_size": 6, "out_size": 3}', monkeypatch)
    method = _method(generated.source)
    assert method.count(".in_degrees()") == 1 and "if (in_degrees == 0).any():" in method
    _exact(generated)


def test_dgl_locals_are_named_for_what_they_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """ChebConv's X_1, X_i and D_invsqrt are the Chebyshev terms t1, t2 and the norm; TAGConv's
    `rst` of each hop is hop1, hop2, the rows hop 1 sends on hop1_src; APPNPConv's teleport term
    is `teleport` (lower/dgl_names.py)."""
    cheb = _method(_generate("ChebTwoLayers", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch).source)
    assert not re.search(r"\bX_|D_invsqrt", cheb), cheb
    assert re.search(r"\bt1 = ", cheb) and re.search(r"\bt2 = ", cheb) and "def prologue(" in cheb
    generated = _generate("TopologyAdaptive", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch)
    tag = _method(generated.source)
    assert re.search(r"\bhop1 = h \* norm", tag) and "hop1_src" in tag and re.search(r"\bhop2 = h \* norm", tag)
    # after the module's Linear, its result keeps DGL's name
    assert "rst = _linear_of_concatenation(self.conv1.lin, [x, hop1, hop2])" in tag, tag
    _exact(generated)
    # APPNPConv's `self._alpha * feat_0`, the same on every hop's line: the teleport term
    appnp = _method(_generate("PersonalisedPageRank", '{"in_size": 6, "out_size": 3}', monkeypatch).source)
    assert re.search(r"\+ teleport\b", appnp) and re.search(r", teleport = batches\.map_nodes\(", appnp), appnp

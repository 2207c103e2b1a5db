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


def test_chebconv_lambda_max_of_two_is_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    """re_norm = 2.0 / torch.tensor([2.0]) is 1: no tensor built per batch, `-re_norm * h` is
    -h; `X_0 * (re_norm - 1)` stays a product by 0.0 so that inf in the features gives NaN
    where forward's does."""
    generated = _generate("ChebTwoLayers", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch)
    method = _method(generated.source)
    assert "torch.tensor(" not in method and "re_norm" not in method
    assert "* 0.0" in method and "infinities and NaN" in method
    _exact(generated)
    g = dgl.add_self_loop(dgl.rand_graph(40, 160))
    x = torch.randn(40, 6)
    x[3, 2] = float("inf")
    expected, got = _both(generated, x, g)
    assert torch.equal(expected.isnan(), got.isnan()) and expected.isnan().any()
    torch.testing.assert_close(got, expected, equal_nan=True)


def test_chebconv_constants_not_the_same_in_every_dtype_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """lambda_max 3: 2 / 3 rounds differently in float16 and float32, so its tensor stays."""
    generated = _generate("ChebTwoLayers", '{"in_size": 6, "hid_size": 5, "out_size": 3, "lambda_max": 3.0}',
                          monkeypatch)
    assert "torch.tensor(" in _method(generated.source)
    _exact(generated)


def test_initial_residual_on_the_layers_rows_is_not_sliced(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate("InitialResidual", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch)
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

"""DGL's GCN2Conv written out as a named helper, `_gcn2_conv_aggregate` (templates/convs.py.j2,
trace/gcn2_write_out.py; issue 37): the generated layer calls it as a GraphConv's layer calls
its helper, the module's settings are decided in it as GCN2Conv.forward decides them (no
private attribute of the module in the inference method), and the source rows' norm is the
whole graph's, shared by every layer. Each setting's module equals its forward (the helper
against DGL's module on blocks: tests/test_known_modules.py)."""

from __future__ import annotations

import json

import dgl
import pytest
import torch

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from gnn_codegen.verify.harness import import_source
from tests.cases import REPO
from tests.generated_text import inference_method
from tests.models.gcn2_settings import SETTINGS

MODELS = "tests/models/gcn2_settings.py"
SIZES = {"in_size": 8, "hid_size": 6, "out_size": 3}
# what GCN2Conv.forward reads of its module: the helper's to read, not the method's
PRIVATE = ("._bias", "._activation", "._project_initial_features", ".weight1", ".weight2", ".beta", ".alpha")


def _generated(settings: dict, monkeypatch: pytest.MonkeyPatch, name: str = "GCN2Stack"):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODELS}:{name}", GenerateOptions(init=json.dumps({**SIZES, **settings})))


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_each_setting_calls_the_helper_and_equals_forward(settings: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generated(settings, monkeypatch)
    method = inference_method(generated.source)
    assert "_gcn2_conv_aggregate(self.convs[i], block, feat, h0, norm)" in method, method
    assert not [p for p in PRIVATE if p in method], method
    assert "update_all" not in method and "_check_in_degrees" not in method, method
    assert "def _gcn2_conv_aggregate(conv, block, feat_src, feat_0, norm):" in generated.source
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"{settings}: max |difference| {result.max_abs_diff}"
    # allow_zero_in_degree=True: checked on a graph with nodes without in-edges
    assert (result.zero_in_degree_nodes > 0) == bool(settings.get("allow_zero_in_degree")), result


def test_the_norm_is_computed_once_and_stored_beside_h0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Performance as when GCN2Conv was traced into: the norm of the whole graph's in-degrees
    once, in the pass before the first layer, and each layer's source rows scaled once per
    node at the end of the layer before (stored: h0, norm and the scaled rows)."""
    method = inference_method(_generated({}, monkeypatch).source)
    assert method.count("torch.pow(") == 1 and method.count("in_degrees = g.in_degrees()") == 1, method
    assert "return h, norm, h * norm" in method, method
    assert "destination_rows=dict(norm=norm, h0=h0)" in method and "in_place=True" in method, method


def test_zero_in_degree_refused_as_forward_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """allow_zero_in_degree=False (the default): a graph with a node without in-edges raises
    DGLError in inference as in forward (the helper's check, per block); True: it runs."""
    g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 1]), num_nodes=5)  # nodes 0 and 4: no in-edges
    x = torch.randn(5, SIZES["in_size"])
    for allow in (False, True):
        generated = _generated({"allow_zero_in_degree": allow}, monkeypatch)
        module = import_source(generated.source, REPO / "tests" / "models", f"gcn2_settings_{allow}")
        model = module.GCN2Stack(**SIZES, allow_zero_in_degree=allow).eval()
        if allow:
            with torch.no_grad():
                torch.testing.assert_close(model.inference(g, x, 2, "cpu"), model(g, x), atol=1e-5, rtol=1e-4)
            continue
        with pytest.raises(dgl.DGLError):
            model(g, x)
        with pytest.raises(dgl.DGLError, match="0-in-degree"):
            model.inference(g, x, 2, "cpu")


def test_edge_weights_still_equal_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    """With edge weights (EdgeWeightNorm over the whole graph) GCN2Conv is traced into as
    before the helper: exact, its weights' norm computed once."""
    generated = _generated({}, monkeypatch, name="WeightedGCN2Stack")
    assert "_gcn2_conv_aggregate" not in generated.source
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"

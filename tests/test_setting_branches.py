"""Branches a written-out module's forward takes on its settings, shown where its code is
written (issue 37, render/setting_branches.py, lower/setting_tests.py): an `if` with no else is
kept as forward's test around its statements (`if self.layers[0]._bias:`), a branch between
whole bodies (a PairNorm's `mode`) is said in one line that names it and that check_built
refuses another setting, and an `if` this build skips is said where its body would be. Each
generated module equals its forward; another setting is refused at entry."""

from __future__ import annotations

import re

import dgl
import pytest
import torch

from gnn_codegen.verify.harness import import_source
from tests.cases import REPO
from tests.generated_text import generated_and_checked, inference_method

MODELS = "tests/models/setting_branches.py"
INIT = '{"in_size": 8, "hid_size": 6, "out_size": 3}'


def _generated(name: str, monkeypatch: pytest.MonkeyPatch):
    return generated_and_checked(MODELS, name, INIT, monkeypatch)


def _one_line(method: str) -> str:
    """The method with comments joined across their wrapped lines."""
    return re.sub(r"\n\s*# ", " ", method)


@pytest.mark.parametrize("name, branch", [
    ("NormedGCN", '`if self.mode == "PN":` branch'),
    ("ScaledIndividuallyGCN", '`elif self.mode == "PN-SI":` branch'),
    ("ScaledAndCentredGCN", '`else:` branch of `if self.mode == "PN":`'),
])
def test_a_branch_between_bodies_is_said_once(name: str, branch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    method = _one_line(inference_method(_generated(name, monkeypatch).source))
    said = f"ModeNorm.forward's {branch}, the one this build takes (check_built above refuses another mode)"
    assert method.count(said) == 1, method


def test_an_if_without_else_keeps_forward_test(monkeypatch: pytest.MonkeyPatch) -> None:
    method = inference_method(_generated("InitialResidualGCN", monkeypatch).source)
    assert re.search(r"if self\.layers\[(0|1|i)\]\._bias:  # as the module's forward tests it\n"
                     r"\s+(\w+) = \2 \+ self\.layers\[(0|1|i)\]\.bias\n", method), method
    assert re.search(r"if self\.layers\[(0|1|i)\]\._activation is not None:", method), method


def test_an_if_this_build_skips_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _one_line(inference_method(_generated("InitialResidualGCNWithoutBias", monkeypatch).source))
    assert ("MaybeBiased.forward's `if self._bias:` is false in this build, left out "
            "(check_built above refuses another _bias)") in method, method
    assert ".bias" not in method.replace("._bias", ""), method


def test_a_layer_activation_kept_under_its_test(monkeypatch: pytest.MonkeyPatch) -> None:
    method = inference_method(_generated("MLPThenGCN", monkeypatch).source)
    for i in (0, 1):  # the comment beside the test, or above it where the two are too long
        assert re.search(rf"# as the module's forward tests it\n\s+if self\.mlp\[{i}\]\.activation is not None:\n"
                         rf"\s+h = self\.mlp\[{i}\]\.activation\(h\)\n", method), method


def test_a_layer_without_its_activation_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last MLP layer holds None: its call is left out (its test reads a None, which the
    digest leaves out, so nothing is claimed of it); the first's is called."""
    method = inference_method(_generated("MLPWithoutLastActivationThenGCN", monkeypatch).source)
    assert "self.mlp[0].activation(h)" in method and "self.mlp[1].activation" not in method, method


def test_another_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generated("NormedGCN", monkeypatch)
    module = import_source(generated.source, REPO / "tests" / "models", "setting_branches_generated")
    g = dgl.add_self_loop(dgl.rand_graph(40, 160))
    x = torch.randn(40, 8)
    model = module.NormedGCN(8, 6, 3).eval()
    assert torch.allclose(model.inference(g, x, batch_size=16, device="cpu"), model(g, x), atol=1e-5)
    model.norm.mode = "PN-SI"
    with pytest.raises(ValueError, match="built differently"):
        model.inference(g, x, batch_size=16, device="cpu")


def test_only_tests_of_settings_count() -> None:
    """Tests of arguments (`edge_weight is None`) and of caches the digest leaves out (SGConv's
    `_cached_h`) are no settings: nothing is said of them."""
    from gnn_codegen.ir import Op
    from gnn_codegen.lower.setting_tests import setting_branches
    sgc = torch.nn.Module()
    sgc.net = dgl.nn.SGConv(4, 2, k=2)
    path = dgl.nn.SGConv.forward.__code__.co_filename
    lines = open(path).read().splitlines()
    at = next(i + 1 for i, text in enumerate(lines) if "feat = self._cached_h" in text)
    op = Op("x", "function", library_line=f"{path}:{at} (`feat = self._cached_h`)", module_call=("self.net", "SGConv"))
    assert setting_branches(sgc, (op,)) == ()


@pytest.mark.parametrize("example, said", [
    ("gcn_pairnorm", "PairNorm.forward's `if self.mode == \"PN\":` branch, the one this build takes"),
    ("sgc", "SGConv.forward's `if self.norm is not None:` and `if self._cached:` are false in this build"),
    ("dagnn", "if self.mlp[0].activation:  # as the module's forward tests it"),
    ("tagcn", "if self.layers[i]._activation is not None:"),  # TAGConv's own test, not `if ...:`
])
def test_the_goldens_show_their_branches(example: str, said: str) -> None:
    method = _one_line(inference_method((REPO / "generated_examples" / example / "generated.py").read_text()))
    assert said in method, method

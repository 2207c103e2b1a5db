"""Stacks of DGL's multi-hop modules as a reviewer reads them (issue 37: chebnet, tagcn, sgc):
a stack in the user's loop whose last layer stores its result alone (no next layer's source
rows) is one loop all the same (render/fewer_stored.py), an activation the last layer's module
lacks is tested as the module's forward tests it (render/activation_test.py), a module's own
loop of two hops is a loop over its count (SGConv's `self.net._k`), a factor applied twice
says why (render/normed_twice.py), and layers alike by chance, written out one by one, stay
apart. Each exact."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODELS = "tests/models/hop_loops.py"


def _generated(name: str, init: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:{name}", GenerateOptions(init=init))
    result = check(generated, num_nodes=61, seed=3, batch_sizes=(1, 17, 61))
    assert result.ok, f"max |difference| {result.max_abs_diff}"
    return generated


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _functions(method: str) -> list[str]:
    return re.findall(r"^ *def (\w+)\(", method, re.M)[1:]  # inference's own left out


@pytest.mark.parametrize("layers", [3, 4])
def test_a_chebconv_stack_whose_last_layer_stores_its_result_alone_is_one_loop(
        layers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    init = f'{{"in_size": 6, "hid_size": 5, "out_size": 3, "n_layers": {layers}}}'
    method = _method(_generated("ChebStack", init, monkeypatch).source)
    assert _functions(method) == ["prologue", "layer_i"], method
    assert "for i in range(len(self.layers)):" in method, method
    # the others store the next layer's source rows too; the last its result alone
    assert "h, h_src = batches.map(" in method, method  # the last returns `h, None` (fewer_stored.py)
    assert "return h, None" in method, method
    assert "return batches.result(h, nodes=nodes)" in method, method


def test_an_activation_the_last_layer_lacks_is_tested_as_its_forward_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """ChebConv tests `if self.activation:`; the last layer is built with None."""
    method = _method(_generated("ChebStack", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch).source)
    tested = method.index("if self.layers[i].activation:\n")
    assert "h = self.layers[i].activation(h)" in method[tested:], method
    assert tested < method.index("if i == len(self.layers) - 1:"), method  # before the last layer's return
    assert method.count(".activation(") == 1, method


def test_an_activation_every_layer_has_is_tested_as_the_modules_forward_tests_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reviewer (issue 37): an activation called unconditionally where ChebConv's forward
    tests `if self.activation:` reads as a bug; the loop tests it too (activation_test.py)."""
    init = '{"in_size": 6, "hid_size": 5, "out_size": 3, "last_activation": true}'
    method = _method(_generated("ChebStack", init, monkeypatch).source)
    assert _functions(method) == ["prologue", "layer_i"], method
    tested = method.index("if self.layers[i].activation:  # as the module's forward tests it\n")
    assert method.index("h = self.layers[i].activation(h)") > tested, method
    assert method.index("h = self.layers[i].activation(h)") < method.index("if i == len(self.layers) - 1:"), method


def test_a_tagconv_stack_is_one_loop_testing_its_activation(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method(_generated("TagStack", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch).source)
    assert _functions(method) == ["prologue", "layer_i"], method
    assert "if self.layers[i]._activation is not None:\n" in method and "the last layer has no activation" in method, method
    assert "h, h_src = batches.map(" in method and "return rst, None" in method, method


def test_layers_alike_by_chance_written_out_one_by_one_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method(_generated("TwoChebsWrittenOut", '{"in_size": 6, "hid_size": 5, "out_size": 3}',
                                monkeypatch).source)
    assert _functions(method) == ["prologue", "layer_1", "layer_2", "layer_3"], method
    assert not re.search(r"^ *for \w+ in ", method, re.M), method


def test_sgconvs_two_hops_are_a_loop_over_its_count(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method(_generated("SGCHops", '{"in_size": 6, "hid_size": 5, "out_size": 3}', monkeypatch).source)
    assert _functions(method) == ["prologue", "layer_k"], method
    assert "for k in range(1, self.net._k + 1):" in method and "if k == self.net._k:" in method, method
    assert "needed = batches.needed(nodes, layers=self.net._k)" in method, method
    # the hop's norm of its result, then the next hop's of its sources: said, not a slip
    said = method.index("# `* norm` again, not a slip")
    assert method.index("h = h * norm") < said < method.index("return h * norm"), method


def test_the_sgc_tagcn_and_appnp_goldens() -> None:
    examples = REPO / "generated_examples"
    sgc = _method((examples / "sgc" / "generated.py").read_text())
    assert "for k in range(1, self.net._k + 1):" in sgc and "# `* norm` again" in sgc, sgc
    tagcn = _method((examples / "tagcn" / "generated.py").read_text())
    # the last TAGConv is built without its activation: in the loop over the TAGConvs
    # (period_loops.py), tested as TAGConv's forward tests it, before the last layer returns
    said = tagcn.index("# as the layer's forward tests it: the last layer has no activation")
    assert (tagcn.index("def hop_2(") < said < tagcn.index("if self.layers[i]._activation is not None:")
            < tagcn.index("if i == len(self.layers) - 1:")), tagcn
    appnp = _method((examples / "appnp" / "generated.py").read_text())
    assert "needed = batches.needed(nodes, layers=self.propagate._k)" in appnp, appnp

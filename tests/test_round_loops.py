"""A loop over the user's layers whose rounds hold passes over all nodes (PairNorm's means
between two layers) is one loop of the method (issue 37, render/round_loops.py): each round's
layer, its `pair_norm(h)` call and the pass before the next layer written once, `nodes=` in
the last round alone, the last layer after the loop; rounds that differ (another
normalisation between two of the layers) stay apart. The names of the loop are proven to read
what the rounds read (render/name_resolution.py)."""

from __future__ import annotations

import ast
import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.name_resolution import reads_alike, resolution
from tests.cases import REPO
from tests.subset_runs import assert_nodes_and_changed_rows

MODELS = "tests/models/global_norms.py"


def _generated(name: str, monkeypatch: pytest.MonkeyPatch, init: str = "{}"):
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:{name}", GenerateOptions(init=init))
    assert generated.verification is not None and generated.verification.ok  # equals forward
    return generated


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _loop_closures(method: str) -> list[tuple[str, str]]:
    """(function, name): a function made in a loop of inference that reads a name the loop
    binds other than through a parameter of its own (flake8-bugbear's B023)."""
    tree = ast.parse("class C:\n" + method)
    found = []
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        bound = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        bound |= {n.name for n in ast.walk(loop) if isinstance(n, ast.FunctionDef)}
        for inner in (n for n in ast.walk(loop) if isinstance(n, ast.FunctionDef)):
            own = {a.arg for a in inner.args.args} | {n.id for n in ast.walk(inner)
                                                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            read = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            found += [(inner.name, name) for name in sorted((read & bound) - own)]
    return found


@pytest.mark.parametrize("layers", [2, 3, 4])
def test_a_pairnorm_stack_is_one_loop_over_its_layers(layers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method(_generated("DeepPairNormGCN", monkeypatch, f'{{"n_layers": {layers}}}').source)
    assert method.count("for i in range(len(self.layers) - 1):") == 1, method
    assert "needed = batches.needed(nodes, layers=len(self.layers))" in method, method
    # one layer function in the loop, the last layer after it; no layer's counters in names
    assert method.count("def layer_i(block, feat, i=i):") == 1 and f"def layer_{layers}(block, feat):" in method
    assert not re.search(r"\b(layer_1|h1|feat0|feat1|x1|before_layer_\d)\b", method), method
    assert "self.layers[i]" in method and "self.layers[i + 1]" in method, method
    if layers > 2:  # PairNorm's passes are pair_norm's (module_functions.py), called in every round
        assert method.count("def pair_norm(h):") == 1 and method.count("pair_norm(h)\n") == 1, method
        # nodes= in the last round alone: the passes before compute every node for the means
        assert "nodes=needed[i + 1] if i == len(self.layers) - 2 else None" in method, method
        assert "# nodes= in the last round alone" in method, method
    else:  # one round: nodes= as it is
        assert "nodes=needed[i + 1]\n" in method or "nodes=needed[i + 1])" in method, method
    # what the loop binds, its functions read through their own parameters
    assert _loop_closures(method) == [], method
    # out_degrees, read in every round, is freed after the loop
    assert re.search(r"\n        del out_degrees\n", method), method


def test_one_mean_over_all_nodes_per_round_is_a_loop_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """PairNorm's PN-SI: a column mean per round, then one pass (no module function)."""
    method = _method(_generated("DeepPairNormGCN", monkeypatch, '{"norm_mode": "PN-SI"}').source)
    assert method.count("for i in range(len(self.layers) - 1):") == 1, method
    assert method.count("col_mean = batches.sum_nodes(h) / h.shape[0]") == 1, method
    assert _loop_closures(method) == [], method


@pytest.mark.parametrize("name", ["TwoGlobalNorms", "NormOfTwoWidths"])
def test_rounds_with_another_normalisation_stay_apart(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PairNorm, then GraphCentre, between alternate layers; or a norm whose two calls run
    other code: no two rounds alike, no loop."""
    method = _method(_generated(name, monkeypatch).source)
    assert "for i in" not in method and "layer_i" not in method, method
    assert "def layer_3(" in method, method


@pytest.mark.parametrize("layers", [2, 3, 4])
def test_the_loop_gives_forwards_rows_for_nodes_and_changed(layers: int, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path) -> None:
    generated = _generated("DeepPairNormGCN", monkeypatch, f'{{"n_layers": {layers}}}')
    assert_nodes_and_changed_rows(generated, tmp_path)


def test_the_golden_is_one_loop() -> None:
    method = _method((REPO / "generated_examples" / "gcn_pairnorm" / "generated.py").read_text())
    assert method.count("for i in range(len(self.layers) - 1):") == 1
    assert "x, rownorm_mean = pair_norm(h)" in method and "def before_next_layer(" in method, method


# --- the proof that renamed code reads what it read -------------------------------------------

def test_renamed_code_that_reads_another_binding_is_told_apart() -> None:
    code = "h1 = f(feat0)\ndef g(x1):\n    x = x1 + 1\n    return x\nfeat1 = g(h1)"
    names = {"h1": "h", "feat0": "feat", "x1": "x", "feat1": "feat"}
    renamed = "h = f(feat)\ndef g(x):\n    x = x + 1\n    return x\nfeat = g(h)"
    assert reads_alike(code, renamed, names)
    # a parameter renamed to a local the function reads before it: another binding
    captured = "def g(x1):\n    y = x\n    x = x1\n    return y\n"
    assert not reads_alike("x = 1\n" + captured, "x = 1\n" + captured.replace("x1", "x"), {"x1": "x"})
    # two values alive at once under one name
    both = "a1 = f()\nb1 = f()\nc = a1 + b1"
    assert not reads_alike(both, "a = f()\na = f()\nc = a + a", {"a1": "a", "b1": "a"})
    # a name read from around a function made in the loop
    resolved = resolution("m = f()\ndef g(x):\n    return x / m\ny = g(1)")
    assert resolved is not None and resolved.functions_free["g"] == ["m"] and resolved.free == ["f"]


def test_rounds_of_modules_written_out_one_by_one_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """CentredGCN's `self.conv2`, `self.conv3`: attributes, not names of the rounds' values."""
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/dgl_idioms.py:CentredGCN",
                             GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'))
    assert generated.verification is not None and generated.verification.ok
    assert "for i in" not in _method(generated.source)

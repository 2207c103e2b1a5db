"""A user's module whose call spans several passes (its means over all nodes), alike in every
call, is written once as a local function named for it and called where forward calls it
(issue 37, render/module_functions.py); calls that differ stay apart."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render import method as render_method
from gnn_codegen.render.layer import LayerFunction
from gnn_codegen.render.module_functions import canonical, Call, function_name, plain
from gnn_codegen.render.value_names import uncounted
from tests.cases import REPO

MODELS = "tests/models/global_norms.py"


def _method(name: str, monkeypatch: pytest.MonkeyPatch, init: str = "{}") -> str:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:{name}", GenerateOptions(init=init))
    assert generated.verification is not None and generated.verification.ok  # equals forward
    source = generated.source
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


@pytest.mark.parametrize("layers", [3, 4])
def test_pairnorm_between_every_two_layers_is_one_function_called_once_per_gap(
        layers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # the calls as the method writes them before its rounds are one loop (tests/test_round_loops.py)
    monkeypatch.setattr(render_method, "fold_rounds", lambda r, stages, runs: stages)
    method = _method("DeepPairNormGCN", monkeypatch, f'{{"n_layers": {layers}}}')
    assert method.count("def pair_norm(h):") == 1, method
    calls = re.findall(r"\n\s*(\w+), rownorm_mean = pair_norm\((h\d)\)\n", method)
    assert [h for _, h in calls] == [f"h{k}" for k in range(1, layers)], method
    # its values keep the module's names, no counters; its passes are no copies of each other
    for counted in ("col_mean_2", "rownorm_mean_2", "rownorm_mean_terms2", "_pass_2"):
        assert counted not in method, method
    assert method.count("batches.sum_nodes(") == 2, method
    # the pass after each call finishes the module's last line, where nodes= starts at the last
    assert [f"before_layer_{k}" in method for k in range(2, layers + 1)] == [True] * (layers - 1)
    assert "since pair_norm's means over all nodes read every node's rows" in " ".join(method.split())


def test_pairnorm_scaling_each_row_by_its_own_norm_has_one_pass_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """PN-SI reads one mean over all nodes: a reduction and one pass, nothing to fold; the
    second column mean takes the first's name back, dead by then (value_names.py)."""
    monkeypatch.setattr(render_method, "fold_rounds", lambda r, stages, runs: stages)  # not one loop yet
    method = _method("DeepPairNormGCN", monkeypatch, '{"norm_mode": "PN-SI"}')
    assert "def pair_norm" not in method and method.count("batches.sum_nodes(") == 2, method
    assert "col_mean_2" not in method and method.count("col_mean = batches.sum_nodes(h") == 2, method


def _stage(before: list[str], body: list[str], after: list[str]) -> dict:
    return {"before": before, "comment": [], "after": after, "function": LayerFunction("f", ["h"], body)}


def test_a_counted_value_keeps_its_counter_where_its_base_is_read_after_it() -> None:
    dead = [_stage(["m = batches.sum_nodes(h1)"], ["return h - m"], ["a = batches.map_nodes(f, h1)"]),
            _stage(["m_2 = batches.sum_nodes(h2)"], ["return h - m_2"], ["b = batches.map_nodes(f, h2)"])]
    uncounted(dead, set())
    assert dead[1]["before"] == ["m = batches.sum_nodes(h2)"] and dead[1]["function"].body == ["return h - m"]
    live = [_stage(["m = batches.sum_nodes(h1)"], ["return h - m"], ["a = batches.map_nodes(f, h1)"]),
            _stage(["m_2 = batches.sum_nodes(h2)"], ["return h - m_2 + m"], ["b = batches.map_nodes(f, h2)"])]
    uncounted(live, set())
    assert live[1]["before"] == ["m_2 = batches.sum_nodes(h2)"], live
    # a pass whose own local takes the base's name, reading the counted value: kept apart
    hidden = [_stage(["m_2 = batches.sum_nodes(h2)"], ["m = h * 2", "return m - m_2"], ["b = batches.map_nodes(f, h2)"])]
    uncounted(hidden, set())
    assert hidden[0]["before"] == ["m_2 = batches.sum_nodes(h2)"], hidden


def test_two_modules_with_means_over_all_nodes_are_a_function_each(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method("TwoGlobalNorms", monkeypatch)
    assert method.count("def pair_norm(h):") == 1 and method.count("def graph_centre(h):") == 1, method
    assert len(re.findall(r"= pair_norm\(h[13]\)\n", method)) == 2, method
    assert len(re.findall(r"= graph_centre\(h[24]\)\n", method)) == 2, method


def test_calls_whose_passes_differ_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module takes absolute values of rows wider than 8 alone: its two calls differ."""
    method = _method("NormOfTwoWidths", monkeypatch)
    assert "width_dependent_norm" not in method and "def before_layer_3_pass_2(" in method, method


def test_names_and_calls_compared() -> None:
    assert function_name("PairNorm") == "pair_norm" and function_name("GraphCentre") == "graph_centre"
    assert [plain(n) for n in ("col_mean_2", "x1", "rownorm_mean_terms2_mean")] == [
        "col_mean", "x", "rownorm_mean_terms_mean"]
    one = Call([1, 2], ["m = batches.sum_nodes(h1) / h1.shape[0]"], [], {})
    two = Call([4, 5], ["m_2 = batches.sum_nodes(h2) / h2.shape[0]"], [], {})
    other = Call([4, 5], ["m_2 = batches.sum_nodes(h2) / h2.shape[1]"], [], {})
    assert canonical([one, two], set()) == ([{"m": "m", "h1": "h"}, {"m_2": "m", "h2": "h"}], ["h"])
    assert canonical([one, other], set()) is None
    # a pass whose own local would hide the function's value: not folded
    hiding = Call([1, 2], ["c_1 = batches.sum_nodes(h1)", "def f(h1):", "    c = h1 - c_1", "    return c"], [], {})
    hiding2 = Call([4, 5], ["c_2 = batches.sum_nodes(h2)", "def g(h2):", "    c = h2 - c_2", "    return c"], [], {})
    assert canonical([hiding, hiding2], set()) is None

"""A line of the user's that reads a value over all nodes after computing something per node
(PairNorm's `x = self.scale * x / rownorm_mean`) runs in two stages: its first part where the
rows are, its rest in the pass after the mean over all nodes. The generated code keeps the
line's order (`self.scale * x` first, then the division), and the pass that finishes it says
so, so that a reviewer need not re-derive the equivalence (issue 37, render/method_doc.py)."""

from __future__ import annotations

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.cases import REPO
from tests.test_user_layers import _comments


@pytest.mark.parametrize("norm, sentences", [
    # two means over all nodes: the division in the pass after the second, per layer
    ("PairNorm", [f"PairNorm's `return self.scale * x / rownorm_mean` needs rownorm_mean over all nodes: the "
                  f"part that reads none ran in {where}, the rest runs here." for where in (
                      "pair_norm (hidden1)", "pair_norm (hidden2)", "pair_norm (hidden3)")]),
    # one mean over all nodes, of what the layer stored: the division in the pass after it
    ("MeanAbsNorm", [f"MeanAbsNorm's `return self.scale * x / x.abs().mean()` needs h{k}_mean over all nodes: "
                     f"the part that reads none ran in layer {k} (hidden{k}), the rest runs here." for k in (1, 2, 3)]),
])
def test_a_users_norm_after_each_of_three_layers_says_where_its_line_is_split(
        norm: str, sentences: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    source = generate_all("tests/models/user_layers.py:NormAfterEachLayer",
                          GenerateOptions(init=f'{{"norm": "{norm}"}}')).source  # checked exact
    said = [c for c in _comments(source) if "the rest runs here" in c]
    assert [c[c.index(norm):] for c in said] == sentences, said


def test_the_pairnorm_golden_says_where_its_line_is_split() -> None:
    source = (REPO / "generated_examples" / "gcn_pairnorm" / "generated.py").read_text()
    said = [c for c in _comments(source) if "the rest runs here" in c]
    # once: the layers before the last are one loop (render/round_loops.py)
    assert len(said) == 1 and all(c.startswith("Before layer i + 2") and "`x = self.scale * x / rownorm_mean`" in c
                                  and "ran in pair_norm" in c for c in said), said

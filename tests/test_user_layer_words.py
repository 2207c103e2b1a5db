"""The passes of user's layers that each run a convolution per graph they derive (HAN's layers,
a GAT per metapath graph), written out one by one, are named for the user's layers, not counted
(issue 37, render/user_layer_words.py): `def layer0_pa_ap`, not `def layer_1`; the pass between
two such layers `before_layer1`, "Before self.layers[1], once per node, from what
self.layers[0] stored.", not `before_layer_3`, "Before layer 3, ... from what layer 2 stored.",
which count (layer, metapath) passes; a value over all nodes says which user's layer's pass
reads it."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.cases import REPO

METAPATHS = ("pa_ap", "pf_fp", "pv_vp")


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _said(method: str) -> str:
    """The method's comments as one text, their wrapped lines joined."""
    return " ".join(line.strip().removeprefix("# ") for line in method.splitlines() if line.strip().startswith("#"))


def _assert_named_for_the_users_layers(method: str, layers: int, metapaths: tuple[str, ...]) -> None:
    defined = re.findall(r"def (\w+)\(", method)
    assert [d for d in defined if re.fullmatch(r"layer\d_\w+", d)] == [
        f"layer{i}_{m}" for i in range(layers) for m in metapaths], defined
    assert [d for d in defined if d.startswith("before_layer")] == [f"before_layer{i}" for i in range(1, layers)]
    assert not re.search(r"def (layer|before_layer)_\d", method), method
    said = _said(method)
    for i in range(1, layers):
        assert f"Before self.layers[{i}], once per node, from what self.layers[{i - 1}] stored." in said, said
        assert f"which the pass before self.layers[{i}] reads" in said, said
    assert not re.search(r"(Before|before) layer \d", said), said


def test_a_third_party_han_of_three_layers_and_metapaths_names_its_passes_for_its_layers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Metapath graphs made in forward's own loop, three of them, three layers: checked exact
    by generate_all, and each pass named for its layer and metapath."""
    monkeypatch.chdir(REPO)
    source = generate_all("tests/models/metapath_layers.py:ThreeMetapathHAN", GenerateOptions()).source
    _assert_named_for_the_users_layers(_method(source), 3, METAPATHS)


def test_the_han_golden_names_its_passes_for_its_layers() -> None:
    han = _method((REPO / "generated_examples" / "han" / "generated.py").read_text())
    _assert_named_for_the_users_layers(han, 2, METAPATHS[:2])

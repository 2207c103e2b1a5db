"""A layer's comment names the module and hop it computes (issue 37, lower/hops.py): a k-hop
module traced into leaves one update_all per hop, and each is a layer of the generated
inference, labelled "self.layers[0] (TAGConv), hop 2 of 2", not by its update_all alone."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.cases import REPO


def _labels(source: str) -> list[str]:
    """The layers' comments, each on one line."""
    method = source[source.index("    def inference("):source.index("# --- gnn-codegen ")]
    blocks, current = [], []
    for line in method.splitlines() + [""]:
        if line.strip().startswith("# "):
            current.append(line.strip()[2:])
        elif current:
            blocks.append(" ".join(current))  # a comment's wrapped lines as one
            current = []
    return [block for block in blocks if re.match(r"Layers? \d", block)]


def test_a_users_module_of_two_rounds_names_each_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/module_constants.py:TeleportNet",
                             GenerateOptions(init='{"in_size": 8, "out_size": 4, "alpha": 0.25}'))
    assert _labels(generated.source) == ["Layer 1 of 2: self.prop (Teleport), hop 1 of 2.",
                                         "Layer 2 of 2: self.prop (Teleport), hop 2 of 2."]


def test_forwards_own_update_all_keeps_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/widths.py:NormMovedToFeatures",
                             GenerateOptions(init='{"in_size": 8, "out_size": 3}'))
    assert _labels(generated.source) == ["Layer 1 of 1: g.update_all (copy_u, sum)."]


@pytest.mark.parametrize("example, label", [
    # one loop over the user's layers, a function per hop in it (period_loops.py)
    ("tagcn", "Layers 1 to 4 of 4, 2 per TAGConv (a layer per hop): self.layers[0] to self.layers[1]"),
    ("chebnet", "Layers 1 to 4 of 4, 2 per ChebConv (a layer per hop): self.layers[0] to self.layers[1]"),
    ("appnp", "Layers 1 to 10 of 10, each the same function of the layer before: self.propagate "
              "(APPNPConv), hops 1 to 10 of 10."),
    ("gcnii", "Layers 1 to 8 of 8, each the same function of the layer before with its own module, "
              "[i] of the loop below: self.convs[0] (GCN2Conv) to self.convs[7] (GCN2Conv)."),
])
def test_the_goldens_name_the_module_and_hop_of_each_layer(example: str, label: str) -> None:
    assert any(label in said for said in _labels((REPO / "generated_examples" / example / "generated.py").read_text()))

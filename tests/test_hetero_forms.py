"""Heterogeneous models in the forms people write (issue 35, mechanisms 1, 2 and 8): each
generated and compared with forward on random heterographs (tests/test_hetero.py's checks)."""

from __future__ import annotations

import json

import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.test_hetero import GAME_RELATIONS, GAMES, _check_everywhere

MODELS = "tests/models/hetero_forms.py"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cases import REPO

    monkeypatch.chdir(REPO)


def test_features_defaulting_to_none_after_a_flag_are_an_input() -> None:
    """forward(self, graph, return_hidden=False, feats=None, **unused): traced at None, the
    HeteroGraphConv is given None; feats is the input its callers always give."""
    generated = generate_all(f"{MODELS}:OptionalFeaturesRGCN", GenerateOptions(
        init=json.dumps({"in_size": 5, "hid_size": 6, "out_size": 3, "rel_names": GAME_RELATIONS}),
        metagraph=GAMES))
    assert "def inference(\n        self,\n        graph,\n        feats,\n" in generated.source
    _check_everywhere(generated)

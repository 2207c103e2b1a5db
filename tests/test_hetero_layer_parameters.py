"""A heterogeneous layer function takes `ntype` only where its body reads the type's name (one
function for every type, `self.proj[ntype]`); one that reads no type's name does not list an
unused parameter a reviewer looks for a use of (issue 37): the runtime passes ntype= only to a
function that takes it. Each exact."""

from __future__ import annotations

import json
import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.hetero import check_hetero
from tests.cases import REPO

GAMES = "user:follows:user,user:plays:game,game:played_by:user"
RELATIONS = ["follows", "plays", "played_by"]
_DEF = re.compile(r"^ *def (layer_\w+)\(([^)]*)\):\n((?:(?: {12}.*)?\n)*)", re.M)


@pytest.mark.parametrize("name, init", [
    ("WeightedRGCN", {"in_size": 5, "hid_size": 6, "out_size": 3, "rel_names": RELATIONS}),
    ("ProjectedGraphConv", {"in_sizes": {"user": 5, "game": 7}, "hid_size": 8, "out_size": 3,
                            "rel_names": RELATIONS}),
])
def test_a_layer_takes_ntype_only_where_it_reads_it(name: str, init: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    feat_dims = "user=5,game=7" if name == "ProjectedGraphConv" else None
    generated = generate_all(f"tests/models/hetero.py:{name}",
                             GenerateOptions(init=json.dumps(init), metagraph=GAMES, feat_dims=feat_dims))
    method = generated.source[generated.source.index("    def inference("):generated.source.index("# --- gnn-codegen")]
    functions = _DEF.findall(method)
    assert functions, method
    for function, params, body in functions:
        takes = "ntype" in [p.strip() for p in params.split(",")]
        assert takes == bool(re.search(r"\bntype\b", body)), (function, params, body)
    assert check_hetero(generated, 120, seed=1).ok


def test_the_goldens_layers_take_no_unused_ntype() -> None:
    for example in ("entity_classify", "rgat", "rgcn_hetero"):
        method = (REPO / "generated_examples" / example / "generated.py").read_text()
        for function, params, body in _DEF.findall(method):
            if "ntype" in [p.strip() for p in params.split(",")]:
                assert re.search(r"\bntype\b", body), (example, function)

"""The helpers' search for relations whose weights are combinations of the others'
(_find_weight_basis) is written into a module only where the model's relations are given such
weights when it is generated (render/relation_weights.py): DGL's rgcn-hetero with fewer bases
than relations keeps it; a weight per relation (entity_classify) is the plain product. Either
module equals forward (the generator's check), and so do the plain helpers on weights that
became combinations after generation."""

from __future__ import annotations

import json

import pytest
import torch

from gnn_codegen.hetero_pipeline import _written_basis_search
from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph
from gnn_codegen.verify.harness import import_source
from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.cases import REPO

MODELS = "tests/models/hetero.py"
GAMES = "user:follows:user,user:plays:game,game:played_by:user"
GAME_RELATIONS = ["follows", "plays", "played_by"]


def _generated(num_bases: int):
    init = {"in_size": 5, "hid_size": 8, "out_size": 3, "rel_names": GAME_RELATIONS, "num_bases": num_bases}
    return generate_all(f"{MODELS}:BasisRGCN", GenerateOptions(init=json.dumps(init), metagraph=GAMES))


def test_a_basis_decomposition_keeps_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """One basis: follows' and played_by's weights, both into user, are multiples of one."""
    monkeypatch.chdir(REPO)
    generated = _generated(1)
    assert generated.verification is not None and generated.verification.ok
    assert "def _find_weight_basis(" in generated.source and "def _once_for(" in generated.source
    assert "found = _once_for(tuple(weights), _find_weight_basis)" in generated.source


@pytest.mark.parametrize("num_bases", [2, 3])
def test_a_weight_per_relation_is_the_plain_product(num_bases: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """num_bases as many as the relations: each relation its own weight, none a combination.
    Two bases for three relations: the helper sums the relations into one type at a time, and
    the two into user (follows, played_by) are two independent mixes of the two bases, so
    the search would find nothing there either."""
    monkeypatch.chdir(REPO)
    generated = _generated(num_bases)
    assert generated.verification is not None and generated.verification.ok
    assert "def _relations_product(" in generated.source
    assert "_find_weight_basis" not in generated.source and "_once_for" not in generated.source


def test_entity_classify_is_the_plain_product() -> None:
    source = (REPO / "generated_examples" / "entity_classify" / "generated.py").read_text()
    assert "def _relations_product(" in source and "_find_weight_basis" not in source


def test_the_generator_asks_the_written_search() -> None:
    """The search the generator runs is the module's own: a shared weight, a combination, and
    independent weights."""
    find = _written_basis_search()
    first, second = torch.randn(4, 6), torch.randn(4, 6)
    assert find([first, second, first.clone()]) is not None
    assert find([first, second, 0.5 * first - 2 * second]) is not None
    assert find([first, second, torch.randn(4, 6)]) is None


def test_without_the_search_no_weight_basis_is_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model generated without the search whose weights become combinations later (trained so,
    or a state_dict loaded) still equals forward: every relation's weight is applied as given."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:BasisRGCN", GenerateOptions(
        init=json.dumps({"in_size": 5, "hid_size": 8, "out_size": 3, "rel_names": GAME_RELATIONS,
                         "num_bases": 3}), metagraph=GAMES, verify=False))
    module = import_source(generated.source, REPO / "tests" / "models", "basis_rgcn_plain")
    model = module.BasisRGCN(5, 8, 3, GAME_RELATIONS, num_bases=3).eval()
    with torch.no_grad():
        for layer in model.layers[1:]:
            layer.weight[2] = layer.weight[0] - 0.5 * layer.weight[1]  # now a combination
    g = random_heterograph(parse_metagraph(GAMES), {"user": 90, "game": 50}, seed=3)
    x = {"user": torch.randn(90, 5), "game": torch.randn(50, 5)}
    with torch.no_grad():
        expected = model(g, x)
        actual = model.inference(g, x, batch_size=16, device="cpu")
    for t in expected:
        assert torch.allclose(actual[t], expected[t], atol=1e-5), t


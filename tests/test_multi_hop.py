"""Multi-hop modules (tests/models/multi_hop.py): each round of DGL's APPNPConv, SGConv,
GCN2Conv and GatedGraphConv is one layer of the generated inference, equal to forward on graphs
with and without nodes lacking in-edges, for batch sizes that do and do not divide N."""

from __future__ import annotations

import pytest

from gnn_codegen.explain import explain_data, explain_text
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify import check
from tests.cases import REPO

MODEL = "tests/models/multi_hop.py"

# model -> (options, layers of the generated inference: one per round)
CASES = {
    "NodeSelectionGGNN": (GenerateOptions(init='{"annotation_size": 3, "out_feats": 6}', feat_dims="annotation=3"), 4),
    "SampledAPPNP": (GenerateOptions(init='{"in_size": 8, "hid_size": 12, "out_size": 4}'), 3),
    "ShallowGCNII": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 3),
    "SGCThenAPPNP": (GenerateOptions(init='{"in_size": 8, "out_size": 4}'), 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_round_is_a_layer_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    options, rounds = CASES[name]
    generated = generate_all(f"{MODEL}:{name}", options)
    assert generated.plan.cut.placement.optimal
    assert f"# Layer {rounds} of {rounds}:" in generated.source
    assert f"\nLayer {rounds} of {rounds}\n" in explain_text(explain_data(generated))  # --explain shows the rounds
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"

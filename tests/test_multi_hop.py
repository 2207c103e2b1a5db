"""Multi-hop modules (tests/models/multi_hop.py): each round of DGL's APPNPConv, SGConv, TAGConv,
ChebConv, GCN2Conv and GatedGraphConv (with EdgeWeightNorm's weights, too) is one layer of the generated inference, equal to forward on graphs
with and without nodes lacking in-edges, for batch sizes that do and do not divide N."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.explain.plan_text import explain_data, explain_text
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/multi_hop.py"

# model -> (options, layers of the generated inference: one per round)
CASES = {
    "NodeSelectionGGNN": (GenerateOptions(init='{"annotation_size": 3, "out_feats": 6}', feat_dims="annotation=3"), 4),
    "SampledAPPNP": (GenerateOptions(init='{"in_size": 8, "hid_size": 12, "out_size": 4}'), 3),
    "ShallowGCNII": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 3),
    "SGCThenAPPNP": (GenerateOptions(init='{"in_size": 8, "out_size": 4}'), 4),
    # edge weights normalised on the whole graph by DGL's EdgeWeightNorm, inside the module or
    # the model's own
    "WeightedAPPNP": (GenerateOptions(init='{"in_size": 8, "hid_size": 12, "out_size": 4}'), 4),
    "WeightedSGC": (GenerateOptions(init='{"in_size": 8, "out_size": 4}'), 2),
    "WeightedGCNII": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 3),
    "WeightedTAGCN": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 4),
    "NormalisedWeightGCN": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 2),
    # DGL's default lambda_max of 2 per graph of the batch: generated for one graph
    "ChebNetDefaultLambda": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 2),
    # one module, its weights tied across rounds: the rounds are one function in a loop
    "TiedRoundsGCN": (GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3}'), 5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_round_is_a_layer_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    options, rounds = CASES[name]
    generated = generate_all(f"{MODEL}:{name}", options)
    assert generated.plan.cut.placement.optimal
    # the last round alone, or the end of a loop over identical rounds (layer_loops.py)
    assert re.search(rf"# Layers? (\d+ to )?{rounds} of {rounds}[:,]", generated.source)
    assert f"\nLayer {rounds} of {rounds}\n" in explain_text(explain_data(generated))  # --explain shows the rounds
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


@pytest.mark.parametrize("name,first,last,stop", [
    ("TiedRoundsGCN", 1, 5, "6"),  # its last round joins the loop (last_copies, fewer_stored)
    # APPNPConv's hops: the count the module holds (module_index.spelled_hops)
    ("WeightedAPPNP", 2, 4, "self.propagate._k + 1"),
])
def test_identical_rounds_are_one_function_in_a_loop(name: str, first: int, last: int, stop: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Three or more layers in a row that are the same function of the layer before are written
    once, with a loop over them (layer_loops.py), and stay exact for every node, for nodes= and
    out of core (the check runs all three)."""
    monkeypatch.chdir(REPO)
    options, rounds = CASES[name]
    generated = generate_all(f"{MODEL}:{name}", options)
    assert generated.source.count("def layer_k(") == 1
    assert f"for k in range({first}, {stop}):" in generated.source
    assert not any(f"def layer_{k}(" in generated.source for k in range(first, last + 1))
    # TiedRoundsGCN's last round ends otherwise (its result goes on to a Linear): joined under
    # `if k == 5:`, returning `self.out(h), None` (fewer_stored.py)
    result = check(generated, num_nodes=97, seed=3, batch_sizes=(1, 13, 97))
    assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_a_batch_of_graphs_is_refused_where_forward_reads_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """ChebConv without lambda_max reads g.batch_size: the generated method was made for one
    graph and says so for a batch, never computing something else."""
    import dgl
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source

    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:ChebNetDefaultLambda", CASES["ChebNetDefaultLambda"][0])
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    batch = dgl.batch([dgl.rand_graph(10, 30), dgl.rand_graph(12, 40)])
    with pytest.raises(ValueError, match="generated for one graph"):
        model.inference(batch, torch.randn(22, 8), batch_size=8, device="cpu")

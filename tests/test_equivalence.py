"""The generated `inference` of every case equals the model's full-graph forward, on seeded
random graphs (with zero-in-degree nodes where the model allows them), for batch sizes 1, 7,
one that does not divide N and one of at least N, with weights and BatchNorm statistics
perturbed away from their initial values."""

from __future__ import annotations

import pytest
import torch

from gnn_codegen.verify import (
    allclose, full_graph_forward, generated_model, import_source, make_inputs, max_difference,
    perturb, random_graph,
)
from tests.cases import Case, all_cases, generate_case

CASES = all_cases()
NUM_NODES = 301  # prime: no batch size below divides it


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_inference_equals_full_graph_forward(case: Case, seed: int) -> None:
    generated = generate_case(case)
    reference = generated.loaded.model
    perturb(reference, seed)
    reference.eval()
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = random_graph(NUM_NODES, seed=seed, zero_in_degree=True)
    inputs = make_inputs(generated, NUM_NODES, seed, g.num_edges())
    try:
        expected = full_graph_forward(reference, generated, g, inputs)
    except Exception as exc:  # the model itself refuses zero-in-degree nodes (GATConv's default)
        assert "in-degree" in str(exc)
        g = random_graph(NUM_NODES, seed=seed, zero_in_degree=False)
        inputs = make_inputs(generated, NUM_NODES, seed, g.num_edges())
        expected = full_graph_forward(reference, generated, g, inputs)
    for batch_size in (1, 7, 64, NUM_NODES, NUM_NODES + 50):
        actual = model.inference(g, *inputs, batch_size=batch_size, device="cpu")
        assert allclose(actual, expected, atol=1e-4, rtol=1e-4), (
            f"batch_size={batch_size}: max |difference| {max_difference(actual, expected)}"
        )


def test_perturb_changes_what_it_must() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    before = [t.clone() for t in model.state_dict().values() if t.is_floating_point()]
    perturb(model, 0)
    after = [t for t in model.state_dict().values() if t.is_floating_point()]
    assert all(not torch.equal(a, b) for a, b in zip(before, after))

"""One check for the tests of folded loops (tests/test_period_loops.py, tests/test_round_loops.py,
tests/test_third_party_settings.py): a loop's `needed[...]` must give forward's rows for nodes=
(one node, then twelve) and, after an update of the graph, changed= from kept layers must equal
a fresh run. The generated module runs with perturbed weights (perturb), on a random graph of
61 nodes without zero in-degrees."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    full_graph_forward,
    generated_model,
    import_source,
    make_inputs,
    max_difference,
    random_graph_for,
    rows_for,
    run_inference,
    some_nodes,
)
from tests.graph_updates import updated


def assert_nodes_and_changed_rows(generated, tmp_path: Path) -> None:
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 0)
    reference.eval()
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module, reference)
    num_nodes = 61
    g = random_graph_for(generated, num_nodes, seed=0, zero_in_degree=False)
    inputs = make_inputs(generated, num_nodes, 0, g.num_edges())
    expected = full_graph_forward(reference, generated, g, inputs)
    for count in (1, 12):
        nodes = some_nodes(num_nodes, count, seed=count)
        actual = run_inference(model, generated, g, inputs, batch_size=7, device="cpu", nodes=nodes)
        wanted = rows_for(generated, expected, nodes)
        assert allclose(flatten(actual), wanted, atol=1e-4, rtol=1e-4), max_difference(flatten(actual), wanted)
    storage = str(tmp_path / "storage")
    run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage, keep_layers=True)
    g, inputs, changed = updated(generated, g, inputs, seed=0)
    fresh = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
    actual = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage,
                           changed=changed)
    assert allclose(actual, fresh, atol=1e-4, rtol=1e-4), max_difference(actual, fresh)
    assert torch.is_tensor(flatten(actual)[0])

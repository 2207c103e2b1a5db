"""One check for the tests of folded loops (tests/test_period_loops.py, tests/test_round_loops.py):
a loop's `needed[...]` must give forward's rows for nodes= (one node, then twelve) and, after an
update of the graph, changed= from kept layers must equal a fresh run."""

from __future__ import annotations

from pathlib import Path

import torch

from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    full_graph_forward,
    max_difference,
    rows_for,
    run_inference,
    some_nodes,
)
from tests.graph_updates import updated


def assert_nodes_and_changed_rows(generated, model, reference, g, inputs, tmp_path: Path) -> None:
    expected = full_graph_forward(reference, generated, g, inputs)
    num_nodes = g.num_nodes()
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

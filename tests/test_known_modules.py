"""Each entry of the known-modules table, pinned against the full-graph forward: what the
table calls exact (or exact after the out-degree rescale) is exact on blocks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gnn_codegen.known_modules import EXACT
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify import check
from tests.cases import EXAMPLES

MODEL = Path(__file__).parent / "models" / "known_modules.py"
KINDS = [
    "GraphConv-both", "GraphConv-left", "GraphConv-right", "GraphConv-none",
    "SAGEConv-mean", "SAGEConv-gcn", "SAGEConv-pool", "SAGEConv-lstm",
    "GATConv", "GATv2Conv", "GINConv", "GINConv-mean-learn-eps", "DotGatConv", "EdgeConv",
]


@pytest.mark.parametrize("kind", KINDS)
def test_known_module_is_exact_on_blocks(kind: str) -> None:
    generated = generate_all(f"{MODEL}:TwoConvs", GenerateOptions(init=json.dumps({"kind": kind})))
    result = check(generated, num_nodes=211, batch_sizes=(1, 13, 211))
    assert result.ok, f"{kind}: max |difference| {result.max_abs_diff}"
    assert result.zero_in_degree_nodes > 0


def test_every_exact_entry_is_pinned() -> None:
    # GINEConv and EGATConv take edge features: generated_examples/edge_features pins them
    # (tests/test_equivalence.py).
    pinned = {k.split("-")[0] for k in KINDS} | {"GINEConv", "EGATConv"}
    assert EXACT <= pinned
    assert "GINEConv" in (EXAMPLES / "edge_features" / "model.py").read_text()
    assert "EGATConv" in (EXAMPLES / "edge_features" / "model.py").read_text()


def test_graphconv_both_needs_the_rescale() -> None:
    """Without the out-degree rescale, a naive layer-wise GraphConv loop is wrong by units."""
    generated = generate_all(f"{MODEL}:TwoConvs", GenerateOptions(init='{"kind": "GraphConv-both"}'))
    assert "_rescale_to_full_out_degrees(h, block, out_degrees[input_nodes], 0.5)" in generated.source
    naive = generated.source.replace("_rescale_to_full_out_degrees(h, block, out_degrees[input_nodes], 0.5)", "h")
    broken = generated.__class__(**{**generated.__dict__, "source": naive})
    assert not check(broken, num_nodes=211, batch_sizes=(13,)).ok

"""Refusals: each user mistake gets its own error class and one paragraph naming the source
line, the reason and the way out. The exact messages are snapshotted here; a change to one
is a change to the product and shows up in review."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.cases import REPO

MODEL = "tests/models/refused.py"

EXPECTED = {
    "MultiHop": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:16 (`return self.prop(g, self.lin(x))`): self.prop '
        '(APPNPConv) propagates k hops internally (personalised PageRank), so it cannot '
        'run on the 1-hop blocks of layer-wise inference. Write the propagation as one '
        'single-hop convolution per layer (GraphConv, SAGEConv, ...), or evaluate this '
        'model with its full-graph forward.'
    ),
    "ControlFlow": (
        errors.DataDependentControlFlowError,
        'tests/models/refused.py:26 (`if h.sum() > 0:`): forward branches or loops on a '
        "tensor's value, which depends on the data and so cannot become one fixed "
        'layer-wise loop. Compute the condition outside the model (a constructor argument '
        'or a flag), or mark the module that holds it as a leaf with --leaf NAME if it '
        'only mixes features of the same node.'
    ),
    "GraphData": (
        errors.UnsupportedOperationError,
        'tests/models/refused.py:38 (`return h * g.in_degrees().unsqueeze(-1)`): '
        ".in_degrees(...) reads the graph's data or structure outside a message-passing "
        'module. Layer-wise inference computes everything outside message-passing modules '
        "on one batch of nodes at a time, so only operations that treat each node's row "
        'on its own can be placed there. Move this computation into a message-passing '
        'module, or, if it does treat rows independently, mark its module with --leaf '
        'NAME.'
    ),
    "MixesRows": (
        errors.UnsupportedOperationError,
        'tests/models/refused.py:48 (`return h - h.mean(0)`): .mean(...) mixes the rows '
        'of different nodes (or is not known to keep them apart). Layer-wise inference '
        'computes everything outside message-passing modules on one batch of nodes at a '
        "time, so only operations that treat each node's row on its own can be placed "
        'there. Move this computation into a message-passing module, or, if it does treat '
        'rows independently, mark its module with --leaf NAME.'
    ),
    "NoMessagePassing": (
        errors.UnsupportedOperationError,
        'forward calls no message-passing module on its graph, so there is nothing to run '
        'layer-wise. gnn-codegen expects dgl.nn convolutions (or modules that call '
        'update_all/apply_edges) applied to the graph argument.'
    ),
    "Readout": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:67 (`return self.pool(g, self.conv(g, x))`): self.pool '
        '(SumPooling) is a graph-level readout (one row per graph, not per node), so it '
        'cannot run on the 1-hop blocks of layer-wise inference. Generate inference for '
        'the node-level part of the model and apply the readout to the node embeddings '
        'that `inference` returns.'
    ),
    "DenseAdjacency": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:76 (`return self.conv(g.adj().to_dense(), x)`): '
        'self.conv (DenseGraphConv) works on a dense adjacency matrix, not on a DGL '
        'graph, so it cannot run on the 1-hop blocks of layer-wise inference. Write the '
        'propagation as one single-hop convolution per layer (GraphConv, SAGEConv, ...), '
        'or evaluate this model with its full-graph forward.'
    ),
    "Heterogeneous": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:85 (`return self.conv(g, {"user": x, "item": '
        'x})["user"]`): self.conv (HeteroGraphConv) works on a heterogeneous graph '
        '(several node and edge types), which gnn-codegen does not support yet, so it '
        'cannot run on the 1-hop blocks of layer-wise inference. Convert the graph with '
        'dgl.to_homogeneous and write the layers as homogeneous convolutions '
        '(RelGraphConv with etypes for relation-specific weights), or evaluate this model '
        'with its full-graph forward.'
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_refusal_message(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    error_class, message = EXPECTED[name]
    with pytest.raises(error_class) as caught:
        generate_all(f"{MODEL}:{name}")
    assert str(caught.value) == message


@pytest.mark.parametrize("name", ["MultiHop", "ControlFlow", "MixesRows"])
def test_cli_refuses_with_one_paragraph_and_no_output(name: str, tmp_path) -> None:
    out = tmp_path / "out.py"
    result = subprocess.run(
        [sys.executable, "-m", "gnn_codegen", f"{MODEL}:{name}", "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, env={**os.environ, "DGLBACKEND": "pytorch"},
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    assert " ".join(result.stderr.split()) == "error: " + EXPECTED[name][1]
    assert not out.exists() and list(tmp_path.iterdir()) == []


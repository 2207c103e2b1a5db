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
WILD = "tests/models/in_the_wild.py"

# Models of tests/models/in_the_wild.py, written as DGL's examples write them, that are refused:
# target -> (options, error class, message)
WILD_OPTIONS: dict[str, GenerateOptions] = {}

EXPECTED = {
    "MultiHop": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:16 (`return self.prop(g, self.lin(x), etypes)`): self.prop '
        '(GatedGraphConv) runs n_steps rounds of message passing internally; with several edge types '
        "it selects edges by their type's value, which cannot be followed round by round, so it "
        'cannot run on the 1-hop blocks of layer-wise inference. Write the propagation as one '
        'single-hop convolution per layer (GraphConv, SAGEConv, ...), or evaluate this model with '
        'its full-graph forward.'
    ),
    "ControlFlow": (
        errors.DataDependentControlFlowError,
        "tests/models/refused.py:26 (`if h.sum() > 0:`): forward branches or loops on a tensor's "
        'value, which depends on the data and so cannot become one fixed layer-wise loop. Compute'
        ' the condition outside the model (a constructor argument or a flag), or mark the module '
        'that holds it as a leaf with --leaf NAME if it only mixes features of the same node.'
    ),
    "MixesRows": (
        errors.UnsupportedOperationError,
        "tests/models/refused.py:38 (`return torch.cumsum(h, dim=0)`): torch.cumsum(...) mixes the "
        "rows of different nodes (or is not known to keep them apart). Layer-wise inference computes "
        "everything outside message-passing modules on one batch of nodes at a time, so only "
        "operations that treat each node's row on its own can be placed there. Move this "
        "computation into a message-passing module, or, if it does treat rows independently, mark "
        "its module with --leaf NAME."
    ),
    "NothingPerNode": (
        errors.UnsupportedOperationError,
        "tests/models/refused.py:47 (`return self.lin.weight * 2.0`): what forward returns has no row per "
        "node or edge: "
        "it follows from the model's weights or the graph's sizes alone, not from any node's features, so "
        "there is nothing to compute per node. Use forward's value itself; gnn-codegen writes inference for "
        "outputs with a row per node (or per edge)."
    ),
    "Readout": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:57 (`return self.pool(g, self.conv(g, x))`): self.pool '
        '(SumPooling) is a graph-level readout (one row per graph, not per node), so it cannot '
        'run on the 1-hop blocks of layer-wise inference. Generate inference for the node-level '
        'part of the model and apply the readout to the node embeddings that `inference` returns.'
    ),
    "DenseAdjacency": (
        errors.UnsupportedModuleError,
        'tests/models/refused.py:66 (`return self.conv(g.adj().to_dense(), x)`): self.conv '
        '(DenseGraphConv) works on a dense adjacency matrix, not on a DGL graph, so it cannot run'
        ' on the 1-hop blocks of layer-wise inference. Write the propagation as one single-hop '
        'convolution per layer (GraphConv, SAGEConv, ...), or evaluate this model with its full-'
        'graph forward.'
    ),
    "Heterogeneous": (
        errors.OptionsError,
        "self.conv (HeteroGraphConv) has a module per relation name (buys, follows), and a name "
        "does not say which node types the relation joins, which gnn-codegen needs to check the "
        "generated code on a heterograph. Give the graph's canonical edge types with --metagraph, "
        "e.g. --metagraph 'user:follows:user,user:buys:item' (your graph's g.canonical_etypes), or "
        "key the modules by canonical edge types."
    ),
    "LoopsOverNodeTypes": (
        errors.GraphUseError,
        'tests/models/refused.py:84 (`for ntype in g.ntypes:`): forward loops over g.ntypes (the '
        "graph's types) in Python: gnn-codegen follows a heterogeneous graph through "
        'HeteroGraphConv layers, or through a forward whose first step makes it homogeneous (g = '
        'dgl.to_homogeneous(hg, ndata=[...])) and that reads nothing else of the heterograph '
        'after but its type lists, which it then takes from --metagraph (give the graph\'s '
        'relations: --metagraph SRC:REL:DST,...). Compute what else forward reads of the types '
        'beforehand (features or embeddings per type, stored as node data the conversion carries), '
        'or evaluate this model with its full-graph forward.'
    ),
    "AssignsIntoATensor": (
        errors.TraceFailedError,
        'tests/models/refused.py:106 (`h[:, 0] = 0.0`): forward assigns into part of a tensor '
        '(`h[...] = ...`), which torch.fx cannot trace. Write it as a new tensor instead '
        '(torch.where, torch.cat, or h = h.index_put(...)).'
    ),
    "ChangedThroughASliceReadAgain": (
        errors.UnsupportedOperationError,
        'tests/models/refused.py:135 (`h[:, :2].mul_(2.0)`): this changes a tensor in place, which '
        'shares memory with h (one is a view of the other), and h is read again at '
        'tests/models/refused.py:136 (`return self.conv2(g, h)`). A layer-wise loop keeps each '
        'value in its own buffer, so the change would not reach it and the result would differ '
        "from forward's. Write the change out of place (`h = h + b` instead of `h.add_(b)`, "
        '`F.relu(h)` instead of inplace=True), or change the tensor before taking views of it.'
    ),
    "NormalisesComputedWeights": (
        errors.GraphValueError,
        "tests/models/refused.py:151 (`return self.prop(g, self.lin(x), edge_weight=w)`): "
        "EdgeWeightNorm divides each edge's weight by sums over the edges of its endpoints in the "
        "whole graph, so inference computes it once on the full graph before the first batch, from "
        "weights it is given; these are computed in forward. Compute them before calling the model "
        "and pass them to forward as an input (or in g.edata), or evaluate this model with its "
        "full-graph forward."
    ),
    "MaxWithIndices": (
        errors.UnsupportedOperationError,
        "tests/models/refused.py:164 (`return h / h.max(0).values`): .max(...) reduces over the rows "
        "of different nodes in a form gnn-codegen does not write out. The reductions over all nodes it "
        "computes exactly, in a pass over the stored rows before the layer that reads them, are .sum(0), "
        ".mean(0), .amax(0), .amin(0), .var(0) and .std(0) (with unbiased= or correction=), and .sum(), "
        ".mean(), .max(), .min(), .var() and .std() of every element. Write it as one of those (h.amax(0) "
        "for h.max(0).values), or evaluate this model with its full-graph forward."
    ),
    "on_meta_device": (
        errors.InitError,
        "on_meta_device from 'tests/models/refused.py' has its weights on the meta device (conv.fc_neigh.weight and 2 "
        "more), where tensors have a shape but no values, so gnn-codegen cannot run forward to trace and "
        "check it. Build the model with real weights: outside `with torch.device(\"meta\")`, or, in a "
        "factory function, call model.to_empty(device=\"cpu\") and load its weights before returning it."
    ),
}

WILD_EXPECTED = {
    "ChangedThroughAView": (
        errors.UnsupportedOperationError,
        'tests/models/in_the_wild.py:350 (`first.zero_()`): this changes first in place, which '
        'shares memory with h (one is a view of the other), and h is read again at '
        'tests/models/in_the_wild.py:351 (`return self.conv2(g, h)`). A layer-wise loop keeps '
        'each value in its own buffer, so the change would not reach it and the result would '
        "differ from forward's. Write the change out of place (`h = h + b` instead of "
        '`h.add_(b)`, `F.relu(h)` instead of inplace=True), or change the tensor before taking '
        'views of it.'
    ),
    "NoiseInForward": (
        errors.UnsupportedOperationError,
        'tests/models/in_the_wild.py:363 (`return h + 0.1 * torch.randn(h.shape)`): forward draws'
        ' random numbers (torch.randn), so its result changes from run to run and cannot be '
        'reproduced layer-wise. Draw them only when self.training is True (e.g. `if '
        'self.training:` around the noise), or pass the random tensor to forward as an input.'
    ),
    "DropoutAlwaysOn": (
        errors.UnsupportedOperationError,
        'tests/models/in_the_wild.py:374 (`return self.conv(g, F.dropout(x, 0.5))`): '
        "F.dropout(...) is called with training=True (F.dropout's default), so it drops features "
        "at random in eval mode too, and forward's result changes from run to run. Pass "
        'training=self.training, or use an nn.Dropout module.'
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_refusal_message(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    error_class, message = EXPECTED[name]
    with pytest.raises(error_class) as caught:
        generate_all(f"{MODEL}:{name}")
    assert str(caught.value) == message


@pytest.mark.parametrize("name", sorted(WILD_EXPECTED))
def test_refusal_of_models_written_like_dgls_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    error_class, message = WILD_EXPECTED[name]
    with pytest.raises(error_class) as caught:
        generate_all(f"{WILD}:{name}", WILD_OPTIONS.get(name, GenerateOptions()))
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


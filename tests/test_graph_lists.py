"""Graphs forward derives in its loop, one per value of the loop's variable, are derived as
forward does, in one comprehension over the model's count, each with its batches in a list
beside it (issue 37, render/graph_lists.py, lower/loop_ranges.py): the reviewer of
rgat_mag240m read three copies of `dgl.edge_subgraph(g, etype == N, ...)`. The rows each user's
layer reads are numbered for that layer (`x_skip1`, `feat1`), not for the pass that
computes them (`x_skip3`, `feat3_etype_0`), and the sum a layer accumulates over its edge types
keeps one name, as forward's `x_skip` does. Graphs written one by one, or from a value the
loop's variable does not give alone, stay apart."""

from __future__ import annotations

import json
import re

import pytest
import torch.nn as nn

from gnn_codegen.lower.loop_ranges import innermost, loop_ranges
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.graph_lists import spelled_layers
from tests.cases import REPO

MODELS = "tests/models/graph_loops.py"


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


@pytest.mark.parametrize("num_layers, num_etypes", [(2, 2), (3, 4)])
def test_the_graphs_of_a_loop_are_one_comprehension(num_layers: int, num_etypes: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    init = json.dumps({"num_layers": num_layers, "num_etypes": num_etypes})
    method = _method(generate_all(f"{MODELS}:LoopedEdgeTypeGAT", GenerateOptions(init=init)).source)  # checked
    flat = " ".join(method.split())
    assert ('graphs = [ dgl.edge_subgraph(g, etype == j, relabel_nodes=False) for j in range(self.num_etypes) ]'
            in flat or 'graphs = [dgl.edge_subgraph(g, etype == j, relabel_nodes=False) for j in range(self.num_etypes)]'
            in flat), method
    assert "graph_batches = [batches.over(graph) for graph in graphs]" in method, method
    # the passes run in a loop over the user's layers (graph_layer_loops.py): counted as it counts
    assert "layers=graph_batches * len(self.convs))" in flat, method
    assert "g_etype_" not in method and "batches_etype_" not in method, method
    for j in range(num_etypes):  # each graph's pass, or a loop's over them (graph_pass_loops.py)
        assert ((f"on graphs[{j}]." in flat and f"graph_batches[{j}].map(" in method)
                or ("graphs[j]." in flat and "graph_batches[j].map(" in method)), method
    # the sum over edge types: one name, as forward's, the next layer's made in the last pass
    assert set(re.findall(r"\bx_skip\w*", method)) == {"x_skip", "x_skip_next"}, method
    # the rows each graph's pass reads: an item of a list (graph_rows.py), the layer's in turn
    assert "source_rows=dict(feat=feat[j], el=el[j])" in method, method
    assert not re.search(r"\b(?:feat|el)\d+\[", method), method


@pytest.mark.parametrize("name", ["OneByOneEdgeTypeGAT", "ShiftedEdgeTypeGAT"])
def test_graphs_derived_otherwise_stay_apart(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all(f"{MODELS}:{name}", GenerateOptions()).source)  # checked exact
    assert "graphs = [" not in method and "graph_batches" not in method, method
    assert len(re.findall(r"\b\w+ = dgl\.edge_subgraph\(", method)) == 2, method


_SOURCE = '''
class Inner(nn.Module):
    def forward(self, g, x):
        for j in range(self.count):
            x = x + j
        return x


class Outer(nn.Module):
    def forward(self, mfgs, x):
        for i in range(len(mfgs)):
            for j in range(self.count - 1):
                x = x + j
            for k in range(len(self.layers)):
                pass
        return [x + r for r in range(self.count)]
'''


def test_the_loops_of_the_models_class_and_their_counts() -> None:
    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.count = 3
            self.layers = nn.ModuleList([nn.Linear(1, 1)] * 2)

    ranges = loop_ranges(_SOURCE, "m.py", Outer())
    # the Inner class's loop is not the model's (its `self` is another module)
    assert [(r.var, r.spelled, r.value, r.comprehension) for r in sorted(ranges, key=lambda r: r.first)] == [
        ("i", "", 0, False), ("j", "self.count - 1", 2, False), ("k", "len(self.layers)", 2, False),
        ("r", "self.count", 3, True)]
    assert innermost(ranges, "m.py:16 (`return [x + r ...]`)").var == "r"  # type: ignore[union-attr]
    assert innermost(ranges, "m.py:13 (`x = x + j`)").var == "j"  # type: ignore[union-attr]
    assert innermost(ranges, "m.py:14 (`for k ...`)").var == "i"  # type: ignore[union-attr]
    assert innermost(ranges, "other.py:13 (`x = x + j`)") is None


def test_the_layers_batches_are_written_as_the_lists_they_are() -> None:
    lengths = {"graph_batches": 3}
    listed = [f"graph_batches[{j}]" for j in range(3)]
    assert spelled_layers(listed * 2, lengths) == "graph_batches * 2"
    assert spelled_layers(listed, lengths) == "graph_batches"
    assert spelled_layers([*listed, "batches"], lengths) == "[*graph_batches, batches]"
    assert spelled_layers(listed[:2], lengths) == "[graph_batches[0], graph_batches[1]]"

"""The user's source lines of a model that keeps its graph (issue 37): `self.g = g` in
`__init__` and `forward(self, features)`, as DGL's citation/GCN tutorials write it, is traced
through a wrapper that takes the graph, whose frame has no source line. Every op still gets the
user's line (trace/stack_frames.py: a frame's code is read to the end of its own line), so what
reads lines works for it too: two layers the user loops over fold into one loop
(render/written_as_loop.py). And ops of a library module forward is traced into are written
inside one another only where the library wrote them on one line (render/layer.py's nested()),
whether the model keeps its graph or takes it."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.trace.stack_frames import Frame, frames
from gnn_codegen.verify.check import check

_TUTORIAL_GCN = '''
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import GraphConv


class GCN(nn.Module):
    def __init__(self, g, in_feats, n_hidden, n_classes, n_layers, activation=F.relu):
        super().__init__()
        self.g = g
        self.layers = nn.ModuleList()
        self.layers.append(GraphConv(in_feats, n_hidden, activation=activation))
        for i in range(n_layers - 1):
            self.layers.append(GraphConv(n_hidden, n_hidden, activation=activation))
        self.layers.append(GraphConv(n_hidden, n_classes))

    def forward(self, features):
        h = features
        for layer in self.layers:
            h = layer(self.g, h)
        return h
'''

_APPNP = '''
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn.pytorch import APPNPConv


class Net(nn.Module):
    def __init__(self, GRAPH_PARAMETERin_size, out_size):
        super().__init__()
        KEEP
        self.linear = nn.Linear(in_size, out_size)
        self.propagate = APPNPConv(k=2, alpha=0.1)

    def forward(self, GRAPH_ARGUMENTfeatures):
        h = F.relu(self.linear(features))
        return self.propagate(GRAPH, h)
'''


def _generate(tmp_path: Path, source: str, target: str, init: str):
    (tmp_path / "model.py").write_text(source)
    return generate_all(f"{tmp_path / 'model.py'}:{target}", GenerateOptions(init=init))


def test_a_frame_without_source_does_not_hide_the_next_frame() -> None:
    """The wrapper's frame (no source line) is followed by the model's: both are read, each with
    its own code."""
    trace = ('  File "<GCN.forward taking its graph>", line 3, in forward\n    \n'
             '  File "/m/model.py", line 20, in forward\n    h = layer(self.g, h)\n'
             '  File "/m/model.py", line 5, in <listcomp>\n    h * 2')
    assert frames(SimpleNamespace(stack_trace=trace)) == [  # type: ignore[arg-type]
        Frame("<GCN.forward taking its graph>", 3, ""), Frame("/m/model.py", 20, "h = layer(self.g, h)")]


def test_a_model_keeping_its_graph_has_its_lines(tmp_path: Path) -> None:
    generated = _generate(tmp_path, _TUTORIAL_GCN, "GCN", '{"in_feats": 6, "n_hidden": 6, "n_classes": 3, "n_layers": 3}')
    passing = [op for op in generated.program.ops if op.kind == "mp"]
    assert len(passing) == 4
    assert all(op.location.endswith(":20 (`h = layer(self.g, h)`)") for op in passing), [op.location for op in passing]
    # two layers alike (6 -> 6, each then norming for a 6 -> 6 layer) are the user's loop: one
    assert "def layer_i(" in generated.source, generated.source
    assert check(generated, num_nodes=37, seed=3, batch_sizes=(1, 37)).ok


@pytest.mark.parametrize("kept", [True, False])
def test_a_library_modules_lines_are_nested_only_within_themselves(tmp_path: Path, kept: bool) -> None:
    """APPNPConv's `src_norm = th.pow(...)` and `th.reshape(src_norm, shp)` are lines of their
    own: the power is computed once, not written again inside the reshape's shape."""
    source = (_APPNP.replace("GRAPH_PARAMETER", "g, ").replace("KEEP", "self.g = g")
              .replace("GRAPH_ARGUMENT", "").replace("GRAPH", "self.g") if kept else
              _APPNP.replace("GRAPH_PARAMETER", "").replace("KEEP", "")
              .replace("GRAPH_ARGUMENT", "g, ").replace("GRAPH", "g"))
    generated = _generate(tmp_path, source, "Net", '{"in_size": 5, "out_size": 4}')
    method = generated.source[generated.source.index("    def inference("):generated.source.index("# --- gnn-codegen")]
    statements = [ast.unparse(node) for node in ast.walk(ast.parse(textwrap.dedent(method)))
                  if isinstance(node, (ast.Assign, ast.Return))]
    assert not [s for s in statements if s.count("torch.pow(") > 1], method
    assert "h = F.relu(self.linear(features))" in method, method  # the user's one line stays one
    assert check(generated, num_nodes=37, seed=3, batch_sizes=(1, 37)).ok

"""A layer loop that carries a state forward starts before the loop (issue 37): GeniePath's LSTM
memory, `torch.zeros(1, N, hid)` before forward's `for layer in self.layers`, was made per batch
in the first layer alone (`torch.zeros(block.num_dst_nodes(), d).to(device)`, on the host each
batch), which kept that layer out of the loop of the others. The start is now made before the
first layer and stored (render/state_starts.py): every layer is one round of one loop, the
first reading the zeros where the others read the layer before's state. A first layer that
differs in more than its state stays apart."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.last_copies import split
from gnn_codegen.render.layer import LayerFunction
from gnn_codegen.render.module_index import counted_ending
from gnn_codegen.verify.check import check
from tests.test_last_copies import _layer_functions, _method

_GENIEPATH = Path(__file__).parent.parent / "generated_examples" / "geniepath" / "model.py"

# a GRU state started by `x.new_zeros(...)`, each layer's cell fed a GraphConv's rows
_GRU = '''
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GraphConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.hid_size = hid_size
        self.lin = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList(GraphConv(hid_size, hid_size) for _ in range(num_layers))
        self.cells = nn.ModuleList(nn.GRUCell(hid_size, hid_size) for _ in range(num_layers))
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        x = self.lin(x)
        h = x.new_zeros(x.shape[0], self.hid_size)
        for conv, cell in zip(self.convs, self.cells):
            h = cell(F.relu(conv(g, x)), h)
            x = x + h
        return self.out(x)
'''

# an LSTMCell's state made on the device, passed to the cell as one pair `(h, c)`
_LSTM_CELL = '''
import torch
import torch.nn as nn
from dgl.nn import SAGEConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=3):
        super().__init__()
        self.hid_size = hid_size
        self.lin = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList(SAGEConv(hid_size, hid_size, "mean") for _ in range(num_layers))
        self.cells = nn.ModuleList(nn.LSTMCell(hid_size, hid_size) for _ in range(num_layers))
        self.out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        x = self.lin(x)
        h = torch.zeros(x.shape[0], self.hid_size, device=x.device)
        c = torch.zeros(x.shape[0], self.hid_size, device=x.device)
        for conv, cell in zip(self.convs, self.cells):
            h, c = cell(torch.relu(conv(g, x)), (h, c))
            x = x + h
        return self.out(x)
'''

_INIT = '{"in_size": 5, "hid_size": 6, "out_size": 3}'


def _generate(tmp_path: Path, source: str, init: str = _INIT, cls: str = "Net"):
    (tmp_path / "model.py").write_text(source)
    return generate_all(f"{tmp_path / 'model.py'}:{cls}", GenerateOptions(init=init))


def _geniepath(tmp_path: Path, layers: int):
    init = {"in_dim": 10, "out_dim": 4, "hid_dim": 8, "num_layers": layers, "heads": 2, "residual": True}
    return _generate(tmp_path, _GENIEPATH.read_text(), json.dumps(init), "GeniePath")


def _checked(generated) -> None:
    # batches of one node, some, all; nodes= and storage= are in check's runs too
    result = check(generated, num_nodes=37, seed=3, batch_sizes=(1, 5, 37))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


@pytest.mark.parametrize("layers", [3, 4])
def test_geniepath_is_one_loop_with_its_memory_started_before_it(tmp_path: Path, layers: int) -> None:
    generated = _geniepath(tmp_path, layers)
    method = _method(generated.source)
    assert _layer_functions(generated.source) == ["layer_i"], method
    assert "for i in range(len(self.layers)):" in method and "if i == len(self.layers) - 1:" in method, method
    assert "return self.linear2(x)" in method, method
    # the zeros made once per node before the loop, on the device: no host tensor per batch
    assert "torch.zeros(x.shape[0], self.hid_dim, device=device)" in method, method
    assert ".to(device)" not in method and "block.num_dst_nodes(), self.hid_dim" not in method, method
    # the last layer's own LSTM step reads the loop's module, not self.layers[2]
    assert "_lstm_step(self.layers[i].depth_func, x, h, c)" in method, method
    _checked(generated)


def test_two_geniepath_layers_stay_apart_and_make_their_zeros_on_the_device(tmp_path: Path) -> None:
    """Two layers whose last ends otherwise are no loop (layer_loops.MIN_RUN); the first makes
    its zeros per batch, where the batch is, not on the host."""
    generated = _geniepath(tmp_path, 2)
    method = _method(generated.source)
    assert _layer_functions(generated.source) == ["layer_1", "layer_2"], method
    assert "torch.zeros(block.num_dst_nodes(), self.hid_dim, device=device)" in method, method
    assert ".to(device)" not in method, method
    _checked(generated)


@pytest.mark.parametrize("model, stores", [
    (_GRU, "x.new_zeros(x.shape[0], self.hid_size)"),
    (_LSTM_CELL, "torch.zeros(x.shape[0], self.hid_size, device=device)"),
])
def test_recurrent_cells_whose_state_starts_before_the_loop(tmp_path: Path, model: str, stores: str) -> None:
    generated = _generate(tmp_path, model)
    method = _method(generated.source)
    assert _layer_functions(generated.source) == ["layer_i"], method
    assert "for i in range(len(self.cells)):" in method and stores in method.split("for i in")[0], method
    assert "block.num_dst_nodes(), self.hid_size" not in method, method
    _checked(generated)


def test_a_first_layer_that_differs_in_more_than_its_state_stays_apart(tmp_path: Path) -> None:
    """The first cell is fed tanh where the others are fed relu: its start is not stored for
    nothing, and it keeps its zeros per batch."""
    source = _GRU.replace("        for conv, cell in zip(self.convs, self.cells):\n"
                          "            h = cell(F.relu(conv(g, x)), h)\n",
                          "        for i, (conv, cell) in enumerate(zip(self.convs, self.cells)):\n"
                          "            m = conv(g, x)\n"
                          "            h = cell(m.tanh() if i == 0 else F.relu(m), h)\n")
    generated = _generate(tmp_path, source)
    method = _method(generated.source)
    assert "layer_1" in _layer_functions(generated.source), method
    assert "x0.new_zeros(x0.shape[0], self.hid_size)" in method.split("def layer_2")[0], method
    assert "new_zeros" not in method.split("def layer_1")[0], method
    _checked(generated)


def _lines(text: str) -> list[str]:
    return textwrap.dedent(text).strip("\n").splitlines()


def test_a_last_step_that_drops_the_state_it_hands_on_is_shared() -> None:
    """`x, _, _ = step(...)` in the last layer, `x, h, c = step(...)` in the others: one
    statement of the loop, the last layer's ending after it (last_copies.split)."""
    regular = _lines('''
        x = self.conv(block, feat)
        x, h, c = _lstm_step(self.lstm, x, h0, c0)
        return x, h, c
    ''')
    last = _lines('''
        x = self.conv(block, feat)
        x, _, _ = _lstm_step(self.lstm, x, h0, c0)
        return self.out(x)
    ''')
    parts = split(regular, last, ast.unparse, ast.unparse)
    assert parts is not None and parts.ending.shared == 2 and parts.ending.last == ("return self.out(x)",)
    # a last layer that reads a name the shared statement would bind: its step is its own
    reads_h = [*last[:2], "return self.out(x + h)"]
    parts = split(regular, reads_h, ast.unparse, ast.unparse)
    assert parts is not None and parts.ending.shared == 1 and parts.ending.last == tuple(reads_h[1:])


def test_a_last_layers_own_module_index_is_the_loops_where_the_others_read_that_module() -> None:
    regular = LayerFunction("layer_2", ["block", "x"], ["x = self.layers[1].conv(block, x)", "return x"])
    ending = ("x, _ = self.layers[2].step(x)", "return self.fcs[1](x)")
    # the others read self.layers at their own index: so does the ending; self.fcs stays as written
    assert counted_ending(ending, regular, (2, 3), "i", -1) == (
        "x, _ = self.layers[i].step(x)", "return self.fcs[1](x)")

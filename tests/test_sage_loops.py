"""A SAGEConv stack of the user's loop is one loop over its layers (issue 37), whatever its widths:
each layer ends with the next one's source step, `_sage_conv_source`, which applies fc_neigh
where that layer narrows and returns the rows themselves where it does not, as DGL's SAGEConv
decides (lin_before_mp), from the module at run time; `_sage_conv_mean` decides the same way,
so every layer reads alike. A layer that returns one tensor twice (its result and its rows
for the next layer, where that one does not narrow) has it stored once by the runtime. Layers
written out one by one get no step that does nothing, and stay apart. Each exact."""

from __future__ import annotations

import json
from pathlib import Path

import dgl
import pytest
import torch

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.trace.write_out import HELPERS
from gnn_codegen.verify.check import check
from gnn_codegen.verify.harness import import_source
from tests.test_last_copies import _layer_functions, _method

_LOOPED = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, sizes, aggregator="mean"):
        super().__init__()
        self.layers = nn.ModuleList(
            dglnn.SAGEConv(a, b, aggregator) for a, b in zip(sizes[:-1], sizes[1:])
        )
        self.dropout = nn.Dropout(0.5)

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = F.relu(h)
                h = self.dropout(h)
        return h
'''

_WRITTEN_OUT = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(dglnn.SAGEConv(a, b, "mean") for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, g, x):
        h = F.relu(self.layers[0](g, x))
        h = F.relu(self.layers[1](g, h))
        return self.layers[2](g, h)
'''


def _generate(tmp_path: Path, source: str, **init):
    (tmp_path / "model.py").write_text(source)
    generated = generate_all(f"{tmp_path / 'model.py'}:Net", GenerateOptions(init=json.dumps(init)))
    result = check(generated, num_nodes=37, seed=3, batch_sizes=(1, 5, 37))
    assert result.ok, f"max |difference| {result.max_abs_diff}"
    return generated


def _functions(method: str) -> list[str]:
    return _layer_functions(method.replace("    def inference(", "def inference(", 1))


@pytest.mark.parametrize("sizes", [
    [6, 8, 8, 3],  # DGL's example: narrows in its last layer alone
    [4, 9, 5, 12],  # widens, narrows, widens
    [12, 8, 5, 3],  # narrows in every layer
    [3, 5, 7, 9, 11],  # widens in every layer, four layers
    [6, 4, 9, 9, 2],  # narrows, widens, keeps, narrows
])
def test_a_sage_stack_is_one_loop_whatever_its_widths(tmp_path: Path, sizes) -> None:
    method = _method(_generate(tmp_path, _LOOPED, sizes=sizes).source)
    assert _functions(method) == ["layer_i"], method
    assert "for i in range(len(self.layers)):" in method, method
    assert "if i == len(self.layers) - 1:" in method, method
    assert "_sage_conv_mean(self.layers[i], block, feat, h)" in method, method
    assert "return h, _sage_conv_source(self.layers[i + 1], h)" in method, method
    assert "projected" not in method and ".fc_neigh(" not in method, method
    assert "needed = batches.needed(nodes, layers=len(self.layers))" in method, method


def test_a_two_layer_sage_stack_of_the_users_loop_is_exact(tmp_path: Path) -> None:
    """Two layers, the last narrowing: the first's step is fc_neigh, stored beside its rows."""
    method = _method(_generate(tmp_path, _LOOPED, sizes=[5, 7, 2]).source)
    assert "_sage_conv_source(self.layers[1], h)" in method, method


def test_a_stack_of_another_aggregator_is_one_loop(tmp_path: Path) -> None:
    """SAGEConv("pool"), called as the module (its source rows gathered per batch): alike but
    for the module's index, one loop too."""
    method = _method(_generate(tmp_path, _LOOPED, sizes=[6, 8, 8, 3], aggregator="pool").source)
    assert _functions(method) == ["layer_i"], method
    assert "self.layers[i](block, h)" in method, method


def test_sage_layers_written_out_one_by_one_stay_apart(tmp_path: Path) -> None:
    """Must not fold: forward calls each layer on its own line. No step that does nothing is
    written (the first layer's result is read as it is), and the narrowing last layer's
    fc_neigh is stored once per node as before."""
    method = _method(_generate(tmp_path, _WRITTEN_OUT, sizes=[5, 8, 8, 3]).source)
    assert _functions(method) == ["layer_1", "layer_2", "layer_3"], method
    assert "for i in" not in method, method
    assert method.count("_sage_conv_source(") == 1, method
    assert "return h, _sage_conv_source(self.layers[2], h)" in method, method


@pytest.mark.parametrize("in_feats, out_feats", [(6, 3), (3, 6), (4, 4)])
def test_sage_helpers_put_fc_neigh_where_dgl_does(in_feats: int, out_feats: int) -> None:
    torch.manual_seed(0)
    conv = dgl.nn.SAGEConv(in_feats, out_feats, "mean")
    g = dgl.rand_graph(20, 60)
    feat = torch.randn(20, in_feats)
    rows = HELPERS["sage_conv_source"](conv, feat)
    assert (rows is feat) == (in_feats <= out_feats)  # the rows themselves: nothing to store again
    block = dgl.to_block(g, torch.arange(20))
    assert torch.allclose(HELPERS["sage_conv_mean"](conv, block, rows, feat), conv(g, feat), atol=1e-6)


def test_a_result_returned_twice_is_stored_once(tmp_path: Path) -> None:
    """The runtime keeps a tensor a layer returns twice in one buffer (in memory, and in one file
    with storage=), and returns it for both."""
    generated = _generate(tmp_path, _LOOPED, sizes=[6, 8, 8, 3])
    module = import_source(generated.source, tmp_path)
    model = generated.loaded.model
    g = dgl.rand_graph(30, 90)
    x = torch.randn(30, 6)
    for storage in (None, tmp_path / "storage"):
        batches = module._FullNeighbourBatches(model, g, batch_size=7, device="cpu", max_memory=2**30,
                                               progress=False, storage=storage)
        h, again = batches.map(lambda block, x: (2 * x, ) * 2, destination_rows=dict(x=x), blocks=False)
        assert h is again
        assert torch.equal(h, 2 * x)
        if storage is not None:
            assert len([f for f in storage.iterdir() if f.suffix == ".npy"]) == 1


def test_a_none_result_is_returned_as_none_and_stored_nowhere(tmp_path: Path) -> None:
    """A loop's last layer returns `h, None` where the others return `h, h_src` (fewer_stored.py):
    the runtime returns None for it and stores nothing for it (in memory, with storage=, and
    for nodes=), so the loop's call binds the same names in every round."""
    generated = _generate(tmp_path, _LOOPED, sizes=[6, 8, 8, 3])
    assert "h, feat = batches.map(" in generated.source and "return h, None" in generated.source
    module = import_source(generated.source, tmp_path)
    model = generated.loaded.model
    g = dgl.rand_graph(30, 90)
    x = torch.randn(30, 6)
    for storage, nodes in ((None, None), (tmp_path / "storage", None), (None, torch.tensor([2, 5, 7]))):
        batches = module._FullNeighbourBatches(model, g, batch_size=7, device="cpu", max_memory=2**30,
                                               progress=False, storage=storage)
        h, none = batches.map(lambda block, x: (2 * x, None), destination_rows=dict(x=x), blocks=False,
                              nodes=nodes)
        assert none is None
        rows = slice(None) if nodes is None else nodes
        assert torch.equal(h[rows], 2 * x[rows])
        if storage is not None:
            assert len([f for f in storage.iterdir() if f.suffix == ".npy"]) == 1

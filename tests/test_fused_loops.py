"""A stack of the user's loop whose layers end with the next layer's work on each source row is
one loop over the user's layers (issue 37): each iteration runs self.layers[i]'s aggregation,
then, but for the last, self.layers[i + 1]'s source step (GraphConv's norm by out-degree, and
its weight where it narrows), which the cut put there so that the next layer reads its rows in
place. GraphConv's helpers decide the weight's place as DGL's GraphConv does, from the module
at run time (templates/convs.py.j2), so a narrowing layer and a widening one read alike;
render/last_copies.py joins the last layer, whose aggregation the others name and it returns.
Two layers written out one by one in forward stay apart. Each exact."""

from __future__ import annotations

import json
from pathlib import Path

import dgl
import pytest
import torch

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.trace.write_out import HELPERS
from gnn_codegen.verify.check import check
from tests.test_last_copies import _layer_functions, _method

_LOOPED = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, sizes, norm="both"):
        super().__init__()
        self.layers = nn.ModuleList(
            dglnn.GraphConv(a, b, norm=norm, activation=F.relu if i < len(sizes) - 2 else None,
                            allow_zero_in_degree=True)
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
        )
        self.dropout = nn.Dropout(0.5)

    def forward(self, g, x):
        h = x
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(g, h)
        return h
'''

_WRITTEN_OUT = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, sizes, norm="both"):
        super().__init__()
        self.layers = nn.ModuleList(
            dglnn.GraphConv(a, b, norm=norm, allow_zero_in_degree=True)
            for a, b in zip(sizes[:-1], sizes[1:])
        )

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


@pytest.mark.parametrize("sizes", [
    [5, 8, 4, 6],  # widens, narrows (its weight first), widens
    [7, 3, 8, 4, 2],  # narrows, widens, narrows, narrows
])
def test_a_stack_whose_layers_end_with_the_next_ones_source_step_is_one_loop(tmp_path: Path, sizes) -> None:
    method = _method(_generate(tmp_path, _LOOPED, sizes=sizes).source)
    assert _layer_functions(method.replace("    def inference(", "def inference(", 1)) == ["layer_i"], method
    assert "for i in range(len(self.layers)):" in method, method
    assert "if i == len(self.layers) - 1:" in method, method
    # the next layer's source step, from the loop's variable, once
    assert method.count("_graph_conv_source(") == 2, method  # the prologue's and the loop's
    assert "self.layers[i + 1], h, out_degrees" in method, method
    assert "weight_first" not in method, method
    # every layer in the loop: `needed` counts them as the loop does, not as a literal
    assert "needed = batches.needed(nodes, layers=len(self.layers))" in method, method
    # a comment the loop's index lengthened is wrapped again as the others
    assert all(len(line.strip()) <= 86 for line in method.splitlines() if line.strip().startswith("#")), method


def test_a_stack_whose_norm_reads_no_out_degrees_is_one_loop(tmp_path: Path) -> None:
    """norm="right": the source step is the weight alone, where a layer narrows, and nothing where
    it widens; written for every layer after the first all the same (write_out._sent_on_alone),
    so that the layers read alike and are one loop."""
    method = _method(_generate(tmp_path, _LOOPED, sizes=[5, 8, 4, 6], norm="right").source)
    assert "weight_first" not in method
    assert _layer_functions(method.replace("    def inference(", "def inference(", 1)) == ["layer_i"], method
    assert "return _graph_conv_source(self.layers[i + 1], h" in method, method


_NORMS_BETWEEN = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, sizes, norms):
        super().__init__()
        self.convs = nn.ModuleList(
            dglnn.GraphConv(a, b, norm=norm, allow_zero_in_degree=True)
            for a, b, norm in zip(sizes[:-1], sizes[1:], norms)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(b) for b in sizes[1:-1])
        self.projs = nn.ModuleList(nn.Linear(b, b) for b in sizes[1:-1])

    def forward(self, blocks, x):
        h = x
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            h_dst = h[: block.number_of_dst_nodes()]
            h = conv(block, (h, h_dst))
            if i < len(self.convs) - 1:
                h = self.norms[i](h)
                h = F.relu(h)
                h = self.projs[i](h)
        return h
'''


@pytest.mark.parametrize("sizes, norms", [
    ([5, 8, 8, 3], ["left", "right", "none"]),  # gcn_norms: a source step in the first and last alone
    ([4, 6, 3, 7, 2], ["none", "right", "none", "right"]),  # widens, narrows, widens, narrows
    ([9, 6, 4, 2], ["right", "none", "right"]),  # narrows in every layer
])
def test_graph_conv_layers_with_modules_between_and_mixed_norms_are_one_loop(tmp_path: Path, sizes, norms) -> None:
    """GraphConv with a LayerNorm and a Linear between, each layer its own norm and widths: a
    layer whose next one neither norms by out-degree nor narrows still ends with its source step
    (which returns the rows it is given), so every layer reads alike and the stack is one loop."""
    method = _method(_generate(tmp_path, _NORMS_BETWEEN, sizes=sizes, norms=norms).source)
    assert _layer_functions(method.replace("    def inference(", "def inference(", 1)) == ["layer_i"], method
    assert "for i in range(len(self.convs)):" in method, method
    assert "h = self.norms[i](h)" in method, method
    assert "return _graph_conv_source(self.convs[i + 1], h" in method, method


def test_graph_conv_layers_whose_source_steps_read_other_values_stay_apart(tmp_path: Path) -> None:
    """Must not fold: one layer's next conv norms by out-degree (its source step reads them), the
    others' do not: their bodies differ beyond names and the module index."""
    method = _method(_generate(tmp_path, _NORMS_BETWEEN, sizes=[4, 6, 3, 7, 2],
                               norms=["none", "right", "both", "none"]).source)
    assert "for i in" not in method, method
    assert _layer_functions(method.replace("    def inference(", "def inference(", 1)) == [
        "layer_1", "layer_2", "layer_3", "layer_4"], method


_RESIDUAL = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(
            dglnn.GraphConv(a, b, norm="right", allow_zero_in_degree=True)
            for a, b in zip(sizes[:-1], sizes[1:])
        )

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = F.relu(layer(g, h)) + h
        return h
'''


def test_rows_read_besides_by_the_next_graph_conv_get_no_source_step_that_does_nothing(tmp_path: Path) -> None:
    """A residual reads each layer's rows beside the next GraphConv: a source step that does
    nothing would be stored beside them (or run per batch on gathered rows), so none is written
    where the module has no work for it; exact either way."""
    method = _method(_generate(tmp_path, _RESIDUAL, sizes=[6, 6, 6, 6]).source)
    assert "_graph_conv_source(" not in method, method


def test_layers_written_out_one_by_one_stay_apart(tmp_path: Path) -> None:
    method = _method(_generate(tmp_path, _WRITTEN_OUT, sizes=[5, 8, 4, 6]).source)
    assert _layer_functions(method.replace("    def inference(", "def inference(", 1)) == [
        "layer_1", "layer_2", "layer_3"], method
    assert "for i in" not in method, method
    assert "needed = batches.needed(nodes, layers=3)" in method, method


def test_a_loop_over_some_of_the_layers_leaves_their_count_a_number() -> None:
    """gatv2 loops over all but its last layer: `needed` counts every layer, 3, not the loop's."""
    golden = (Path(__file__).parent.parent / "generated_examples" / "gatv2" / "generated.py").read_text()
    assert "for i in range(len(self.layers) - 1):" in golden
    assert "needed = batches.needed(nodes, layers=3)" in golden


@pytest.mark.parametrize("in_feats, out_feats", [(6, 3), (3, 6), (4, 4)])
@pytest.mark.parametrize("norm", ["both", "right", "none"])
def test_graph_conv_helpers_put_the_weight_where_dgl_does(in_feats: int, out_feats: int, norm: str) -> None:
    """weight_first left out: DGL's rule from the module (in_feats > out_feats), to the bit."""
    torch.manual_seed(0)
    conv = dgl.nn.GraphConv(in_feats, out_feats, norm=norm, allow_zero_in_degree=True)
    g = dgl.rand_graph(20, 60)
    feat = torch.randn(20, in_feats)
    rows = HELPERS["graph_conv_source"](conv, feat, g.out_degrees())
    block = dgl.to_block(g, torch.arange(20))
    assert torch.equal(HELPERS["graph_conv_aggregate"](conv, block, rows), conv(g, feat))

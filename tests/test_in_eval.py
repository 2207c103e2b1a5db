"""inference's `self.eval()` says what eval mode changes in the model (render/in_eval.py): its
dropouts and batch norms by the names forward calls them, layers alike said once with their
index as i, dropouts of p=0 left out; where the model has neither, it says so."""

from __future__ import annotations

import dgl.nn.pytorch as dglnn
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from gnn_codegen.render.in_eval import NEITHER, in_eval
from tests.cases import EXAMPLES


class _GATWithNorms(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.GATConv(4, 4, 2, feat_drop=0.5, attn_drop=0.5),
                                     dglnn.GATConv(8, 4, 1)])  # the second's dropouts: p=0
        self.norms = nn.ModuleDict({"first": nn.BatchNorm1d(8)})
        self.dropout = nn.Dropout(0.2)


NOTHING_TRACED = fx.GraphModule(nn.Module(), fx.Graph())


def test_dropouts_and_batch_norms_by_name() -> None:
    assert in_eval(_GATWithNorms(), NOTHING_TRACED) == (
        "# forward in eval mode: no dropout in self.layers[0].feat_drop,",
        '# self.layers[0].attn_drop and 1 more; self.norms["first"] with its running',  # 1 more: self.dropout
        "# statistics",
        "self.eval()",
    )


def test_layers_alike_said_once_and_a_model_with_neither() -> None:
    stack = nn.Module()
    stack.blocks = nn.Sequential(*(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)) for _ in range(3)))
    assert in_eval(stack, NOTHING_TRACED) == ("self.eval()  # forward in eval mode: no dropout in self.blocks[i][1]",)
    plain = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.0))
    assert in_eval(plain, fx.symbolic_trace(plain)) == NEITHER


class _FunctionalDropout(nn.Module):
    """GCNII's style: the rate an attribute, F.dropout told self.training."""

    def __init__(self):
        super().__init__()
        self.fc, self.dropout = nn.Linear(4, 4), 0.5

    def forward(self, x):
        return self.fc(F.dropout(x, self.dropout, self.training))


def test_a_dropout_forward_calls_as_a_function() -> None:
    model = _FunctionalDropout().eval()
    assert in_eval(model, fx.symbolic_trace(model)) == (
        "self.eval()  # forward in eval mode: no dropout in forward's F.dropout",)


def test_the_examples_say_it() -> None:
    gat = (EXAMPLES / "gat" / "generated.py").read_text()
    assert "# forward in eval mode: no dropout in self.gat_layers[i].feat_drop and\n" in gat
    assert "self.eval()  # forward in eval mode: no dropout in self.dropout\n" in (
        EXAMPLES / "gcn" / "generated.py").read_text()
    assert "self.eval()  # forward in eval mode: no dropout in forward's F.dropout\n" in (
        EXAMPLES / "gcnii" / "generated.py").read_text()
    assert f"        {NEITHER[0]}\n" in (EXAMPLES / "rgcn_hetero" / "generated.py").read_text()

"""forward's results whose node rows are on another axis than the first (issue 35, item 9;
gnn_codegen/lower/row_axis.py, tests/models/row_axis.py): `h.unsqueeze(0)` (a batch of one graph),
`h.t()`, and `h.squeeze(0)` of many rows (which squeezes nothing). The generated inference
computes the rows first and moves them as forward does, equal to forward for all nodes, for
nodes= (the requested rows on the moved axis) and out of core."""

from __future__ import annotations

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import generated_model, import_source
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/row_axis.py"

RETURNS = {
    "DGIEncoderBatchOfOne": ['batches.result(h,nodes=nodes,name="result_1").unsqueeze(0).clone()',
                             # the squeeze(0) of rows: written without it
                             "return_graph_conv_aggregate(self.conv2,block,feat1)h=batches.map("],
    "FeaturesByNode": ["returnbatches.result(out,nodes=nodes).transpose(0,1)"],
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions())


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_rows_on_another_axis_are_generated_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    method = "".join(generated.source.split("    @torch.no_grad()\n")[1].split("# --- gnn-codegen runtime")[0].split())
    for line in RETURNS[name]:
        assert line in method, line
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_nodes_selects_rows_on_the_moved_axis(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate("FeaturesByNode", monkeypatch)
    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    g, x = dgl.rand_graph(30, 90), torch.randn(30, 5)
    nodes = torch.tensor([7, 0, 7])
    got = model.inference(g, x, batch_size=4, device="cpu", nodes=nodes)
    assert got.shape == (3, 3) and torch.allclose(got, model(g, x)[:, nodes], atol=1e-5)


def test_rows_moved_and_then_mixed_stay_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.UnsupportedOperationError) as info:
        _generate("GramOfNodes", monkeypatch)
    assert str(info.value).startswith("tests/models/row_axis.py:46 (`return h.t() @ h`): ")

"""Models written the way DGL's examples write them (tests/models/in_the_wild.py) that once gave
a silently wrong or crashing module: the ones layer-wise inference can compute exactly are
exact now (the refused ones are snapshotted in tests/test_refusals.py)."""

from __future__ import annotations

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

# pytest -m long (CI runs it after the README's quick command): the third-party models, each
# generated and checked in full
pytestmark = pytest.mark.long

MODEL = "tests/models/in_the_wild.py"

EXACT = {
    # x.add_(bias) in ElementWiseLinear, F.relu(h, inplace=True), the model's own GATConv
    "ArxivGAT": GenerateOptions(init='{"in_feats": 8, "n_classes": 3, "n_hidden": 4, "n_layers": 3, "n_heads": 2}',
                                feat_dims="feat=8"),
    # its own GATConv with use_symmetric_norm reads graph.out_degrees(), and edge_softmax cannot
    # be traced into: called on each block with the whole graph's out-degrees (issue 35, 6d)
    "arxiv_gat_symmetric": GenerateOptions(),
    # dgl.nn.GATConv((in, in), ...) called with (h, h_dst): the pair is kept
    "products_gat": GenerateOptions(feat_dims="x=8"),
    # nn.ReLU(inplace=True) also changing a second name's tensor, mul_, clamp_, out=
    "InPlaceEverywhere": GenerateOptions(),
    # an in-place activation on rows the next layer reads in place: it gets a copy
    "ActivationInPlaceOnStoredRows": GenerateOptions(),
    # user modules the probe refuses on blocks, traced into: graph.ndata written in a layer
    # (the old gcn example), and MixHop's three rounds of update_all in one module
    "NdataGCN": GenerateOptions(init='{"in_feats": 8, "n_hidden": 6, "n_classes": 4}', feat_dims="features=8"),
    "MixHop": GenerateOptions(init='{"in_dim": 8, "hid_dim": 6, "out_dim": 4}', feat_dims="feats=8"),
    # DGL's DAGNN: k rounds then a gate over the rounds; its .squeeze() is written with the dim it
    # squeezes, and its NaN for nodes without in-edges (degree ** -0.5) is matched place for place
    "DAGNN": GenerateOptions(init='{"k": 3, "in_dim": 8, "hid_dim": 6, "out_dim": 4}'),
    # ARMA: K stacks of T rounds with skip terms added in place, averaged with
    # torch.stack(output).mean(dim=0), written with the nodes' rows first
    "ARMA4NC": GenerateOptions(init='{"in_dim": 8, "hid_dim": 6, "out_dim": 4}', feat_dims="feats=8"),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:{name}", EXACT[name])
    result = check(generated, num_nodes=211, batch_sizes=(1, 13, 211))
    assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_in_place_steps_are_written_as_values() -> None:
    source = generate_all(f"{MODEL}:InPlaceEverywhere").source.split("def inference")[1].split("# --- gnn")[0]
    assert ".mul(self.scale)" in source and ".clamp(min=-1.0)" in source
    assert "out=" not in source and "mul_(" not in source


def test_an_in_place_module_gets_a_copy_of_rows_something_else_holds() -> None:
    source = generate_all(f"{MODEL}:ActivationInPlaceOnStoredRows").source.split("def inference")[1]
    assert "self.act(h1_dst.clone())" in source


def test_a_module_refused_on_blocks_is_traced_into_as_rounds() -> None:
    """MixHop's module propagates three times, and its output reads two of them: traced into,
    each round it needs is a layer of its own."""
    generated = generate_all(f"{MODEL}:MixHop", EXACT["MixHop"])
    method = generated.source.split("def inference")[1].split("# --- gnn")[0]
    assert method.count("block.update_all(fn.copy_u(\"h\", \"m\"), fn.sum(\"m\", \"h\"))") == 2
    assert "self.conv(" not in method and "Layer 2 of 2" in method


def test_squeeze_names_its_dims_and_nan_is_matched() -> None:
    generated = generate_all(f"{MODEL}:DAGNN", EXACT["DAGNN"])
    assert "torch.matmul(S, H).squeeze(1)" in generated.source
    assert any("returns NaN" in note for note in generated.notes)

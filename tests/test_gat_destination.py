"""GATConv's attention term of its destination rows, er = (fc(h_dst) * attn_r).sum(-1), made
from the layer input's rows through fc's weight folded with attn_r (templates/convs.py.j2's
_gat_conv_destination, issue 40): fc is no longer run on every batch's destination rows of
every relation only to form er. Equal to DGL's GATConv forward on random blocks (one head and
four, one width and a pair, with and without residual and bias), the fold made once per
weight, and the generated inference equal to forward where a GATConv is given destination
rows of their own."""

from __future__ import annotations

import gc

import dgl
import dgl.nn as dglnn
import pytest
import torch

from gnn_codegen.hetero_pipeline import render_hetero_helpers
from gnn_codegen.pipeline import VERSION, GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

RELATIONS = [("author", "writes", "paper"), ("paper", "cites", "paper"), ("field", "rev_has_topic", "paper")]


def _helpers() -> dict:
    namespace: dict = {}
    helpers = render_hetero_helpers({"relation_sources"}, VERSION, frozenset({"gat"}))
    exec("import dgl\nimport torch\n" + helpers.split("# --- gnn-codegen runtime")[0], namespace)
    return namespace


def _block(seed: int, sources: int = 50, destinations: int = 20, edges: int = 160) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, sources, (edges,), generator=gen)
    dst = torch.randint(0, destinations, (edges,), generator=gen)
    return dgl.create_block((src, dst), num_src_nodes=sources, num_dst_nodes=destinations)


def _gat(in_feats, out_feats: int, heads: int, **kwargs) -> dglnn.GATConv:
    conv = dglnn.GATConv(in_feats, out_feats, heads, allow_zero_in_degree=True, **kwargs).eval()
    with torch.no_grad():  # biases and attention off their initial values
        for p in conv.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return conv


class _FcRows:
    """The rows each Linear of `convs` named fc, fc_src or fc_dst is run on, while entered."""

    def __init__(self, *convs: dglnn.GATConv) -> None:
        self.rows: list[int] = []
        self.fcs = [getattr(c, n) for c in convs for n in ("fc", "fc_src", "fc_dst") if hasattr(c, n)]

    def __enter__(self) -> "_FcRows":
        self.handles = [fc.register_forward_hook(lambda m, i, o: self.rows.append(len(i[0]))) for fc in self.fcs]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self.handles:
            handle.remove()


@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("in_feats", [7, (6, 5)], ids=["fc", "fc_src_fc_dst"])
@pytest.mark.parametrize("residual, bias", [(False, True), (True, True), (True, False), (False, False)])
def test_equals_dgls_gatconv_on_a_block(heads: int, in_feats, residual: bool, bias: bool) -> None:
    torch.manual_seed(heads)
    helpers = _helpers()
    conv = _gat(in_feats, 3, heads, residual=residual, bias=bias)  # a residual through res_fc
    block = _block(heads)
    in_src, in_dst = (in_feats, in_feats) if isinstance(in_feats, int) else in_feats
    h_src = torch.randn(block.num_src_nodes(), in_src)
    h_dst = h_src[: block.num_dst_nodes()] if in_src == in_dst else torch.randn(block.num_dst_nodes(), in_dst)
    expected = conv(block, (h_src, h_dst))
    feat, el = helpers["_relation_source"](conv, h_src)
    with _FcRows(conv) as fc:
        er = helpers["_gat_conv_destination"](conv, h_dst)
        got = helpers["_gat_conv_attention"](conv, block, feat, el, er, h_dst)
    assert fc.rows == []  # no projection of the destination rows
    assert got.shape == expected.shape and torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_residual_of_identity_reads_the_destination_rows_themselves() -> None:
    torch.manual_seed(3)
    helpers = _helpers()
    conv = _gat(12, 3, 4, residual=True)  # in == heads x out: res_fc is Identity
    block = _block(5)
    h = torch.randn(block.num_src_nodes(), 12)
    feat, el = helpers["_relation_source"](conv, h)
    er = helpers["_gat_conv_destination"](conv, h[: block.num_dst_nodes()])
    got = helpers["_gat_conv_attention"](conv, block, feat, el, er, h[: block.num_dst_nodes()])
    assert torch.allclose(got, conv(block, h), rtol=1e-5, atol=1e-5)


def _hetero(seed: int) -> tuple[dglnn.HeteroGraphConv, dgl.DGLGraph, dict]:
    torch.manual_seed(seed)
    counts = {"paper": 30, "author": 25, "field": 6}
    data = {rel: (torch.randint(0, counts[rel[0]], (90,)), torch.randint(0, counts["paper"], (90,)))
            for rel in RELATIONS}
    g = dgl.heterograph(data, num_nodes_dict=counts)
    conv = dglnn.HeteroGraphConv({r: _gat(8, 4, 4, residual=r == "cites") for _, r, _ in RELATIONS})
    inputs = {t: torch.randn(n, 8) for t, n in counts.items()}
    return conv, g, inputs


def test_the_relations_helper_projects_no_destination_rows() -> None:
    """Every batch called fc (fc_dst) on its destination rows once per GATConv relation: now
    never; the source rows are projected once per node, before the batches (map_sources)."""
    helpers = _helpers()
    conv, g, inputs = _hetero(7)
    expected = conv(g, inputs)["paper"]
    sources = {rel: helpers["_relation_source"](conv.mod_dict[rel[1]], inputs[rel[0]]) for rel in RELATIONS}
    with _FcRows(*conv.mod_dict.values()) as fc:
        got = helpers["_hetero_conv_sources"](conv, g, sources, inputs["paper"])
    assert fc.rows == []
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_the_fold_is_made_once_for_the_same_weights() -> None:
    helpers = _helpers()
    folds = helpers["_once_for_values"]
    conv = _gat(8, 4, 4)
    h = torch.randn(10, 8)

    def folded() -> torch.Tensor:
        return helpers["_gat_fold"](conv.fc, conv.attn_r)

    first = folded()
    assert folded() is first and len(folds) == 1  # every later batch: the same tensor
    with torch.no_grad():
        conv.attn_r.mul_(2.0)  # changed in place: folded again, and right
    again = folded()
    assert again is not first and torch.allclose(again, 2 * first)
    with torch.no_grad():
        conv.fc.weight.mul_(-1.0)
    assert torch.allclose(folded(), -again)
    with torch.no_grad():  # (a result with gradients would hold the weights)
        expected = (conv.fc(h).view(-1, 4, 4) * conv.attn_r).sum(-1, keepdim=True)
        assert torch.allclose(helpers["_gat_conv_destination"](conv, h), expected, rtol=1e-5, atol=1e-6)
    del conv
    gc.collect()
    assert len(folds) == 0  # nothing kept alive by the cache


def test_one_helper_computes_the_fold_and_the_basis_once() -> None:
    """GATConv's fold and GraphConv relations' basis of weights are both computed once for
    the same tensors by one rendered helper, _once_for, which keeps each apart by what it
    computes; it is in a module only where one of them is."""
    from gnn_codegen.hetero_pipeline import hetero_helpers

    both = hetero_helpers({"relation_sources"}, frozenset({"gat", "graph_conv"}), weight_basis=True)
    assert both.count("def _once_for(") == 1 and "_gat_folds" not in both and "_weight_bases" not in both
    assert "_once_for(" in hetero_helpers({"relation_sources"}, frozenset({"graph_conv"}), weight_basis=True)
    assert "_once_for" not in hetero_helpers({"relation_sources"}, frozenset({"graph_conv"}))  # no basis sought
    assert "_once_for(" in hetero_helpers({"relation_sources"}, frozenset({"gat"}))
    assert "_once_for" not in hetero_helpers({"hetero_conv"}, frozenset({"graph_conv"}))
    namespace: dict = {}
    exec("import dgl\nimport torch\n" + both, namespace)
    weight = torch.randn(4, 3)
    once, calls = namespace["_once_for"], []

    def first(tensors):
        calls.append("first")
        return 1

    def second(tensors):
        calls.append("second")
        return 2

    assert [once((weight,), first), once((weight,), second), once((weight,), first)] == [1, 2, 1]
    assert calls == ["first", "second"]
    weight.data = torch.randn(4, 3)  # other storage, the same version counter
    assert once((weight,), first) == 1 and calls == ["first", "second", "first"]


@pytest.mark.parametrize("fc", [torch.nn.Linear(8, 16, bias=True), torch.nn.Sequential(torch.nn.Linear(8, 16))],
                         ids=["with_bias", "not_a_linear"])
def test_an_fc_that_cannot_be_folded_is_run_as_forward_runs_it(fc: torch.nn.Module) -> None:
    torch.manual_seed(2)
    helpers = _helpers()
    conv = _gat(8, 4, 4)
    conv.fc = fc
    h = torch.randn(10, 8)
    assert helpers["_gat_fold"](conv.fc, conv.attn_r) is None
    expected = (fc(h).view(-1, 4, 4) * conv.attn_r).sum(-1, keepdim=True)
    assert torch.allclose(helpers["_gat_conv_destination"](conv, h), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["GATOfTwoInputs", "GATOfTwoInputsOneHead"])
def test_destination_rows_of_their_own_are_folded_and_equal_forward(name: str, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"tests/models/gat_destination.py:{name}", GenerateOptions())
    assert generated.verification is not None and generated.verification.ok
    method = generated.source.split("def inference(")[1].split("# --- gnn-codegen")[0]
    assert "_gat_conv_destination(" in method and "_gat_conv_attention(" in method
    for seed, batch_sizes in enumerate([(7, 1000), (64,)]):
        result = check(generated, num_nodes=300, seed=seed + 1, batch_sizes=batch_sizes)
        assert result.ok

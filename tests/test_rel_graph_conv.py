"""RelGraphConv written out (write_out.py, convs.py.j2's rel_graph_conv): each relation's weight
applied to the sum of a destination's in-edges of that relation, not to every edge's message
(issue 40). The helper equals DGL's module on blocks for every regularizer and option, and the
generated inference of DGL's rgcn example form takes it and equals forward."""

from __future__ import annotations

import dgl
import dgl.nn as dglnn
import pytest
import torch

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from gnn_codegen.trace.write_out import HELPERS
from tests.cases import REPO

rel_graph_conv = HELPERS["rel_graph_conv"]


def _block(num_src: int = 50, num_dst: int = 20, edges: int = 200, seed: int = 0) -> dgl.DGLGraph:
    """A block whose destinations are its first sources, some without in-edges."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_src, (edges,), generator=gen)
    dst = torch.randint(0, num_dst - 3, (edges,), generator=gen)  # the last 3 without in-edges
    return dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=num_dst)


@pytest.mark.parametrize(
    "options",
    [
        {"regularizer": None},
        {"regularizer": "basis", "num_bases": 2},
        {"regularizer": "bdd", "num_bases": 2},
        {"regularizer": "basis", "num_bases": 3, "self_loop": False, "bias": False},
        {"regularizer": None, "layer_norm": True, "activation": torch.relu},
    ],
)
@pytest.mark.parametrize("norm", ["none", "per_edge", "per_feature"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_helper_equals_relgraphconv_on_a_block(options: dict, norm: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    in_size, out_size, num_rels = 6, 8, 4
    conv = dglnn.RelGraphConv(in_size, out_size, num_rels, **options).to(dtype).eval()
    with torch.no_grad():  # biases off zero
        for p in conv.parameters():
            p.add_(0.1 * torch.randn_like(p))
    block = _block()
    feat = torch.randn(block.num_src_nodes(), in_size).to(dtype)
    etypes = torch.randint(0, num_rels, (block.num_edges(),))
    norms = {"none": None, "per_edge": torch.rand(block.num_edges(), 1).to(dtype),
             "per_feature": torch.rand(block.num_edges(), out_size).to(dtype)}
    with torch.no_grad():
        expected = conv(block, feat, etypes, norms[norm])
        got = rel_graph_conv(conv, block, feat, feat[: block.num_dst_nodes()], etypes, norms[norm])
    tolerance = 3e-2 if dtype == torch.bfloat16 else 1e-5
    assert torch.allclose(got.float(), expected.float(), atol=tolerance, rtol=tolerance)


def test_edge_types_out_of_range_are_refused() -> None:
    conv = dglnn.RelGraphConv(4, 4, 3)
    block = _block()
    feat = torch.randn(block.num_src_nodes(), 4)
    etypes = torch.full((block.num_edges(),), 3)
    with pytest.raises(IndexError, match=r"edge types must be in \[0, 3\)"):
        rel_graph_conv(conv, block, feat, feat[: block.num_dst_nodes()], etypes)


def test_the_rgcn_example_form_takes_the_helper_and_equals_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    """DGL's rgcn example (generated_examples/rgcn): the sums per relation, the sources read in
    place, batch sizes that do and do not divide the node count."""
    monkeypatch.chdir(REPO)
    generated = generate_all(
        "generated_examples/rgcn/model.py:RGCN",
        GenerateOptions(init='{"num_nodes": 120, "h_dim": 8, "out_dim": 4, "num_rels": 5, "num_bases": 2}'),
    )
    code = " ".join(generated.source.split())
    assert "_rel_graph_conv( self.conv1, block, emb, emb_dst, etypes=etype, norm=norm )" in code
    assert "self.conv1(block" not in code and "in_place=True" in code
    assert check(generated, num_nodes=120, seed=3, batch_sizes=(7, 120)).ok

"""The sum over a block's in-edges that GraphConv's and SAGEConv's written-out parts share
(templates/convs.py.j2's _in_edge_sum, issue 40): on a CPU, for float rows and a block that
keeps its in-edges by destination (CSC), torch's embedding_bag over them, else DGL's own
copy_u_sum / u_mul_e_sum. Equal to DGL's sums (to the bit without weights), whatever order
the block's edge IDs are in, with the in-degrees of the CSC."""

from __future__ import annotations

import dgl
import pytest
import torch
from torch.overrides import TorchFunctionMode

from gnn_codegen.trace.write_out import HELPERS

in_edge_sum = HELPERS["in_edge_sum"]


class _Bags(TorchFunctionMode):
    """Counts torch's embedding_bag calls."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.nn.functional.embedding_bag:
            self.count += 1
        return func(*args, **(kwargs or {}))


def _block(idtype: torch.dtype = torch.int64, seed: int = 0, formats: list[str] | None = None) -> dgl.DGLGraph:
    """A block of 30 destination nodes (some without in-edges) from 50 sources, made from
    unsorted COO edges: its CSC's edge IDs are a permutation, not 0, 1, 2, ..."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, 50, (120,), generator=gen)
    dst = torch.randint(0, 25, (120,), generator=gen)
    block = dgl.create_block((src, dst), num_src_nodes=50, num_dst_nodes=30, idtype=idtype)
    return block if formats is None else block.formats(formats)


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_dgls_sum_to_the_bit(idtype: torch.dtype, dtype: torch.dtype) -> None:
    block = _block(idtype)
    feat = torch.randn(50, 7, dtype=dtype)
    with _Bags() as bags:
        got, in_degrees = in_edge_sum(block, feat)
    assert bags.count == 1
    assert torch.equal(got, dgl.ops.copy_u_sum(block, feat))
    assert torch.equal(in_degrees, block.in_degrees())
    assert not got[25:].any()  # no in-edges: zeros, as DGL's


@pytest.mark.parametrize("shape", [(120,), (120, 1)])
def test_a_weight_per_edge_follows_the_edge_ids(shape: tuple[int, ...]) -> None:
    block = _block(seed=1)
    feat, weight = torch.randn(50, 6), torch.rand(*shape)
    with _Bags() as bags:
        got, _ = in_edge_sum(block, feat, edge_weight=weight)
    assert bags.count == 1
    expected = dgl.ops.u_mul_e_sum(block, feat, weight.view(-1, 1))
    assert torch.allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_a_weight_per_source_node_is_each_edge_s_source_s() -> None:
    block = _block(seed=2)
    feat, norm = torch.randn(50, 5), torch.rand(50)
    got, _ = in_edge_sum(block, feat, source_weight=norm)
    src, _ = block.edges()
    expected = dgl.ops.u_mul_e_sum(block, feat, norm[src].view(-1, 1))
    assert torch.allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", ["no csc", "rows of 3 dimensions", "a weight per feature",
                                  "a weight of 3 dimensions"])
def test_what_embedding_bag_does_not_take_is_dgls_sum(case: str) -> None:
    block = _block(seed=3, formats=["coo"] if case == "no csc" else None)
    feat = torch.randn(50, 2, 3) if case == "rows of 3 dimensions" else torch.randn(50, 4)
    weight = None
    if case == "a weight per feature":
        weight = torch.rand(120, 4)
    elif case == "a weight of 3 dimensions":  # DGL's result then has 3 too
        weight = torch.rand(120, 1, 1)
    with _Bags() as bags:
        got, in_degrees = in_edge_sum(block, feat, edge_weight=weight)
    assert bags.count == 0 and in_degrees is None
    expected = dgl.ops.copy_u_sum(block, feat) if weight is None else dgl.ops.u_mul_e_sum(block, feat, weight)
    # DGL's sum over COO adds in no fixed order (its threads'): equal to rounding
    assert got.shape == expected.shape and torch.allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_a_weight_of_another_dtype_is_dgls_error() -> None:
    with pytest.raises(dgl.DGLError, match="data type"):
        in_edge_sum(_block(seed=4), torch.randn(50, 4), edge_weight=torch.rand(120, 1, dtype=torch.float64))

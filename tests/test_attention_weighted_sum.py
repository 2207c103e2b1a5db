"""The helper GATConv's written-out form aggregates with (templates/helpers.py.j2) equals
dgl.ops.u_mul_e_sum, which it replaces on the CPU: on graphs whose edge IDs are not in CSC
order, with nodes without in-edges, int32 and int64 IDs, float32 and float64, empty, and in
products over slices of the destination nodes."""

from __future__ import annotations

import subprocess
import sys

import dgl
import pytest
import torch

from gnn_codegen.verify.harness import import_source
from tests.cases import CASES_BY_NAME, EXAMPLES, REPO, generate_case

GAT_EXAMPLE = EXAMPLES / "gat" / "generated.py"


@pytest.fixture(scope="module")
def weighted_sum():
    generated = generate_case(CASES_BY_NAME["gat"])
    module = import_source(generated.source, generated.loaded.path.parent)
    return module._attention_weighted_sum


def _graph(num_src: int, num_dst: int, num_edges: int, idtype: torch.dtype, seed: int):
    """A block whose edges are numbered in random order: its CSC's edge IDs are a permutation."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, max(num_src, 1), (num_edges,), generator=gen)
    dst = torch.randint(0, max(num_dst // 2, 1), (num_edges,), generator=gen)  # half without in-edges
    return dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=num_dst, idtype=idtype)


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("sizes", [(97, 31, 400), (50, 50, 0), (0, 0, 0), (13, 7, 1)])
@pytest.mark.parametrize("rows_per_product", [65536, 4])
def test_equals_dgl(weighted_sum, idtype, dtype, sizes, rows_per_product) -> None:
    num_src, num_dst, num_edges = sizes
    block = _graph(num_src, num_dst, num_edges, idtype, seed=num_edges)
    if num_edges > 1:
        assert not torch.equal(block.adj_tensors("csc")[2], torch.arange(num_edges, dtype=idtype))
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(num_src, 3, 5, generator=gen, dtype=dtype)
    a = torch.rand(num_edges, 3, 1, generator=gen, dtype=dtype)
    expected = dgl.ops.u_mul_e_sum(block, h, a)
    actual = weighted_sum(block, h, a, rows_per_product)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=1e-6, rtol=1e-5)


def test_rows_not_contiguous(weighted_sum) -> None:
    block = _graph(40, 20, 150, torch.int64, seed=3)
    rows = torch.randn(40, 2, 12)[:, :, ::2]
    a = torch.rand(150, 2, 1)
    expected = dgl.ops.u_mul_e_sum(block, rows.contiguous(), a)
    torch.testing.assert_close(weighted_sum(block, rows, a), expected, atol=1e-6, rtol=1e-5)


def test_warns_nothing() -> None:
    """torch says once per process that sparse CSR tensors are in beta: not the user's
    business. In a fresh interpreter, where the warning has not been given yet."""
    code = (
        "import importlib.util, warnings, dgl, torch\n"
        f"spec = importlib.util.spec_from_file_location('gat', {str(GAT_EXAMPLE)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "block = dgl.create_block((torch.tensor([0, 1, 2]), torch.tensor([0, 0, 1])), 3, 2)\n"
        "warnings.simplefilter('error')\n"
        "module._attention_weighted_sum(block, torch.randn(3, 2, 4), torch.rand(3, 2, 1))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr


def test_a_graph_made_from_csc_without_edge_ids(weighted_sum) -> None:
    """dgl.graph(("csc", (indptr, indices, []))): DGL gives no edge IDs, the edges are in the
    CSC's order (as _in_edge_sum reads them); the helper raised an MKL error there."""
    indptr, indices = torch.tensor([0, 2, 3, 5, 5]), torch.tensor([0, 1, 2, 0, 1])
    g = dgl.graph(("csc", (indptr, indices, torch.tensor([], dtype=torch.int64))))
    h, a = torch.randn(4, 2, 3), torch.randn(5, 2, 1)
    assert torch.allclose(weighted_sum(g, h, a, 2), dgl.ops.u_mul_e_sum(g, h, a), atol=1e-6)

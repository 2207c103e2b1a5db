"""HeteroGraphConv's sum across relations in the generated runtime (hetero_batches.py.j2's
_relation_sum, issue 40): added one relation after another rather than stacked, DGL's
aggregate (to the bit for two or three relations), never written into a relation's own result,
DGL's own for other aggregates."""

from __future__ import annotations

import dgl.nn as dglnn
import pytest
import torch

from gnn_codegen.hetero_pipeline import render_hetero_helpers
from gnn_codegen.pipeline import VERSION


def _relation_sum():
    """The helpers a heterogeneous layer calls, above the runtime's banner (they need no more
    than dgl and torch)."""
    namespace: dict = {}
    helpers = render_hetero_helpers({"relation_sources"}, VERSION).split("# --- gnn-codegen runtime")[0]
    exec("import dgl\nimport torch\n" + helpers, namespace)
    return namespace["_relation_sum"]


def _conv(aggregate: str) -> dglnn.HeteroGraphConv:
    return dglnn.HeteroGraphConv({r: dglnn.GraphConv(4, 4) for r in ("a", "b")}, aggregate=aggregate)


@pytest.mark.parametrize("count", [2, 3, 5])
@pytest.mark.parametrize("shape", [(300, 349), (70, 4, 16)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_sum_is_dgls_without_stacking(count: int, shape: tuple, dtype: torch.dtype,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    relation_sum, conv = _relation_sum(), _conv("sum")
    outputs = [torch.randn(shape, dtype=dtype) for _ in range(count)]
    before = [o.clone() for o in outputs]
    expected = conv.agg_fn(outputs, "paper")
    with monkeypatch.context() as patch:  # the path taken: no stack of every relation's rows
        patch.setattr(torch, "stack", lambda *a, **k: pytest.fail("stacked"))
        total = relation_sum(conv, outputs, "paper")
    if count <= 3:  # torch's sum over a stack of more may add its rows in another order
        assert torch.equal(total, expected)
    assert torch.allclose(total, expected, rtol=1e-6, atol=1e-6)
    assert all(torch.equal(o, b) for o, b in zip(outputs, before))  # no result written into
    assert all(total.data_ptr() != o.data_ptr() for o in outputs)


@pytest.mark.parametrize("aggregate", ["mean", "max", "stack"])
def test_other_aggregates_and_one_relation_are_dgls_own(aggregate: str) -> None:
    relation_sum = _relation_sum()
    outputs = [torch.randn(10, 3) for _ in range(3)]
    assert torch.equal(relation_sum(_conv(aggregate), outputs, "t"), _conv(aggregate).agg_fn(outputs, "t"))
    one = [torch.randn(10, 3)]
    total = relation_sum(_conv("sum"), one, "t")
    assert torch.equal(total, one[0]) and total.data_ptr() != one[0].data_ptr()

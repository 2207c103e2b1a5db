"""HeteroGraphConv over GraphConvs whose weight is their last step (DGL's rgcn-hetero layer:
GraphConv(norm="right", weight=False) per relation, its weight from mod_kwargs; or a GraphConv's
own weight where it widens), summed across relations: the generated helper
(hetero_convs.py.j2's _hetero_conv_sources, issue 40) makes one product for all of them, the
relations' normed sums side by side times their weights stacked, where DGL makes one per
relation and adds the results. Equal to DGL's forward within rounding; relations with a bias,
an activation or a weight applied first keep their own path."""

from __future__ import annotations

import dgl
import dgl.nn as dglnn
import pytest
import torch
from torch.overrides import TorchFunctionMode

from gnn_codegen.hetero_pipeline import render_hetero_helpers
from gnn_codegen.pipeline import VERSION

PAPERS = 60
RELATIONS = [("author", "writes", "paper"), ("paper", "cites", "paper"), ("field", "rev_has_topic", "paper")]


def _helpers() -> dict:
    namespace: dict = {}
    helpers = render_hetero_helpers({"relation_sources"}, VERSION).split("# --- gnn-codegen runtime")[0]
    exec("import dgl\nimport torch\n" + helpers, namespace)
    return namespace


def _graph(seed: int = 0) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    counts = {"paper": PAPERS, "author": 40, "field": 7}
    data = {rel: (torch.randint(0, counts[rel[0]], (150,), generator=gen),
                  torch.randint(0, counts["paper"], (150,), generator=gen)) for rel in RELATIONS}
    return dgl.heterograph(data, num_nodes_dict=counts)


class _Products(TorchFunctionMode):
    """Counts the matrix products made on the papers' rows (not those on weights alone)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.inner = []  # each product's inner size (K)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        products = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm)
        if func in products and args[0].dim() == 2 and len(args[0]) == PAPERS:
            self.count += 1
            self.inner.append(args[1].shape[0])
        return func(*args, **(kwargs or {}))


def _run(conv: dglnn.HeteroGraphConv, g: dgl.DGLGraph, width: int, mod_kwargs: dict | None,
         dtype: torch.dtype = torch.float32, inner: list | None = None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """DGL's forward on g for papers, and the helper's, given each relation's source rows as
    map_sources makes them; and how many products the helper made."""
    helpers = _helpers()
    inputs = {t: torch.randn(g.num_nodes(t), width, dtype=dtype) for t in g.ntypes}
    conv = conv.to(dtype)
    mod_kwargs = {e: {k: v.to(dtype) for k, v in kw.items()} for e, kw in (mod_kwargs or {}).items()}
    expected = conv(g, inputs, mod_kwargs=mod_kwargs)["paper"]
    sources = {}
    for rel in RELATIONS:
        mod = conv.mod_dict[rel[1]]
        weight = mod_kwargs.get(rel[1], {}).get("weight")
        sources[rel] = helpers["_relation_source"](mod, inputs[rel[0]], g.out_degrees(etype=rel), weight)
    with _Products() as products:
        got = helpers["_hetero_conv_sources"](conv, g, sources, mod_kwargs=mod_kwargs)
    if inner is not None:
        inner.extend(products.inner)
    return got, expected, products.count


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weights_from_mod_kwargs_are_one_product(dtype: torch.dtype) -> None:
    """DGL's rgcn-hetero layer: GraphConv(norm="right", weight=False) per relation."""
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 13, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS})
    weights = {r: {"weight": torch.randn(8, 13)} for _, r, _ in RELATIONS}
    got, expected, products = _run(conv, _graph(), 8, weights, dtype)
    assert products == 1
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    assert got.dtype == expected.dtype and torch.allclose(got, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("norm", ["both", "right", "none", "left"])
def test_own_weights_where_they_widen(norm: str) -> None:
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(5, 9, norm=norm, bias=False) for _, r, _ in RELATIONS})
    got, expected, products = _run(conv, _graph(1), 5, None)
    assert products == 1
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_bias_an_activation_or_a_narrowing_weight_keeps_its_relation_apart() -> None:
    """writes has a bias, cites an activation: each is its own product after the sum; the
    other relation alone is one more. Narrowing relations are weighted per source row."""
    mods = {"writes": dglnn.GraphConv(6, 10, norm="right"),
            "cites": dglnn.GraphConv(6, 10, bias=False, activation=torch.relu),
            "rev_has_topic": dglnn.GraphConv(6, 10, bias=False)}
    got, expected, products = _run(dglnn.HeteroGraphConv(mods), _graph(2), 6, None)
    assert products == 3
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)
    narrowing = dglnn.HeteroGraphConv({r: dglnn.GraphConv(12, 3, bias=False) for _, r, _ in RELATIONS})
    got, expected, products = _run(narrowing, _graph(3), 12, None)
    assert products == 0  # weighted in _relation_source, once per node
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("aggregate", ["mean", "max"])
def test_other_aggregates_keep_a_product_per_relation(aggregate: str) -> None:
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(4, 7, bias=False) for _, r, _ in RELATIONS},
                                 aggregate=aggregate)
    got, expected, products = _run(conv, _graph(4), 4, None)
    assert products == len(RELATIONS)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bases", [1, 2])
def test_basis_decomposed_weights_multiply_only_the_bases(dtype: torch.dtype, bases: int) -> None:
    """DGL's rgcn-hetero with num_bases < relations: W_r = sum_b a_rb V_b, computed by forward
    (torch.matmul(coefficients, bases).view(-1, in, out)). The relations' sums are combined
    first: one product of K = bases x width, not relations x width."""
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 13, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS})
    torch.manual_seed(bases)
    coefficients, vectors = torch.randn(len(RELATIONS), bases, dtype=dtype), torch.randn(bases, 8 * 13, dtype=dtype)
    stacked = torch.matmul(coefficients, vectors).view(-1, 8, 13)  # rounded in dtype
    weights = {r: {"weight": w.squeeze(0)} for (_, r, _), w in zip(RELATIONS, torch.split(stacked, 1))}
    inner: list = []
    got, expected, products = _run(conv, _graph(5), 8, weights, dtype, inner)
    assert inner == [bases * 8]
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_weights_nearly_but_not_combinations_are_all_multiplied() -> None:
    """A weight off the others' span by more than roundings (here 1e-3) is its own term."""
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 13, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS})
    first, second = torch.randn(8, 13), torch.randn(8, 13)
    third = first + 0.5 * second + 1e-3 * torch.randn(8, 13)
    weights = {r: {"weight": w} for (_, r, _), w in zip(RELATIONS, (first, second, third))}
    inner: list = []
    got, expected, _ = _run(conv, _graph(6), 8, weights, torch.float32, inner)
    assert inner == [3 * 8]
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_one_weight_shared_by_relations_is_one_term() -> None:
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 13, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS})
    shared = torch.randn(8, 13)
    inner: list = []
    got, expected, _ = _run(conv, _graph(7), 8, {r: {"weight": shared} for _, r, _ in RELATIONS},
                            torch.float32, inner)
    assert inner == [8]
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)

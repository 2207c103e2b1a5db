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


def _helpers(weight_basis: bool = True) -> dict:
    """The helpers with the search for weights that are combinations of others (a model whose
    weights hold some when generated: relation_weights.py), or without it."""
    namespace: dict = {}
    helpers = render_hetero_helpers({"relation_sources"}, VERSION, weight_basis=weight_basis)
    helpers = helpers.split("# --- gnn-codegen runtime")[0]
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
        products = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.addmm)
        operands = args[1:] if func is torch.addmm else args  # addmm(bias, rows, weight)
        if func in products and operands[0].dim() == 2 and len(operands[0]) == PAPERS:
            self.count += 1
            self.inner.append(operands[1].shape[0])
        return func(*args, **(kwargs or {}))


def _run(conv: dglnn.HeteroGraphConv, g: dgl.DGLGraph, width: int, mod_kwargs: dict | None,
         dtype: torch.dtype = torch.float32, inner: list | None = None,
         added: dict | None = None, weight_basis: bool = True) -> tuple[torch.Tensor, torch.Tensor, int]:
    """DGL's forward on g for papers, and the helper's, given each relation's source rows as
    map_sources makes them; and how many products the helper made. added: the helper's
    linear=(W,) (the papers' rows times W) and bias=, added to forward's result as
    rgcn-hetero's layer adds its self-loop and bias."""
    helpers = _helpers(weight_basis)
    inputs = {t: torch.randn(g.num_nodes(t), width, dtype=dtype) for t in g.ntypes}
    conv = conv.to(dtype)
    mod_kwargs = {e: {k: v.to(dtype) for k, v in kw.items()} for e, kw in (mod_kwargs or {}).items()}
    expected = conv(g, inputs, mod_kwargs=mod_kwargs)["paper"]
    added = dict(added or {})
    if "linear" in added:
        added["linear"] = (inputs["paper"], *added["linear"])
        expected = expected + torch.matmul(*added["linear"])
    if added.get("bias") is not None:
        expected = expected + added["bias"]
    sources = {}
    for rel in RELATIONS:
        mod = conv.mod_dict[rel[1]]
        weight = mod_kwargs.get(rel[1], {}).get("weight")
        sources[rel] = helpers["_relation_source"](mod, inputs[rel[0]], g.out_degrees(etype=rel), weight)
    with _Products() as products:
        got = helpers["_hetero_conv_sources"](conv, g, sources, mod_kwargs=mod_kwargs, **added)
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


@pytest.mark.parametrize("bases", [1, 2])
def test_without_the_search_every_weight_is_multiplied(bases: int) -> None:
    """The helpers written for a model whose weights held no combinations when generated, given
    basis-decomposed weights: one product of K = relations x width, equal to forward."""
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 13, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS})
    torch.manual_seed(bases)
    stacked = torch.matmul(torch.randn(len(RELATIONS), bases), torch.randn(bases, 8 * 13)).view(-1, 8, 13)
    weights = {r: {"weight": w.squeeze(0)} for (_, r, _), w in zip(RELATIONS, torch.split(stacked, 1))}
    inner: list = []
    got, expected, products = _run(conv, _graph(5), 8, weights, inner=inner, weight_basis=False)
    assert inner == [len(RELATIONS) * 8] and "_find_weight_basis" not in _helpers(False)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


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


def _basis_layer(dtype: torch.dtype = torch.float32, width: int = 8, out: int = 13):
    """rgcn-hetero's relations (norm "right", no weight of their own) and their weights mixed
    from two bases, as its forward hands them to mod_kwargs."""
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(width, out, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS})
    coefficients, vectors = torch.randn(len(RELATIONS), 2, dtype=dtype), torch.randn(2, width * out, dtype=dtype)
    stacked = torch.matmul(coefficients, vectors).view(-1, width, out)
    return conv, {r: {"weight": w.squeeze(0)} for (_, r, _), w in zip(RELATIONS, torch.split(stacked, 1))}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_self_loop_and_a_bias_join_the_one_product(dtype: torch.dtype) -> None:
    """rgcn-hetero's `h + torch.matmul(inputs_dst[ntype], self.loop_weight)` then `h + self.h_bias`:
    the destination rows beside the relations' sums, the loop weight under the bases, the
    bias by the same product (addmm): one product of K = (bases + 1) x width."""
    torch.manual_seed(11)
    conv, weights = _basis_layer(dtype)
    loop, bias = torch.randn(8, 13, dtype=dtype), torch.randn(13, dtype=dtype)
    inner: list = []
    got, expected, products = _run(conv, _graph(8), 8, weights, dtype, inner, {"linear": (loop,), "bias": bias})
    assert products == 1 and inner == [3 * 8]
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    assert got.dtype == expected.dtype and torch.allclose(got, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("bias", [torch.randn(1, 13), torch.randn(13, dtype=torch.float64), None])
def test_a_bias_the_product_cannot_take_is_added_as_forward_adds_it(bias: torch.Tensor | None) -> None:
    """A bias of shape (1, out), or of another dtype (forward's addition promotes), or none."""
    torch.manual_seed(12)
    conv, weights = _basis_layer()
    got, expected, products = _run(conv, _graph(9), 8, weights, torch.float32, None,
                                   {"linear": (torch.randn(8, 13),), "bias": bias})
    assert products == 1
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_terms_beside_relations_of_their_own_are_added_after_the_sum() -> None:
    """No relation's weight is its last step (each has an activation): no product to join;
    the self-loop and bias are added after DGL's sum, as forward adds them: the same bits."""
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(6, 10, bias=False, activation=torch.tanh)
                                  for _, r, _ in RELATIONS})
    loop, bias = torch.randn(6, 10), torch.randn(10)
    got, expected, products = _run(conv, _graph(10), 6, None, torch.float32, None,
                                   {"linear": (loop,), "bias": bias})
    assert products == len(RELATIONS) + 1
    assert torch.equal(got, expected)


class _Solves(TorchFunctionMode):
    """Counts the least-squares solves (the basis's coefficients, _find_weight_basis)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += func is torch.linalg.lstsq
        return func(*args, **(kwargs or {}))


def test_the_basis_is_found_once_for_the_same_weights() -> None:
    """Every batch of a layer's call is given the same weights: their basis is found once (it
    was found per batch: up to 0.6 s per layer with torch's default threads), again for
    weights changed in place or for other tensors of the same values."""
    helpers = _helpers()
    torch.manual_seed(13)
    conv, weights = _basis_layer()
    g = _graph(11)
    inputs = {t: torch.randn(g.num_nodes(t), 8) for t in g.ntypes}
    sources = {rel: inputs[rel[0]] for rel in RELATIONS}

    def batches(mod_kwargs: dict, count: int = 3) -> tuple[int, torch.Tensor]:
        with _Solves() as solves:
            results = [helpers["_hetero_conv_sources"](conv, g, sources, mod_kwargs=mod_kwargs) for _ in range(count)]
        assert all(torch.equal(r, results[0]) for r in results)
        return solves.count, results[0]

    expected = conv(g, inputs, mod_kwargs=weights)["paper"]
    solves, got = batches(weights)
    assert solves == 1 and torch.allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert batches(weights)[0] == 0  # the next layer call with the same weights
    with torch.no_grad():
        weights["cites"]["weight"].mul_(2.0)  # its coefficients change
    solves, got = batches(weights)
    assert solves == 1
    assert torch.allclose(got, conv(g, inputs, mod_kwargs=weights)["paper"], rtol=1e-5, atol=1e-5)
    copies = {r: {"weight": kw["weight"].clone()} for r, kw in weights.items()}
    assert batches(copies)[0] == 1


def test_weights_given_other_storage_are_looked_at_again() -> None:
    """`w.data = ...` gives the same tensor other values and keeps its version counter: the
    basis found for the old values was used for the new ones (a wrong result, silently);
    the helper that computes it once (_once_for) also compares each tensor's storage,
    shape, strides, device and dtype."""
    helpers = _helpers()
    torch.manual_seed(14)
    conv, weights = _basis_layer()
    g = _graph(12)
    inputs = {t: torch.randn(g.num_nodes(t), 8) for t in g.ntypes}
    sources = {rel: inputs[rel[0]] for rel in RELATIONS}
    helpers["_hetero_conv_sources"](conv, g, sources, mod_kwargs=weights)
    _, others = _basis_layer()  # two other bases: other coefficients
    for r, kw in weights.items():
        kw["weight"].data = others[r]["weight"].clone()
    got = helpers["_hetero_conv_sources"](conv, g, sources, mod_kwargs=weights)
    expected = conv(g, inputs, mod_kwargs=weights)["paper"]
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5), (got - expected).abs().max()


class _Widths(TorchFunctionMode):
    """The width of each matrix product's right operand on the papers' rows."""

    def __init__(self) -> None:
        super().__init__()
        self.widths: list[int] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        products = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.addmm)
        operands = args[1:] if func is torch.addmm else args
        if func in products and operands[0].dim() == 2 and len(operands[0]) == PAPERS:
            self.widths.append(operands[1].shape[1])
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("dtype", "width", "multiplied"), [
    (torch.float32, 13, 16), (torch.float32, 349, 352), (torch.float32, 16, 16), (torch.float32, 5, 5),
    (torch.float64, 13, 13),
])
def test_a_float32_product_is_made_a_multiple_of_8_wide(dtype: torch.dtype, width: int, multiplied: int) -> None:
    """MKL's product of float32 rows by a weight whose width is not a multiple of 8 was up to
    3.7x slower (349 wide: 1.46x): the stacked weight gets columns of zeros up to one (once
    for the same weights), the bias too, and the result is the width asked for, equal to
    forward's. float64 and widths up to 8 gain nothing: left as they are."""
    helpers = _helpers()
    torch.manual_seed(15)
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(4, width, norm="right", weight=False, bias=False)
                                  for _, r, _ in RELATIONS}).to(dtype)
    weights = {r: {"weight": torch.randn(4, width, dtype=dtype)} for _, r, _ in RELATIONS}
    g = _graph(13)
    inputs = {t: torch.randn(g.num_nodes(t), 4, dtype=dtype) for t in g.ntypes}
    sources = {rel: inputs[rel[0]] for rel in RELATIONS}
    loop, bias = torch.randn(4, width, dtype=dtype), torch.randn(width, dtype=dtype)
    expected = conv(g, inputs, mod_kwargs=weights)["paper"] + inputs["paper"] @ loop + bias
    with _Widths() as products:
        got = helpers["_hetero_conv_sources"](conv, g, sources, mod_kwargs=weights,
                                              linear=(inputs["paper"], loop), bias=bias)
    assert products.widths == [multiplied]
    assert got.shape == expected.shape and got.dtype == dtype
    tolerance = 1e-4 if dtype == torch.float32 else 1e-12
    assert torch.allclose(got, expected, rtol=tolerance, atol=tolerance)

"""A layer's call binds each of its parameters by name to the rows it takes (issue 37, item 3):
`batches.map(layer_2, source_rows=dict(h1=h1), destination_rows=dict(h1_dst=h1))`, never
tensors lined up by position (`src=[h1], dst=[h1]`) nor results picked by index
(`per_edge=(0,)`): the golden modules say so, and the runtime honours the names."""

from __future__ import annotations

import ast

import dgl
import pytest
import torch

from gnn_codegen.render.runtime import runtime_class
from tests.cases import Case, all_cases
from tests.reviewer_lines import reviewed

BOUND = ("source_rows", "destination_rows", "edge_rows")
# what a heterogeneous runtime passes after the rows: the type, and a subgraph's destination count
PASSED = {"ntype", "num_dst"}


def _reviewed(case: Case) -> ast.Module:
    """The part of a golden a reviewer reads: everything above its first banner."""
    return ast.parse(reviewed(case.golden.read_text()))


@pytest.mark.parametrize("case", all_cases(heterogeneous=True), ids=lambda c: c.name)
def test_every_layer_call_binds_its_parameters_by_name(case: Case) -> None:
    tree = _reviewed(case)
    functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
             and c.func.attr == "map" and c.args and isinstance(c.args[0], ast.Name)]
    assert calls, case.name
    for call in calls:
        # a name may be defined again for each round of an outer loop: the call takes the
        # nearest definition above it
        function = max((f for f in functions if f.name == call.args[0].id and f.lineno < call.lineno),
                       key=lambda f: f.lineno)
        keywords = {k.arg: k.value for k in call.keywords}
        assert not {"src", "dst", "edges", "per_edge"} & set(keywords), ast.unparse(call)
        bound = [k.arg for kind in BOUND if kind in keywords for k in keywords[kind].keywords]
        # the first is the block (or a graph) the runtime passes; a parameter with a default
        # is bound where the function is made (a loop's `i=i`), not by map
        args = function.args.args
        unbound = args[1:len(args) - len(function.args.defaults)]
        params = [a.arg for a in unbound if not case.heterogeneous or a.arg not in PASSED]
        assert sorted(bound) == sorted(params), (ast.unparse(call), params)
        if "returns" in keywords:  # one word per result, as the targets on its left
            returns = ast.literal_eval(keywords["returns"])
            assert set(returns) <= {"nodes", "edges"} and "edges" in returns, returns


def _graph() -> dgl.DGLGraph:
    g = dgl.graph((torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2])))
    return g


def test_the_runtime_binds_by_name_not_by_position() -> None:
    """A layer whose parameters come in another order than the call's bindings still gets each
    tensor where its name says, and per-edge results land at their edges."""
    g = _graph()
    x, y = torch.rand(g.num_nodes(), 3), torch.rand(g.num_nodes(), 3)
    w = torch.rand(g.num_edges(), 1)

    def layer(block, weight, b, a):  # the order differs from the call's
        with block.local_scope():
            block.srcdata["h"], block.edata["w"] = a, weight
            block.update_all(dgl.function.u_mul_e("h", "w", "m"), dgl.function.sum("m", "h"))
            return weight * 2, block.dstdata["h"] - b

    batches = runtime_class()(torch.nn.Linear(1, 1), g, 2, "cpu", 2**30, False)
    doubled, out = batches.map(layer, source_rows=dict(a=x), destination_rows=dict(b=y),
                               edge_rows=dict(weight=w), returns=("edges", "nodes"))
    src, dst = g.edges()
    expected = torch.zeros_like(y).index_add_(0, dst, x[src] * w) - y
    assert torch.allclose(out, expected) and torch.equal(doubled, w * 2)


def test_the_runtime_refuses_a_word_it_does_not_know_for_a_result() -> None:
    batches = runtime_class()(torch.nn.Linear(1, 1), _graph(), 2, "cpu", 2**30, False)
    with pytest.raises(ValueError, match="returns says"):
        batches.map(lambda block, x: x, destination_rows=dict(x=torch.rand(5, 1)), returns=("rows",))

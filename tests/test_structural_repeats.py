"""What a reviewer flagged as written twice, or read by closure (issue 37): one value computed
from the same operands in the other order (analysis/commuted.py), per-type functions alike but
for a module index a dict of the model's maps each type to (render/type_index.py), a loop's
function reading the loop variable by closure (render/layer_calls.py), and the batches over a
graph forward derives built from the method's own (the runtime's `over`), and a dict forward
builds by a comprehension over the relations written as that comprehension
(render/dict_comprehension.py)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.dict_comprehension import comprehension
from gnn_codegen.render.type_index import shared_by_index
from gnn_codegen.verify.check import check
from tests.cases import all_cases

CASES = all_cases(heterogeneous=True)


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _inference(source: str) -> ast.FunctionDef:
    return next(node for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.FunctionDef) and node.name == "inference")


# --- one value, written in the other order -----------------------------------------------------

_SWAPPED = '''
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class Res(nn.Module):
    def __init__(self, in_size, hid_size):
        super().__init__()
        self.encoder = nn.Linear(in_size, hid_size)
        self.conv1 = dglnn.SAGEConv(hid_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, hid_size, "mean")

    def forward(self, g, x):
        x0 = self.encoder(x)
        h1 = F.relu(self.conv1(g, x0))
        h = h1 + x0
        gate = x0 * h1
        readout = x0 + h1
        return self.conv2(g, h) + h1 * x0, readout - gate
'''


def test_a_sum_or_product_written_in_the_other_order_is_computed_and_stored_once(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(_SWAPPED)
    generated = generate_all(f"{tmp_path / 'model.py'}:Res", GenerateOptions(init='{"in_size": 5, "hid_size": 4}'))
    method = _method(generated.source)
    method = "\n".join(line for line in method.splitlines() if not line.strip().startswith("#"))  # code
    # `h1 + x0` and `x0 + h1` once, `x0 * h1` and `h1 * x0` once (x0 on destination rows: x0_dst)
    for op in (r"\+", r"\*"):
        assert len(re.findall(rf"\b(h1 {op} x0|x0 {op} h1)", method.replace("x0_dst", "x0"))) == 1, method
    result = check(generated, num_nodes=41, seed=2, batch_sizes=(1, 7, 41))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


def test_a_line_reading_a_sum_written_in_the_other_order_says_whose_it_is() -> None:
    """residual's `readout = x0 + relu1 + relu2` is written `h1_dst + relu2`: the comment above
    it says its x0 + relu1 is forward's h (`h = relu1 + x0`), so a reviewer need not prove it."""
    golden = next(c for c in CASES if c.name == "residual").golden.read_text()
    assert ("# `readout = x0 + relu1 + relu2`: its x0 + relu1 is h of `h = relu1 + x0`, the same\n"
            "            # sum in the other order\n            return h, feat, h1_dst + relu2") in golden


def test_residual_stores_its_sum_once() -> None:
    golden = next(c for c in CASES if c.name == "residual").golden.read_text()
    layer_1 = next(f for f in ast.walk(_inference(golden)) if isinstance(f, ast.FunctionDef) and f.name == "layer_1")
    returned = next(n for n in ast.walk(layer_1) if isinstance(n, ast.Return)).value
    assert not isinstance(returned, ast.Tuple), ast.unparse(layer_1)


# --- no loop variable read by closure ----------------------------------------------------------

def _closure_reads(method: ast.FunctionDef) -> list[tuple[str, str]]:
    """(function, name) for each function made in inference that reads a variable one of
    inference's `for` loops binds, other than through a parameter of its own (B023)."""
    loop_vars = {n.id for node in ast.walk(method) if isinstance(node, (ast.For, ast.comprehension))
                 for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    found = []
    for inner in ast.walk(method):
        if not isinstance(inner, ast.FunctionDef) or inner is method:
            continue
        own = {a.arg for a in (*inner.args.args, *inner.args.kwonlyargs)}
        bound = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        read = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        found += [(inner.name, name) for name in sorted(read & loop_vars - own - bound)]
    return found


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_no_layer_function_reads_a_loop_variable_by_closure(case) -> None:
    assert _closure_reads(_inference(case.golden.read_text())) == []


def test_the_check_finds_a_loop_variable_read_by_closure() -> None:
    source = textwrap.dedent('''
        def inference(self, batches):
            def layer_i(block, h):
                return self.convs[i](block, h)

            for i in range(3):
                h = batches.map(layer_i, source_rows=dict(h=h))
    ''')
    assert _closure_reads(_inference(source)) == [("layer_i", "i")]
    assert _closure_reads(_inference(source.replace("(block, h):", "(block, h, i=i):"))) == []


# --- batches over a derived graph, built from the method's own ---------------------------------

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_batches_but_the_first_is_built_from_it(case) -> None:
    """The runtime's constructor once per inference: the batches over a graph forward derives
    take batch_size, device, storage, ... from the method's own (`batches.over(g_with_loops)`),
    so that none can be built with other settings."""
    method = _method(case.golden.read_text())
    assert method.count("Batches(\n") + method.count("Batches(self") == 1, case.name


# --- per-type functions alike but for a module index -------------------------------------------

class _ByType(nn.Module):
    def __init__(self):
        super().__init__()
        self.node_dict = {"author": 0, "paper": 1}
        self.order = {"author": 1, "paper": 0}
        self.adapt = nn.ModuleList(nn.Linear(2, 2) for _ in self.node_dict)

    def forward(self, h):
        return {t: self.adapt[self.node_dict[t]](x) for t, x in h.items()}


_TEXTS = {"author": "def layer(x, ntype):\n    return self.adapt[0](x)\n",
          "paper": "def layer(x, ntype):\n    return self.adapt[1](x)\n"}


def test_per_type_functions_read_the_index_through_the_models_dict() -> None:
    shared = shared_by_index(_TEXTS, _ByType())
    assert shared == "def layer(x, ntype):\n    return self.adapt[self.node_dict[ntype]](x)\n"


def test_per_type_functions_stay_apart_where_no_dict_the_model_reads_maps_them() -> None:
    model = _ByType()
    model.node_dict = {"author": 1, "paper": 0}  # `order` maps them so, but forward never reads it
    assert shared_by_index(_TEXTS, model) is None
    other = dict(_TEXTS, paper="def layer(x, ntype):\n    return self.adapt[1](x) + 1\n")
    assert shared_by_index(other, _ByType()) is None  # more than the index differs


def test_hgt_hetero_adapts_each_type_in_one_function() -> None:
    method = _method(next(c for c in CASES if c.name == "hgt_hetero").golden.read_text())
    assert method.count("def prologue") == 1 and "self.adapt[self.node_dict[ntype]]" in method


# --- a dict forward builds by a comprehension over the relations -------------------------------

class _Relations(nn.Module):
    def __init__(self, rel_names):
        super().__init__()
        self.rel_names = list(rel_names)
        self.conv = nn.Identity()

    def forward(self, weights):
        return {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.rel_names, weights)}


_ENTRIES = {"follows": '{"weight": weights[0].squeeze(0)}', "plays": '{"weight": weights[1].squeeze(0)}'}


def _spell(path: str) -> str:
    return "self" + "".join(f".{p}" for p in path.split(".") if p)


def test_a_dict_with_an_entry_per_relation_is_the_comprehension_forward_wrote() -> None:
    written = comprehension(_ENTRIES, _Relations(["follows", "plays"]), "conv", _spell)
    assert written == '{rel: {"weight": w.squeeze(0)} for rel, w in zip(self.rel_names, weights)}'
    # keys no list of the model's holds in that order: over a tuple of them
    written = comprehension(_ENTRIES, _Relations(["plays", "follows"]), "conv", _spell)
    assert written == '{rel: {"weight": w.squeeze(0)} for rel, w in zip(("follows", "plays"), weights)}'


def test_entries_alike_but_for_more_than_the_item_stay_a_literal() -> None:
    model = _Relations(["follows", "plays"])
    assert comprehension(dict(_ENTRIES, plays='{"weight": weights[1].squeeze(1)}'), model, "conv", _spell) is None
    assert comprehension(dict(_ENTRIES, plays='{"weight": weights[0].squeeze(0)}'), model, "conv", _spell) is None
    assert comprehension({"follows": _ENTRIES["follows"]}, model, "conv", _spell) is None


def test_entity_classify_builds_each_wdict_as_forward_does() -> None:
    method = _method(next(c for c in CASES if c.name == "entity_classify").golden.read_text())
    # one loop over the layers, as forward builds each layer's (per_layer_values.py)
    assert method.count("for rel, w in zip(layer.rel_names, weights)") == 1, method
    assert "for layer in self.layers:" in method and '"follows": {' not in method


def test_a_literal_of_every_entry_of_a_models_mapping_is_that_mapping() -> None:
    """forward's `{ntype: embed for ntype, embed in self.embeds.items()}` traces to a literal of
    every entry; written back as `dict(self.embeds.items())` only where it is all of one
    ParameterDict's or ModuleDict's entries in their order, keyed as they are."""
    from gnn_codegen.render.dict_comprehension import whole_mapping

    model = torch.nn.Module()
    model.embeds = torch.nn.ParameterDict()
    for ntype in ("user", "game"):  # in this order (from a dict, ParameterDict sorts them)
        model.embeds[ntype] = torch.nn.Parameter(torch.zeros(2))
    model.plain = {"user": 1, "game": 2}
    every = '{"user": self.embeds["user"], "game": self.embeds["game"]}'
    assert whole_mapping(model, every) == "dict(self.embeds.items())"
    for kept in ('{"user": self.embeds["user"]}',  # not every entry
                 '{"game": self.embeds["game"], "user": self.embeds["user"]}',  # another order
                 '{"user": self.embeds["game"], "game": self.embeds["user"]}',  # other keys
                 '{"user": self.plain["user"], "game": self.plain["game"]}',  # a dict: not in the check
                 '{"user": self.embeds["user"], "game": h["game"]}'):
        assert whole_mapping(model, kept) == kept

"""Two layers the user wrote as a loop come out as that loop (issue 37, X1): where forward runs
one line over the modules of a list (`for layer in self.layers[:-1]: h = layer(block, h)`), two
consecutive layers alike but for their module's index are one function in a `for` over the
index (render/written_as_loop.py, render/layer_loops.py), while the same two layers written out
one by one stay two functions. Layers compare alike whatever their locals are named
(render/alike_bodies.py: a first layer whose local takes its parameter's name, `h`, is the same
code as the next), and a local takes a parameter's name where the parameter is read no more
(render/local_names.py), as forward writes it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.alike_bodies import anonymous_body
from gnn_codegen.render.local_names import renamed
from gnn_codegen.verify.check import check

_LOOPED = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(CONV(in_size, hid_size))
        self.layers.append(CONV(hid_size, hid_size))
        self.layers.append(CONV(hid_size, out_size))
        self.norms = nn.ModuleList([nn.LayerNorm(hid_size), nn.LayerNorm(hid_size)])

    def forward(self, g, X):
        h = X
        for i, layer in enumerate(self.layers[:-1]):
            h = layer(g, h)
            h = F.relu(self.norms[i](h))
        return self.layers[-1](g, h)
'''

_WRITTEN_OUT = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.GINConv(nn.Linear(in_size, hid_size), "sum"))
        self.layers.append(dglnn.GINConv(nn.Linear(hid_size, hid_size), "sum"))
        self.layers.append(dglnn.GINConv(nn.Linear(hid_size, out_size), "sum"))
        self.norms = nn.ModuleList([nn.LayerNorm(hid_size), nn.LayerNorm(hid_size)])

    def forward(self, g, x):
        h = self.layers[0](g, x)
        h = F.relu(self.norms[0](h))
        h = self.layers[1](g, h)
        h = F.relu(self.norms[1](h))
        return self.layers[-1](g, h)
'''

_INIT = '{"in_size": 5, "hid_size": 6, "out_size": 3}'


def _layer_functions(source: str) -> list[str]:
    inference = next(node for node in ast.walk(ast.parse(source))
                     if isinstance(node, ast.FunctionDef) and node.name == "inference")
    return sorted(node.name for node in ast.walk(inference)
                  if isinstance(node, ast.FunctionDef) and node.name.startswith("layer_"))


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _generate(tmp_path: Path, source: str, init: str = _INIT):
    (tmp_path / "model.py").write_text(source)
    return generate_all(f"{tmp_path / 'model.py'}:Net", GenerateOptions(init=init))


def _looped(conv: str, x: str) -> str:
    """_LOOPED with its modules made by conv ("dglnn.SAGEConv({a}, {b}, 'mean')") and its input
    named x."""
    source = _LOOPED
    for a, b in (("in_size", "hid_size"), ("hid_size", "hid_size"), ("hid_size", "out_size")):
        source = source.replace(f"CONV({a}, {b})", conv.format(a=a, b=b))
    return source.replace("X", x)


@pytest.mark.parametrize("conv, x", [
    # a module call kept whole; the first layer reads the caller's `h` (its local takes h's name)
    ("dglnn.GINConv(nn.Linear({a}, {b}), 'sum')", "h"),
    # written out (render's _sage_conv_mean); as wide as the layers, so that the last layer's
    # projection is not fused into the loop's second layer (which then is not the first's code)
    ("dglnn.SAGEConv({a}, {b}, 'mean')", "x"),
    ("dglnn.GATv2Conv({a}, {b}, 1)", "x"),
])
def test_two_layers_the_user_loops_over_are_one_function_in_a_loop(tmp_path: Path, conv, x) -> None:
    source = _looped(conv, x)
    if "GATv2Conv" in conv:  # one head: (N, 1, F) rows, flattened as users do
        source = source.replace("h = layer(g, h)", "h = layer(g, h).flatten(1)")
        source = source.replace("return self.layers[-1](g, h)", "return self.layers[-1](g, h).mean(1)")
    init = _INIT.replace('"out_size": 3', '"out_size": 6') if "SAGEConv" in conv else _INIT
    generated = _generate(tmp_path, source, init)
    functions = _layer_functions(generated.source)
    assert functions == ["layer_3", "layer_i"], _method(generated.source)
    assert "for i in range(len(self.layers) - 1):" in generated.source, _method(generated.source)
    assert "self.norms[i]" in generated.source
    if x == "h":  # the loop's variable is the caller's h rebound, as forward's `h = layer(g, h)`
        assert "h_2" not in _method(generated.source), _method(generated.source)
    result = check(generated, num_nodes=37, seed=3, batch_sizes=(1, 5, 37))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


def test_two_alike_layers_written_out_one_by_one_stay_apart(tmp_path: Path) -> None:
    generated = _generate(tmp_path, _WRITTEN_OUT)
    assert _layer_functions(generated.source) == ["layer_1", "layer_2", "layer_3"], _method(generated.source)
    assert check(generated, num_nodes=37, seed=3, batch_sizes=(1, 37)).ok


def test_layers_differing_in_a_constant_stay_apart(tmp_path: Path) -> None:
    """Looped, but the two layers scale by different constants: not one function."""
    source = _looped("dglnn.SAGEConv({a}, {b}, 'mean')", "x").replace(
        "h = F.relu(self.norms[i](h))", "h = F.relu(self.norms[i](h)) * (i + 1)")
    generated = _generate(tmp_path, source)
    assert _layer_functions(generated.source) == ["layer_1", "layer_2", "layer_3"], _method(generated.source)
    assert check(generated, num_nodes=37, seed=3, batch_sizes=(1, 37)).ok


def test_bodies_compare_alike_whatever_their_locals_are_named() -> None:
    first = anonymous_body(["h = self.convs[0](block, (h, h_dst))", "h = self.norms[0](h)", "return F.relu(h)"],
                           {"h": "\0" + "1", "h_dst": "\0" + "2"})
    second = anonymous_body(["h = self.convs[0](block, (h1, h1_dst))", "h = self.norms[0](h)", "return F.relu(h)"],
                            {"h1": "\0" + "1", "h1_dst": "\0" + "2"})
    assert first == second
    # the same names, but the second reads its parameter where the first reads its local
    third = anonymous_body(["h = self.convs[0](block, (h1, h1_dst))", "h = self.norms[0](h1)", "return F.relu(h)"],
                           {"h1": "\0" + "1", "h1_dst": "\0" + "2"})
    assert third != second
    # `h += x` reads the old h
    assert anonymous_body(["h = f(a)", "h += a", "return h"], {"a": "p"}) == (
        "v1 = f(p)", "v2 = v1 + p", "return v2")


def test_a_local_takes_a_parameters_name_once_the_parameter_is_read_no_more() -> None:
    params = ["block", "h", "h_dst"]
    body = ["h_2 = self.convs[0](block, (h, h_dst))", "h_2 = self.norms[0](h_2)", "return F.relu(h_2)"]
    assert renamed(params, body, {"h_2": "h"}) == {"h_2": "h"}
    # h is read after h_2 is assigned: h_2 keeps its name
    body = ["h_2 = self.convs[0](block, (h, h_dst))", "return F.relu(h_2) + h"]
    assert renamed(params, body, {"h_2": "h"}) == {}

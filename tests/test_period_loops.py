"""User layers of several passes each as one loop over the user's layers (issue 37): a stack of
ChebConvs or TAGConvs of k hops is k layers of the generated inference per module, which were
written out one by one (`layer_3` the copy of `layer_1` with `t1_3`, `t1_3_src`). Where each
user layer's passes are the one before's up to names and the module's index, the method loops
over the user's layers with the passes inside (render/period_loops.py), the last layer's other
ending under `if i == len(self.layers) - 1:`; passes that differ stay apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.subset_runs import assert_nodes_and_changed_rows

_CHEB_LOOP = '''
import torch.nn as nn
from dgl.nn import ChebConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k, layers):
        super().__init__()
        sizes = [in_size] + [hid_size] * (layers - 1) + [out_size]
        self.layers = nn.ModuleList(ChebConv(a, b, k) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = layer(g, h, [2])
        return h
'''

# TAGCN as DGL's example builds it: the last TAGConv without its activation (or with it)
_TAG_LOOP = '''
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import TAGConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k, layers, last_activation=False):
        super().__init__()
        self.layers = nn.ModuleList([TAGConv(in_size, hid_size, k=k, activation=F.relu)])
        for _ in range(layers - 2):
            self.layers.append(TAGConv(hid_size, hid_size, k=k, activation=F.relu))
        self.layers.append(TAGConv(hid_size, out_size, k=k, activation=F.relu if last_activation else None))

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = layer(g, h)
        return h
'''

# two ChebConvs alike but for their lambda_max, written out one by one, then a third like the first
_CHEB_APART = '''
import torch.nn as nn
from dgl.nn import ChebConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k, layers):
        super().__init__()
        self.layers = nn.ModuleList([ChebConv(in_size, hid_size, k), ChebConv(hid_size, hid_size, k),
                                     ChebConv(hid_size, out_size, k)])

    def forward(self, g, x):
        h = self.layers[0](g, x, [2])
        h = self.layers[1](g, h, [3])
        return self.layers[2](g, h, [2])
'''

# a loop over ChebConvs of different k: their passes differ in number
_CHEB_KS = '''
import torch.nn as nn
from dgl.nn import ChebConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k, layers):
        super().__init__()
        self.layers = nn.ModuleList([ChebConv(in_size, hid_size, k), ChebConv(hid_size, out_size, k + 1)])

    def forward(self, g, x):
        h = x
        for layer in self.layers:
            h = layer(g, h, [2])
        return h
'''


def _generate(tmp_path: Path, source: str, k: int, layers: int, **init):
    (tmp_path / "model.py").write_text(source)
    spelled = ", ".join(f'"{name}": {str(value).lower()}' for name, value in init.items())
    options = GenerateOptions(init=f'{{"in_size": 5, "hid_size": 6, "out_size": 3, "k": {k}, "layers": {layers}'
                                   f'{", " + spelled if spelled else ""}}}')
    return generate_all(f"{tmp_path / 'model.py'}:Net", options)


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _functions(method: str) -> list[str]:
    return [node.name for node in ast.walk(ast.parse("class C:\n" + method))
            if isinstance(node, ast.FunctionDef) and node.name != "inference"]


@pytest.mark.parametrize("source, k, layers, hops, init", [
    (_CHEB_LOOP, 3, 2, 2, {}),  # chebnet's: two hops each
    (_CHEB_LOOP, 3, 3, 2, {}),
    (_CHEB_LOOP, 4, 2, 3, {}),  # three hops each: three functions in the loop
    (_TAG_LOOP, 2, 2, 2, {}),  # the last TAGConv has no activation: tested as TAGConv tests it
    (_TAG_LOOP, 2, 3, 2, {"last_activation": True}),
])
def test_user_layers_of_several_passes_are_one_loop_over_them(tmp_path: Path, source, k, layers, hops,
                                                               init) -> None:
    method = _method(_generate(tmp_path, source, k, layers, **init).source)
    assert method.count("for i in range(len(self.layers)):") == 1, method
    # one function per hop, in the loop; none per generated layer
    assert [f for f in _functions(method) if f != "prologue"] == [f"hop_{j}" for j in range(1, hops + 1)], method
    assert "layer_" not in method
    for j in range(1, hops + 1):
        assert f"# self.layers[i] ({'ChebConv' if source is _CHEB_LOOP else 'TAGConv'}), hop {j} of {hops}." in method
        assert f"nodes=needed[{hops} * i + {j}]," in method
    assert f"needed = batches.needed(nodes, layers=len(self.layers) * {hops})" in method
    # the last layer stores its result alone, and ends under the loop's test of it
    assert "if i == len(self.layers) - 1:" in method
    assert "h, h_src = batches.map(" in method and re.search(r"return \w+, None\n", method), method
    # names without a layer's counter (`t1_3`, `h2`), nor a local's that the state's hid (`h_2`)
    assert not re.search(r"\b(t1_\d|hop1_\d|h\d|h_\d)\b", method), method
    # a hop's function binds the loop's variable where it reads its module, and only there
    for node in ast.walk(ast.parse("class C:\n" + method)):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("hop_"):
            reads = "self.layers[i]" in ast.unparse(node.body)
            assert ("i" in [a.arg for a in node.args.args]) == reads, ast.unparse(node)
    if source is _TAG_LOOP:  # tested as TAGConv's forward tests it, whether or not the last has one
        assert "if self.layers[i]._activation is not None:" in method, method
        said = "the last layer has no activation" in method
        assert said == (not init), method


@pytest.mark.parametrize("source", [_CHEB_APART, _CHEB_KS])
def test_user_layers_alike_by_chance_stay_apart(tmp_path: Path, source) -> None:
    """Written out one by one, with another lambda_max between; or a loop over modules of
    different k: no loop over the user's layers."""
    method = _method(_generate(tmp_path, source, 3, 3).source)
    assert "for i in" not in method
    assert "hop_1" not in method
    assert "layer_4" in method


@pytest.mark.parametrize("source, k, layers", [(_CHEB_LOOP, 3, 3), (_TAG_LOOP, 2, 2)])
def test_the_loop_gives_forwards_rows_for_nodes_and_changed(tmp_path: Path, source, k, layers) -> None:
    """`needed[2 * i + 1]`: each pass computes the rows the passes after it read, for nodes=
    and for changed= as for a full run."""
    assert_nodes_and_changed_rows(_generate(tmp_path, source, k, layers), tmp_path)

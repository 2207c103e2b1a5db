"""A loop's last layer that ends otherwise is in the loop (issue 37): in a run of layers that
are one function of the layer before, every layer but the last prepares the next one's rows
(APPNP's `feat * src_norm`, fused by the cut into each hop so that the next reads its source
rows in place) and the last ends as forward does after the run (GCNII's output Linear), or
with nothing. The one function holds the last layer's ending under `if k == last:`
(render/last_copies.py), where it was a copy of the whole layer beside the loop. A last layer
that differs before its ending (in its message passing) stays apart."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.last_copies import merged, split
from gnn_codegen.verify.check import check

_APPNP = '''
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import APPNPConv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k=5):
        super().__init__()
        self.lin1 = nn.Linear(in_size, hid_size)
        self.lin2 = nn.Linear(hid_size, out_size)
        self.prop = APPNPConv(k, alpha=0.2)

    def forward(self, g, x):
        h = F.relu(self.lin1(x))
        return self.prop(g, self.lin2(h))
'''

_GCNII = '''
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GCN2Conv


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, num_layers=4):
        super().__init__()
        self.lin_in = nn.Linear(in_size, hid_size)
        self.convs = nn.ModuleList(
            GCN2Conv(hid_size, layer=i + 1, alpha=0.1, lambda_=0.5, activation=F.relu)
            for i in range(num_layers)
        )
        self.lin_out = nn.Linear(hid_size, out_size)

    def forward(self, g, x):
        h = h0 = F.relu(self.lin_in(x))
        for conv in self.convs:
            h = conv(g, h, h0)
        return self.lin_out(h)
'''

# hops a person writes as a loop in forward: each sends its rows scaled by the source's norm,
# which the cut puts in the hop before (its rows are then read in place), but for the first
_HOPS = '''
import dgl.function as fn
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, in_size, hid_size, out_size, k=4):
        super().__init__()
        self.lin = nn.Linear(in_size, out_size)
        self.k = k

    def forward(self, g, x):
        h = self.lin(x)
        norm = torch.pow(g.in_degrees().float().clamp(min=1), -0.5).unsqueeze(1)
        with g.local_scope():
            for _ in range(self.k):
                g.ndata["h"] = h * norm
                g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                h = g.ndata.pop("h") * norm
        return h
'''

_INIT = '{"in_size": 5, "hid_size": 6, "out_size": 3}'


def _layer_functions(source: str) -> list[str]:
    inference = next(node for node in ast.walk(ast.parse(source))
                     if isinstance(node, ast.FunctionDef) and node.name == "inference")
    return sorted(node.name for node in ast.walk(inference)
                  if isinstance(node, ast.FunctionDef) and node.name.startswith("layer_"))


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _generate(tmp_path: Path, source: str):
    (tmp_path / "model.py").write_text(source)
    return generate_all(f"{tmp_path / 'model.py'}:Net", GenerateOptions(init=_INIT))


@pytest.mark.parametrize("model, loop, last", [
    # hop 5 sends no rows on: it returns what the others scale by src_norm for the next hop
    # (its count read from the module, which holds it: module_index.spelled_hops)
    (_APPNP, "for k in range(1, self.prop._k + 1):", "if k == self.prop._k:"),
    # the last GCN2Conv runs forward's output Linear where the others scale for the next
    (_GCNII, "for i in range(len(self.convs)):", "if i == len(self.convs) - 1:"),
    (_HOPS, "for k in range(1, 5):", "if k == 4:"),
])
def test_a_loops_last_layer_that_ends_otherwise_is_in_the_loop(tmp_path: Path, model, loop, last) -> None:
    generated = _generate(tmp_path, model)
    method = _method(generated.source)
    assert _layer_functions(generated.source) == ["layer_i" if "convs" in loop else "layer_k"], method
    assert loop in method and last in method, method
    result = check(generated, num_nodes=37, seed=3, batch_sizes=(1, 5, 37))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


def test_a_last_layer_that_differs_in_its_message_passing_stays_apart(tmp_path: Path) -> None:
    """The last hop averages where the others sum: not the others' code but for its ending."""
    source = _HOPS.replace('''                h = g.ndata.pop("h") * norm
''', '''                h = g.ndata.pop("h") * norm
            g.ndata["h"] = h * norm
            g.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
            h = g.ndata.pop("h") * norm
''')
    generated = _generate(tmp_path, source)
    assert _layer_functions(generated.source) == ["layer_5", "layer_k"], _method(generated.source)
    assert "if k ==" not in _method(generated.source)
    assert check(generated, num_nodes=37, seed=3, batch_sizes=(1, 37)).ok


def _bodies(text: str) -> list[str]:
    return textwrap.dedent(text).strip("\n").splitlines()


def _spelled(node: ast.AST) -> str:
    return ast.unparse(node)


def test_a_name_one_ends_with_and_the_other_returns_is_shared() -> None:
    regular = _bodies('''
        with block.local_scope():
            block.srcdata["h"] = feat
            h = block.dstdata["h"]
        feat = h + teleport
        return feat * src_norm
    ''')
    last = _bodies('''
        with block.local_scope():
            block.srcdata["h"] = feat
            h = block.dstdata["h"]
        return h + teleport
    ''')
    parts = split(regular, last, _spelled, _spelled)
    assert parts is not None
    assert merged(list(parts.regular), parts.ending, "k == 5") == [
        "with block.local_scope():", '    block.srcdata["h"] = feat', '    h = block.dstdata["h"]',
        "feat = h + teleport", "# the last layer: no next one to prepare rows for", "if k == 5:",
        "    return feat", "return feat * src_norm"]
    # the other way round: the regular layer names what it returns
    parts = split(last, regular, _spelled, _spelled)
    assert parts is not None and parts.regular[-2:] == ("feat = h + teleport", "return feat")
    assert parts.ending.last == ("return feat * src_norm",)


def test_bodies_that_differ_in_what_reads_the_block_do_not_split() -> None:
    regular = _bodies('''
        h = self.conv(block, feat)
        return h * norm
    ''')
    assert split(regular, ["h = self.conv(block, feat)", "return self.out(block, h)"], _spelled, _spelled) is None
    assert split(regular, ["h = self.other(block, feat)", "return h"], _spelled, _spelled) is None
    # nothing shared reads the block: no message passing in common
    assert split(["h = feat + 1", "return h * norm"], ["h = feat + 1", "return h"], _spelled, _spelled) is None


def test_one_call_one_names_and_the_other_returns_splits_where_asked() -> None:
    # a heterogeneous layer's one HeteroGraphConv call: RelGraphConvLayer's activation in every
    # layer but the last (render/hetero_loops.py asks for it), a GraphConv's aggregation, the
    # next layer's source step after it in every layer but the last (ends_otherwise asks)
    regular = _bodies('''
        h = _hetero_conv_sources(self.layers[i].conv, block, h_src)
        return self.layers[i].activation(h)
    ''')
    last = _bodies('''
        return _hetero_conv_sources(self.layers[i].conv, block, h_src)
    ''')
    assert split(regular, last, _spelled, _spelled) is None
    parts = split(regular, last, _spelled, _spelled, named_shares=True)
    assert parts is not None and parts.ending.last == ("return h",)
    assert parts.regular == ("h = _hetero_conv_sources(self.layers[i].conv, block, h_src)",
                             "return self.layers[i].activation(h)")

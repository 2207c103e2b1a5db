"""Propagation models as a reviewer reads them (issue 37): constants read from the module
(lower/module_constants.py), the norm every layer recomputes computed once
(analysis/dtype_witnesses.py), and layers that differ only in their module's index written once
in a loop over it (render/module_index.py) — each exact."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen runtime")]


def _exact(generated) -> None:
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


def _generated(name: str):
    import os
    old = os.getcwd()
    os.chdir(REPO)
    try:
        return generate_all(f"tests/models/multi_hop.py:{name}",
                            GenerateOptions(init='{"in_size": 8, "hid_size": 6, "out_size": 3, "num_layers": 5}'))
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def gcnii():
    """GCNII of five GCN2Conv layers, each with its own beta (log(lambda / layer + 1))."""
    return _generated("ShallowGCNII")


def test_gcn2conv_constants_are_read_from_the_module() -> None:
    """GCN2Conv traced into (with edge weights: without, its helper reads them, conv.beta)."""
    method = _method(_generated("WeightedGCNII").source)
    assert "(1 - self.convs[i].beta)" in method and "self.convs[i].beta * " in method
    assert "(1 - self.convs[i].alpha)" in method
    # no folded float of alpha (0.1) or beta in the layers' code
    assert not re.findall(r"\b0\.\d{3,}", method), re.findall(r"\b0\.\d{3,}", method)


def test_the_in_degree_norm_is_computed_and_stored_once(gcnii) -> None:
    method = _method(gcnii.source)
    assert method.count("torch.pow(") == 1
    assert "def prologue(" in method and "norm1" not in method


def test_layers_alike_but_for_their_module_index_are_one_loop(gcnii) -> None:
    method = _method(gcnii.source)
    assert method.count("def layer_i(") == 1 and "_gcn2_conv_aggregate(self.convs[i], " in method
    # the count from the module list the loop indexes (len(self.convs)), not a number; the
    # last GCN2Conv, which also runs output_fc, in the loop too (last_copies.py)
    assert re.search(r"for i in range\(len\(self\.convs\)\):", method)
    assert "if i == len(self.convs) - 1:" in method and "def layer_5(" not in method
    assert "nodes=needed[i + 1]" in method
    _exact(gcnii)  # every node, nodes= and out of core


@pytest.mark.parametrize("alpha,spelled", [(0.25, True), (0.5, False)])
def test_a_constant_is_the_attribute_only_where_its_line_reads_it(alpha: float, spelled: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """(1 - self.alpha) and self.alpha print as the module's attribute; the line's own 0.5 stays
    0.5, and where alpha is 0.5 too, which 0.5 is which cannot be told: all stay numbers."""
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/module_constants.py:TeleportNet",
                             GenerateOptions(init=f'{{"in_size": 8, "out_size": 4, "alpha": {alpha}}}'))
    method = _method(generated.source)
    assert ("(1 - self.prop.alpha)" in method and "self.prop.alpha * " in method) == spelled
    assert "0.5 * " in method
    if not spelled:
        assert "self.prop.alpha" not in method
    _exact(generated)


@pytest.mark.parametrize("example, norms", [("gcnii", 1), ("tagcn", 1), ("chebnet", 1)])
def test_a_norm_every_conv_computes_is_computed_once(example: str, norms: int) -> None:
    """GCN2Conv's, TAGConv's and ChebConv's in-degree norm (in_degrees.to(feat), reshaped to
    feat.dim()), computed by every conv of the stack from its own input: once for all the
    layers; the first conv's, cast to forward's input (whose dtype is the caller's at run
    time), is the same value where forward forces the input's dtype and rank (TAGConv's and
    ChebConv's Linear over hops of the features: analysis/forced_traits.py; the goldens are
    regenerated and compared by tests/test_goldens.py)."""
    method = _method((REPO / "generated_examples" / example / "generated.py").read_text())
    assert method.count("torch.pow(") == norms


def test_messages_weighted_by_ones_are_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """APPNPConv without edge weights multiplies every message by torch.ones(num_edges, 1):
    exact as fn.copy_u, with no tensor of ones made per batch (analysis/unit_weights.py)."""
    method = _method((REPO / "generated_examples" / "appnp" / "generated.py").read_text())
    assert "torch.ones(" not in method and "u_mul_e" not in method
    # one hop function: the last hop in its loop (last_copies.py)
    assert method.count('dgl.function.copy_u("h", "m")') == 1
    monkeypatch.chdir(REPO)  # and the weighted APPNP keeps its weights
    generated = generate_all("tests/models/multi_hop.py:WeightedAPPNP",
                             GenerateOptions(init='{"in_size": 8, "hid_size": 12, "out_size": 4}'))
    assert "u_mul_e" in _method(generated.source)

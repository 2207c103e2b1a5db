"""Widths from the model's construction as a reviewer reads them (issue 37): an int that
tracing folded from an attribute the line names prints as that attribute
(lower/module_constants.py, ir.ModuleInt), and a Linear over a concatenation of columns slices
its weight by the parts' widths at run time (render/layer.py, templates/convs.py.j2's
linear_of_concatenation), never by numbers from --init. Each exact."""

from __future__ import annotations

import re

import pytest
import torch

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.trace.write_out import HELPERS
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODELS = "tests/models/widths.py"


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _generate(name: str, init: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:{name}", GenerateOptions(init=init))
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"
    return re.sub(r"\s+", "", _method(generated.source))  # as black wraps it or not


def test_a_views_width_is_the_attribute_its_line_names(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _generate("FlattenedHeads", '{"in_size": 8, "hid_size": 12, "out_size": 3}', monkeypatch)
    assert ".view(-1,self.hid_size)" in method and "view(-1,12)" not in method


def test_a_states_width_is_the_attribute_its_line_names(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _generate("ZeroState", '{"in_size": 8, "hid_size": 6, "out_size": 3}', monkeypatch)
    assert "torch.zeros(x.shape[0],self.hid_dim,device=device)" in method, method  # made where it goes


@pytest.mark.parametrize("heads, size, spelled", [(2, 5, True), (4, 4, False)])
def test_two_attributes_of_one_value_stay_numbers(heads: int, size: int, spelled: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    init = f'{{"in_size": 8, "out_size": 3, "num_heads": {heads}, "head_size": {size}}}'
    method = _generate("HeadsApart", init, monkeypatch)
    if spelled:
        assert ".view(-1,self.num_heads,self.head_size)" in method
    else:
        assert f".view(-1,{heads},{size})" in method and "self.num_heads" not in method


def test_a_linear_over_hops_slices_its_weight_by_the_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _generate("TAGStack", '{"in_feats": 7, "n_hidden": 5, "n_classes": 3}', monkeypatch)
    assert "_linear_of_concatenation(self.layers[i].lin,[" in method  # in the loop over them
    assert "torch.cat(" not in method and not re.search(r"weight\[:,\d*:\d*\]", method)


@pytest.mark.parametrize("widths", [(7, 5, 5), (3, 1, 8, 2)])
def test_linear_of_concatenation_is_the_linear_of_the_concatenation(widths: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(sum(widths), 4)
    parts = [torch.randn(11, w) for w in widths]
    expected = linear(torch.cat(parts, dim=1))
    torch.testing.assert_close(HELPERS["linear_of_concatenation"](linear, parts), expected)
    with pytest.raises(RuntimeError):  # parts that are not as wide as the weight: no silent slice
        HELPERS["linear_of_concatenation"](linear, parts[:-1])


def test_a_move_onto_the_device_it_is_on_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """norm.to(h.device) of a norm computed in a layer: no move (every example is checked on the
    simulated GPU, inputs on the host, before it is written); a state torch.zeros makes is
    made on the device (`device=device`), not moved there."""
    method = _generate("NormMovedToFeatures", '{"in_size": 8, "out_size": 3}', monkeypatch)
    assert ".to(device)" not in method and "pow(-0.5)" in method
    assert "torch.zeros(x.shape[0],self.hid_dim,device=device)" in _generate(
        "ZeroState", '{"in_size": 8, "hid_size": 6, "out_size": 3}', monkeypatch)


@pytest.mark.parametrize("example", ["tagcn", "appnp", "gcnii"])
def test_the_goldens_move_no_norm_onto_the_device(example: str) -> None:
    method = _method((REPO / "generated_examples" / example / "generated.py").read_text())
    assert ".to(device)" not in method

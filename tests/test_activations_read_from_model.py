"""Activations as a reviewer reads them (issue 37): a function that the model or one of its
modules holds in an attribute, and that forward calls through it, prints as that attribute
(`self.activation(h)`, `self.mlp[0].activation(h)`, `self.layers[0]._activation(rst)`), not as
the function tracing folded it to (lower/module_callables.py); one the line names itself stays
as written. The build digest covers the attribute: a model whose attribute holds another
function is refused, never run with the traced one. Each exact."""

from __future__ import annotations

import re

import dgl
import pytest
import torch
import torch.nn.functional as F

from gnn_codegen.verify.harness import import_source
from tests.cases import REPO
from tests.generated_text import generated_and_checked, inference_method

MODELS = "tests/models/activations.py"
INIT = '{"in_size": 8, "hid_size": 6, "out_size": 3}'


def _generated(name: str, monkeypatch: pytest.MonkeyPatch):
    return generated_and_checked(MODELS, name, INIT, monkeypatch)


def _method(source: str) -> str:
    method = inference_method(source)
    return re.sub(r"\s+", "", method)  # as black wraps it or not


@pytest.mark.parametrize("name, called, folded", [
    ("ActivationOfTheModel", "self.activation(", "F.elu("),
    ("ActivationOfALayer", "self.mlp[0].activation(", "F.leaky_relu("),
    ("ActivationOfADGLModule", "self.layers[0]._activation(", "elu("),
])
def test_an_activation_held_by_a_module_is_called_through_it(name: str, called: str, folded: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method(_generated(name, monkeypatch).source)
    assert called in method and folded not in method.replace(called, ""), method


def test_an_activation_the_line_names_stays_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method(_generated("ReluWrittenOut", monkeypatch).source)
    assert "F.relu(" in method and "self.activation" not in method, method


def test_a_model_whose_attribute_holds_another_function_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generated("ActivationOfTheModel", monkeypatch)
    module = import_source(generated.source, REPO / "tests" / "models", "activations_generated")
    g = dgl.add_self_loop(dgl.rand_graph(40, 160))
    x = torch.randn(40, 8)
    model = module.ActivationOfTheModel(8, 6, 3).eval()
    assert torch.allclose(model.inference(g, x, batch_size=16, device="cpu"), model(g, x), atol=1e-5)
    model.activation = torch.tanh  # the same build, then another function: not the traced one
    with pytest.raises(ValueError, match="built differently"):
        model.inference(g, x, batch_size=16, device="cpu")
    model.activation = F.elu
    model.inference(g, x, batch_size=16, device="cpu")


@pytest.mark.parametrize("example, called", [
    ("appnp", "self.activation("), ("dagnn", "self.mlp[0].activation("),
    ("chebnet", "self.layers[i].activation("), ("tagcn", "self.layers[i]._activation("),
    ("entity_classify", "self.layers[i].activation("),
])
def test_the_goldens_call_the_activation_the_model_holds(example: str, called: str) -> None:
    method = _method((REPO / "generated_examples" / example / "generated.py").read_text())
    assert called in method, method


@pytest.mark.parametrize("name, called", [
    ("ActivationOfTheModel", "self.activation("),
    ("ActivationOfADGLModule", "self.layers[0]._activation("),
])
def test_an_activation_called_through_an_attribute_takes_no_inplace_keyword(
        name: str, called: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`self.activation(h, inplace=True)` reads as a keyword the attribute may not take (issue
    37's review of chebnet and tagcn): the attribute is called as forward calls it, on a new
    tensor; a function the line names itself may still run in place."""
    method = _method(_generated(name, monkeypatch).source)
    assert called in method and not re.search(r"activation\([^()]*inplace=True", method), method


@pytest.mark.parametrize("example, called", [
    ("chebnet", "self.layers[i].activation("), ("tagcn", "self.layers[i]._activation("),
])
def test_the_goldens_call_the_held_activation_without_inplace(example: str, called: str) -> None:
    method = _method((REPO / "generated_examples" / example / "generated.py").read_text())
    assert called in method and not re.search(r"activation\([^()]*inplace=True", method), method

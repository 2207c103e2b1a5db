"""Modules kept in plain Python lists, tuples and dicts (issue 35; tests/models/plain_containers.py
and the survey's BWGNN styles): traced by their path through the container, proven and cut as
registered modules are, and called in the generated inference as forward calls them
(`self.convs[0]`, `self.layers["first"]`, `self.encoder.layers[1]`). Their weights are outside the
state_dict: a note says so, and the checks copy them. A Dropout or BatchNorm left in training
mode there (model.eval() does not reach it) is refused."""

from __future__ import annotations

import os
import subprocess
import sys

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import generated_model, import_source
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import ATOL, RTOL, check
from tests.cases import REPO

MODEL = "tests/models/plain_containers.py"

# what the generated method must call, as forward reaches it
CALLS = {
    "SAGEInDict": ['self.layers["first"]', 'self.norms["first"](', 'self.layers["second"]'],
    # one loop since the first skip runs in the prologue (cut/prologue_work.py)
    "GCNWithPlainSkips": ["_graph_conv_aggregate(self.convs[i], block", "self.skips[i + 1](h)"],
    "EncoderHoldingAList": ["_gat_conv_source(self.encoder.layers[0], x)", "self.encoder.layers[1], block"],
    "PlainListOfActivations": ["self.acts[0](self.conv1(block", "self.acts[1](self.conv2(block"],
    "PerViewHeads": ["self.filters[2], block, feat0_6", "self.heads[1]("],
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions())


@pytest.mark.parametrize("name", sorted(CALLS))
def test_generated_exact_and_calling_them_as_forward_does(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    assert generated.verification is not None and generated.verification.ok
    flat = " ".join(generated.source.split("def inference")[1].split())
    for call in CALLS[name]:
        assert call in flat, call
    for seed in (1, 2):  # all nodes, nodes=, storage=, batches of 7 and of all
        result = check(generated, num_nodes=61, seed=seed, batch_sizes=(7, 61))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_the_users_instance_keeps_its_plain_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered only while gnn-codegen reads the model: the user's instance is as it was."""
    model = _generate("GCNWithPlainSkips", monkeypatch).loaded.model
    assert type(model.convs) is tuple and type(model.skips) is list
    assert set(model._modules) == set() and not any("skips" in k or "convs" in k for k in model.state_dict())


def test_weights_outside_the_state_dict_get_one_note(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate("GCNWithPlainSkips", monkeypatch)
    assert (
        "self.convs, self.skips keep modules with weights in a plain Python list or dict: the generated "
        "method calls them as forward does, but their weights are in neither model.parameters() nor the "
        "state_dict, so load_state_dict does not restore them (in nn.ModuleList or nn.ModuleDict it would)"
    ) in generated.notes
    # what the note says: a fresh instance given the user's state_dict has other skip weights
    fresh = import_source(generated.source, generated.loaded.path.parent)
    torch.manual_seed(5)
    other = getattr(fresh, "GCNWithPlainSkips")()
    other.load_state_dict(generated.loaded.model.state_dict())  # strict: nothing missing, nothing left over
    assert not torch.equal(other.skips[0].weight, generated.loaded.model.skips[0].weight)
    # and the checks' copy of the model carries them
    copied = generated_model(generated, fresh)
    assert torch.equal(copied.skips[0].weight, generated.loaded.model.skips[0].weight)
    # weightless modules in a plain list, or ones the model registers too: nothing left out, no note
    for name in ("PlainListOfActivations", "RegisteredInAnotherOrder"):
        generated = _generate(name, monkeypatch)
        assert generated.verification is not None and generated.verification.ok
        assert not any("plain Python list" in n for n in generated.notes)


def test_inference_equals_forward_for_the_users_own_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user runs it: the module written, its class built, the weights of the user's model
    (plain containers included, as the user's own training left them) in it."""
    generated = _generate("EncoderHoldingAList", monkeypatch)
    module = import_source(generated.source, generated.loaded.path.parent)
    torch.manual_seed(0)
    model = getattr(module, "EncoderHoldingAList")()
    with torch.no_grad():
        for layer in model.encoder.layers:  # "trained": weights nobody initialised so
            for p in layer.parameters():
                p.add_(torch.randn_like(p))
    model.eval()
    # a seeded graph (dgl.rand_graph draws with OpenMP), and the tool's own tolerance: with these
    # weights outputs reach 5, where batches summing attention in another order move the last
    # float bits by up to 5e-5 (300 graphs measured)
    edges = torch.randint(0, 40, (2, 200), generator=torch.Generator().manual_seed(3))
    g = dgl.graph((edges[0], edges[1]), num_nodes=40)
    x = torch.randn(40, 8)
    expected = model(g, x)
    assert torch.allclose(model.inference(g, x, batch_size=9, device="cpu"), expected, atol=ATOL, rtol=RTOL)
    nodes = torch.tensor([3, 17, 0, 39])
    assert torch.allclose(model.inference(g, x, batch_size=9, device="cpu", nodes=nodes), expected[nodes],
                          atol=ATOL, rtol=RTOL)


def test_a_dropout_left_in_training_mode_in_a_plain_list_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.UnsupportedOperationError) as caught:
        _generate("DropoutInAPlainList", monkeypatch)
    assert str(caught.value) == (
        "self.post[0][1] (Dropout) is kept in a plain Python list or dict, where model.eval() does not "
        "reach it: forward runs it in training mode (dropping at random, or normalising by the statistics "
        "of the rows it is given), also when you evaluate. Keep such modules in nn.ModuleList or "
        "nn.ModuleDict, so that model.eval() reaches them."
    )


def test_a_list_mixing_modules_with_other_values_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.TraceFailedError) as caught:
        _generate("ModulesMixedWithNames", monkeypatch)
    assert str(caught.value) == (
        "tests/models/plain_containers.py:124 (`return self.post[0](self.conv(g, x))`): forward calls a module "
        "that the model does not register and that gnn-codegen cannot name by a path through the model's "
        "attributes (a list or dict mixing modules with other values, keys that are not strings, a module "
        "held by a plain object or made in forward). Keep such modules in an nn.ModuleList, an "
        "nn.ModuleDict, or a plain list or dict of modules alone on the model."
    )


def test_the_command_writes_the_note_on_stderr(tmp_path) -> None:
    out = tmp_path / "out.py"
    result = subprocess.run(
        [sys.executable, "-m", "gnn_codegen", f"{MODEL}:GCNWithPlainSkips", "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, env={**os.environ, "DGLBACKEND": "pytorch"},
    )
    assert result.returncode == 0, result.stderr
    assert " ".join(result.stderr.split()).startswith(
        "note: self.convs, self.skips keep modules with weights in a plain Python list or dict")
    assert "self.skips[0](x)" in out.read_text()

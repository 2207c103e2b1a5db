"""Generating a test model and reading its inference method as text: for the tests that check
how generated code reads (settings, activations, constants)."""

from __future__ import annotations

import pytest

from gnn_codegen.pipeline import GenerateOptions, Generated, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO


def generated_and_checked(models: str, name: str, init: str, monkeypatch: pytest.MonkeyPatch,
                          num_nodes: int = 97, seed: int = 1, batch_sizes=(1, 13, 97)) -> Generated:
    """models:name generated with init, and checked against its forward at each batch size."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{models}:{name}", GenerateOptions(init=init))
    result = check(generated, num_nodes=num_nodes, seed=seed, batch_sizes=batch_sizes)
    assert result.ok, f"max |difference| {result.max_abs_diff}"
    return generated


def inference_method(source: str) -> str:
    """The generated inference method's text, down to the first banner after it."""
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]

"""The check before writing (gnn_codegen/verify/check.py): a module whose inference differs from
forward is never returned nor written; an exception from the generated code or from forward is
a check failure (exit 1, one paragraph naming the lines), never an internal error."""

from __future__ import annotations

import re

import dataclasses
import os
import subprocess
import sys

import pytest

from gnn_codegen import pipeline
from gnn_codegen.errors import CheckFailedError
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import SIMULATED, SIMULATED_WHOLE, STORAGE, STORAGE_SUBSET, SUBSET, check
from tests.cases import CASES_BY_NAME, REPO, generate_case

KNOWN = "tests/models/known_modules.py:TwoConvs"
CHECKS = "tests/models/checks.py"


def _cli(*args: str, cwd=REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gnn_codegen", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "DGLBACKEND": "pytorch"})


def test_a_module_that_differs_from_forward_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the renderer read in-degrees for GraphConv's out-degree norm: the check finds it."""
    line = "out_degrees = g.out_degrees()"
    real = pipeline.format_source
    monkeypatch.setattr(pipeline, "format_source", lambda source, *tail: real(source, *tail).replace(line, "out_degrees = g.in_degrees()"))
    with pytest.raises(CheckFailedError, match=r"differs from TwoConvs's full-graph forward by up to .* "
                       r"with batches of \d+ nodes and source rows .*Nothing was written"):
        generate_all(KNOWN, GenerateOptions(init='{"kind": "GraphConv-left-ReLU-no-bias"}'))


def test_generated_code_that_raises_names_its_line_and_the_users() -> None:
    """As if the renderer lost layer 1's block: its first line fails."""
    generated = generate_case(CASES_BY_NAME["sage"])
    first = "            def layer_i(block, feat, h, i=i):\n"  # the one loop over the layers
    broken = generated.source.replace(first, first + "                block = None\n", 1)
    assert broken != generated.source
    with pytest.raises(CheckFailedError) as caught:
        check(generated.__class__(**{**generated.__dict__, "source": broken}), num_nodes=100)
    message = str(caught.value)
    # the helper's first use of the block: DGL's graph, or the in-edge sum's look at its types
    assert re.match(r"the generated inference raised AttributeError \('NoneType' object has no "
                    r"attribute '(_graph|canonical_etypes)'\) at generated line ", message), message
    assert "(`h = _sage_conv_mean(self.layers[i], block, feat, h)`)" in message
    assert "which computes generated_examples/sage/model.py:28 (`h = layer(block, h)`)" in message
    assert "Nothing was written" in message


def test_forward_that_raises_is_a_check_failure_not_an_internal_error(tmp_path) -> None:
    out = tmp_path / "out.py"
    result = _cli(f"{CHECKS}:PickyModel", "-o", str(out))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert message.startswith("error: PickyModel's forward raised ValueError (this layer was only ever "
                              "meant for small graphs) at tests/models/checks.py:13 (`raise ValueError(")
    assert "Nothing was written" in message
    assert not out.exists()


def test_a_model_that_refuses_nodes_without_in_edges_is_checked_with_self_loops() -> None:
    generated = generate_case(CASES_BY_NAME["gat"])
    assert generated.verification is not None and generated.verification.ok
    assert generated.verification.zero_in_degree_nodes == 0
    assert len(generated.notes) == 1
    assert generated.notes[0].startswith("GAT's forward refuses a graph with nodes without in-edges (DGLError:")


def test_every_case_is_verified_with_nodes_without_in_edges_where_the_model_allows() -> None:
    result = generate_case(CASES_BY_NAME["sage"]).verification
    assert result is not None and result.ok and result.zero_in_degree_nodes > 0
    assert {b.sources for b in result.batches} == {"in place", "gathered", SIMULATED, SIMULATED_WHOLE, STORAGE, SUBSET,
                                                   STORAGE_SUBSET}
    assert {b.batch_size for b in result.batches} == {47, 60} and result.num_nodes == 240


def test_no_verify_writes_an_unchecked_module_that_says_so(tmp_path) -> None:
    out = tmp_path / "out.py"
    result = _cli("generated_examples/sage/model.py:SAGE", "-o", str(out), "--no-verify",
                  "--init", '{"in_size": 16, "hid_size": 12, "out_size": 5}')
    assert result.returncode == 0, result.stderr
    assert "NOT CHECKED" in out.read_text()
    assert "--no-verify" in result.stderr


def test_the_check_catches_layers_computed_for_too_few_nodes() -> None:
    """inference(nodes=...) computed each layer for the nodes the output needs, not also for
    the in-neighbours the next layer reads: the check compares those nodes' rows and fails."""
    generated = generate_case(CASES_BY_NAME["sage"])
    walk = "frontier = batches._with_in_neighbours(frontier)"
    assert walk in generated.source
    broken = dataclasses.replace(generated, source=generated.source.replace(walk, "pass"))
    result = check(broken, 240, batch_sizes=(47, 60))
    assert not result.ok
    assert {b.sources for b in result.batches if b.max_abs_diff > 1e-4} == {SUBSET, STORAGE_SUBSET}

"""--runtime-module NAME: the runtime written once as NAME.py beside the generated modules, which
import it; reused by the next model generated there, never replaced by another version's; the
pair computes forward's rows, and the check before writing imported it the same way."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
import torch

from gnn_codegen.cli import main
from gnn_codegen.harness import (
    allclose, full_graph_forward, generated_model, make_inputs, random_graph_for, run_inference,
)
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.runtime_section import banner_hash, content_hash, split
from tests.cases import CASES_BY_NAME, REPO


def _command(case: str, output: Path, *extra: str) -> list[str]:
    spec = json.loads((REPO / "generated_examples" / case / "case.json").read_text())
    return [f"generated_examples/{case}/{spec['target']}", "-o", str(output), "--init", json.dumps(spec["init"]),
            *extra]


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def test_two_models_share_one_runtime_module(tmp_path: Path, in_repo: None, capsys) -> None:
    assert main(_command("sage", tmp_path / "sage_inference.py", "--runtime-module", "gnn_runtime")) == 0
    runtime = (tmp_path / "gnn_runtime.py").read_text()
    assert main(_command("gcn", tmp_path / "gcn_inference.py", "--runtime-module", "gnn_runtime")) == 0
    assert "reused" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gcn_inference.py", "gnn_runtime.py", "sage_inference.py"]
    assert (tmp_path / "gnn_runtime.py").read_text() == runtime
    # the runtime module is the runtime section every single-file module carries, with its hash
    _, _, section = split(runtime)
    assert banner_hash(runtime) == content_hash(section) == banner_hash(CASES_BY_NAME["sage"].golden.read_text())
    for name in ("sage_inference.py", "gcn_inference.py"):
        source = (tmp_path / name).read_text()
        assert "from gnn_runtime import _FullNeighbourBatches\n" in source
        assert "class _FullNeighbourBatches" not in source and "import numpy" not in source
        assert f"sha256 {banner_hash(runtime)})" in source  # the header names the runtime it needs


def test_another_versions_runtime_module_is_refused(tmp_path: Path, in_repo: None, capsys) -> None:
    stale = "# --- gnn-codegen runtime 0.0.9, sha256 0123456789ab " + "-" * 43 + "\n# old\n# " + "-" * 94 + "\n\nX = 1\n"
    (tmp_path / "gnn_runtime.py").write_text(stale)
    code = main(_command("sage", tmp_path / "sage_inference.py", "--runtime-module", "gnn_runtime"))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert str(tmp_path / "gnn_runtime.py") in err and "never replaces it" in err
    assert (tmp_path / "gnn_runtime.py").read_text() == stale  # untouched
    assert not (tmp_path / "sage_inference.py").exists()  # nothing written


@pytest.mark.parametrize("name", ["numpy", "os", "not-a-name", "class"])
def test_a_runtime_module_name_must_be_a_module_of_its_own(name: str, tmp_path: Path, in_repo: None,
                                                           capsys) -> None:
    assert main(_command("sage", tmp_path / "out.py", "--runtime-module", name)) == 2
    assert "--runtime-module" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_written_pair_equals_forward(tmp_path: Path, in_repo: None) -> None:
    """The check before writing ran it with its runtime module (else generate_all would have
    refused); here the pair as written, imported the way a user does, against forward."""
    case = CASES_BY_NAME["gat"]
    options = GenerateOptions(init=case.options.init, output=str(tmp_path / "gat_inference.py"),
                              runtime_module="gnn_runtime")
    generated = generate_all(case.target, options)
    assert generated.verification is not None and generated.verification.ok
    name, text = generated.runtime_module  # type: ignore[misc]
    (tmp_path / f"{name}.py").write_text(text)
    (tmp_path / "gat_inference.py").write_text(generated.source)
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("gat_inference")
        assert module._FullNeighbourBatches.__module__ == "gnn_runtime"
        reference = generated.loaded.model.eval()
        model = generated_model(generated, module, reference)
        g = random_graph_for(generated, 211, seed=2, zero_in_degree=False)
        inputs = make_inputs(generated, 211, 2, g.num_edges())
        expected = full_graph_forward(reference, generated, g, inputs)
        for batch_size in (1, 16, 500):
            actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu")
            assert allclose(actual, expected, atol=1e-4, rtol=1e-4), batch_size
    finally:
        sys.path.remove(str(tmp_path))
        for loaded in ("gat_inference", "gnn_runtime"):
            sys.modules.pop(loaded, None)
    assert torch.is_grad_enabled()

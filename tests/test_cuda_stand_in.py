"""tests/cuda/check.py on the CPU: the torch-only stand-in for DGL (tests/cuda/stand_in), which
lets the generated sage, gcn and gat code run on a real GPU, computes what DGL computes for
that code, in every way inference is called. With a GPU (never in CI), the same run on it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

CHECK = Path(__file__).resolve().parent / "cuda" / "check.py"


def _check(*args: str) -> str:
    env = dict(os.environ, DGLBACKEND="pytorch")
    done = subprocess.run(
        [sys.executable, str(CHECK), *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cuda_reference")
    _check("reference", str(out))
    return out


def test_stand_in_computes_what_dgl_computes(reference: Path) -> None:
    out = _check("run", str(reference), "--device", "cpu")
    assert out.rstrip().endswith("all passed")
    assert out.count("ok  ") == 3 * 2 * 5 + 3 * 6  # cases x seeds x ways, and the ops


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_generated_code_on_a_gpu(reference: Path) -> None:
    assert _check("run", str(reference), "--device", "cuda").rstrip().endswith("all passed")

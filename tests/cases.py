"""The cases in generated_examples/: each folder holds model.py, case.json (target, init and
options) and generated.py, the expected output. Shared by the tests and update_goldens."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from gnn_codegen.pipeline import GenerateOptions, Generated, generate_all

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "generated_examples"
UPDATE_COMMAND = "python -m tests.update_goldens"


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    target: str  # relative to the repository root, as the header's command shows it
    options: GenerateOptions
    heterogeneous: bool = False  # a model on a heterogeneous graph (gnn_codegen/hetero/)

    @property
    def golden(self) -> Path:
        return self.folder / "generated.py"


def load_case(folder: Path) -> Case:
    spec = json.loads((folder / "case.json").read_text())
    rel = folder.relative_to(REPO).as_posix()
    options = GenerateOptions(
        init=json.dumps(spec["init"]) if "init" in spec else None,
        output=f"{rel}/generated.py",
        feat_dims=spec.get("feat_dims"),
        leaves=tuple(spec.get("leaves", ())),
        mp_modules=tuple(spec.get("mp_modules", ())),
        metagraph=spec.get("metagraph"),
        forward_args=json.dumps(spec["forward_args"]) if "forward_args" in spec else None,
    )
    return Case(folder.name, folder, f"{rel}/{spec['target']}", options, "metagraph" in spec)


def all_cases(heterogeneous: bool = False) -> list[Case]:
    """The cases on homogeneous graphs, which most tests run in every way; with
    heterogeneous=True, every case (tests/test_hetero.py runs those on heterographs)."""
    cases = [load_case(f) for f in sorted(EXAMPLES.iterdir()) if (f / "case.json").is_file()]
    return [c for c in cases if heterogeneous or not c.heterogeneous]


@functools.lru_cache(maxsize=None)
def generate_case(case: Case) -> Generated:
    """Generate from the repository root, so the header's command is the same everywhere. Once
    per test session: a Generated is a frozen value (tests that change weights copy the model)."""
    import os

    previous = os.getcwd()
    os.chdir(REPO)
    try:
        return generate_all(case.target, case.options)
    finally:
        os.chdir(previous)


CASES_BY_NAME = {case.name: case for case in all_cases(heterogeneous=True)}

"""The survey's table stays valid (tests/models/survey/cases.py, run by benchmarks/survey.py):
every case names a class of its file, the class builds from the case's --init, and its forward runs
on the graph and arguments the survey's own check builds. Nothing here says what gnn-codegen makes
of these models: their outcomes change as issue 35's mechanisms land (benchmarks/results/survey.md)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
import torch

from tests.models.survey.cases import CASES, MECHANISMS, SurveyCase

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import survey_check  # noqa: E402


def test_the_survey_is_as_broad_as_issue_35_asks() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    assert sum(c.heterogeneous for c in CASES) >= 8
    assert sum(c.blocks_style for c in CASES) >= 6
    for case in CASES:
        assert set(case.mechanisms) <= set(MECHANISMS), case.name
        assert case.possible or case.why_not, f"{case.name}: say why exact inference is impossible"
        json.dumps(case.init)  # --init is JSON


@pytest.mark.parametrize("family", sorted({c.family for c in CASES}))
def test_every_class_of_a_survey_file_is_in_the_table(family: str) -> None:
    """A model class written for the survey and left out of the table would never be measured."""
    module = importlib.import_module(f"tests.models.survey.{family}")
    listed = {c.name for c in CASES if c.family == family}
    models = {name for name, value in vars(module).items()
              if isinstance(value, type) and issubclass(value, torch.nn.Module)
              and value.__module__ == module.__name__ and value.__doc__ and "Constructs:" in value.__doc__}
    assert models <= listed, f"not in the table: {sorted(models - listed)}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_class_names_the_public_code_it_follows_and_its_constructs(case: SurveyCase) -> None:
    doc = " ".join((survey_check.user_class(case).__doc__ or "").split())
    assert doc.startswith(f"Follows {case.source.split()[0]}"), case.name
    assert "Constructs:" in doc, case.name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_case_builds_and_its_forward_runs_on_the_survey_inputs(case: SurveyCase) -> None:
    model = survey_check.reference_model(case)
    forward_args, inference_args = survey_check.build_args(case)
    assert len(forward_args) == len(inference_args) == len(case.args)
    with torch.no_grad():
        result = model(*forward_args)
    rows = survey_check.flatten(result)
    assert rows and all(torch.isfinite(t).all() or not t.is_floating_point() for _, t in rows), case.name


def test_the_check_compares_structures_and_magnitudes() -> None:
    a = {"x": torch.ones(3, 2), "y": (torch.zeros(2), torch.full((2,), 100.0))}
    assert survey_check.compare(a, a) == (0.0, "")
    off = {"x": torch.ones(3, 2), "y": (torch.zeros(2), torch.full((2,), 100.02))}
    assert survey_check.compare(a, off)[0] == pytest.approx(0.02 / 100.0, rel=1e-3)
    assert survey_check.compare(a, {"x": torch.ones(3, 2)})[0] == float("inf")
    assert survey_check.compare(torch.ones(3), torch.ones(4))[0] == float("inf")

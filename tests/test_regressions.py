"""Named regression cases (failures of the differential test, tests/test_differential.py, and
hazards it draws rarely), one model class each in tests/models/regressions.py: generate_all must accept the model and its generated `inference`
must equal the full-graph forward (verify.check on 97 nodes, batch sizes 1, 13 and 97).

A class that still fails sets `XFAIL = "<what fails>"`; its case is then marked
xfail(strict=True), so it shows as an expected failure until gnn-codegen is fixed, and as an
error (XPASS) once it is, which is the reminder to delete the XFAIL line.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

from gnn_codegen.pipeline import generate_all
from gnn_codegen.verify.check import check
from tests.cases import CASES_BY_NAME, generate_case
from tests.models import regressions

MODEL = Path(__file__).parent / "models" / "regressions.py"


def _cases() -> list:
    classes = [
        cls for _, cls in inspect.getmembers(regressions, inspect.isclass)
        if issubclass(cls, torch.nn.Module) and cls.__module__ == regressions.__name__
        and not cls.__name__.startswith("_")  # a helper module of a case
    ]
    classes.sort(key=lambda cls: inspect.getsourcelines(cls)[1])
    return [
        pytest.param(cls.__name__, id=cls.__name__, marks=(
            [pytest.mark.xfail(strict=True, reason=cls.XFAIL)] if getattr(cls, "XFAIL", None) else []
        ))
        for cls in classes
    ]


CASES = _cases()


@pytest.mark.parametrize("name", CASES)
def test_regression_case_generates_exact_inference(name: str) -> None:
    generated = generate_all(f"{MODEL}:{name}")
    result = check(generated, num_nodes=97, batch_sizes=(1, 13, 97))
    assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_every_case_says_what_failed() -> None:
    for param in CASES:
        cls = getattr(regressions, param.values[0])
        assert cls.__doc__ and cls.__doc__.strip(), f"{cls.__name__} needs a docstring saying what failed"


def test_activations_run_in_place_only_where_nothing_else_reads_the_input() -> None:
    """F.relu(h, inplace=True) where h is a written-out convolution's new tensor with no other
    reader (the sage example); as written where h is read again (a regression model)."""
    sage = generate_case(CASES_BY_NAME["sage"])
    assert sage.source.count("F.relu(h, inplace=True)") == 1  # in the one loop over the layers
    both = generate_all(f"{MODEL}:ActivationBesideASecondReader").source
    assert "inplace=True" not in both
    assert "F.relu(" in both and "F.elu(" in both


def test_linears_over_concatenations_skip_only_the_concatenations_nothing_else_reads() -> None:
    """nn.Linear over torch.cat of columns nothing else reads: a product per part, the
    concatenation never made (a regression model checks the numbers)."""
    source = generate_all(f"{MODEL}:LinearOverConcatenations").source
    inference = source.split("def inference")[1].split("# --- gnn-codegen ")[0]  # not the helpers
    code = [line for line in inference.splitlines() if not line.strip().startswith("#")]
    assert sum("torch.cat(" in line for line in code) == 1  # the one the sum reads too
    # the classifier, its weight sliced by its three parts' widths (templates/convs.py.j2)
    assert sum("_linear_of_concatenation(self.classify, [x, " in line for line in code) == 1


def test_a_model_in_float64_gets_float64_inputs_and_exact_inference() -> None:
    generated = generate_all(f"{MODEL}:in_float64")
    assert [spec.dtype for spec in generated.attributes.inputs] == ["torch.float64"]
    result = check(generated, num_nodes=97, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"


def test_a_dict_of_results_is_returned_by_name(tmp_path) -> None:
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source, random_graph

    generated = generate_all(f"{MODEL}:ReturnsADict")
    assert check(generated, num_nodes=97, batch_sizes=(1, 13, 97)).ok
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = random_graph(50, seed=2)
    x = torch.randn(50, 8, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = model(g, x)
    nodes = torch.tensor([4, 0, 4])
    for kwargs in ({}, {"nodes": nodes}, {"storage": tmp_path}):
        result = model.inference(g, x, 7, "cpu", **kwargs)
        assert list(result) == ["logits", "embedding"]
        for key, want in expected.items():
            want = want[nodes] if "nodes" in kwargs else want
            assert torch.allclose(result[key], want, atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result_0.npy", "result_1.npy"]

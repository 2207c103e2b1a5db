"""Every case in generated_examples/ regenerates byte for byte; the output parses, black leaves
it unchanged, and generating twice gives identical bytes."""

from __future__ import annotations

import ast
import difflib

import black
import pytest

from tests.cases import UPDATE_COMMAND, Case, all_cases, generate_case

CASES = all_cases(heterogeneous=True)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 6, [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_golden(case: Case) -> None:
    actual = generate_case(case).source
    expected = case.golden.read_text() if case.golden.exists() else ""
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=f"{case.golden} (golden)", tofile=f"{case.golden} (regenerated)",
        ))
        pytest.fail(
            f"generated code for {case.name} changed:\n{diff}\nIf the change is intended, run "
            f"`{UPDATE_COMMAND} {case.name}` and review `git diff generated_examples`.",
            pytrace=False,
        )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_output_parses_is_black_and_deterministic(case: Case) -> None:
    first = generate_case(case).source
    second = generate_case.__wrapped__(case).source  # generated again, not the cached value
    assert first == second
    ast.parse(first)
    assert black.format_str(first, mode=black.Mode()) == first
    assert "gnn_codegen" not in first.replace("gnn-codegen", "")  # runs without the tool
    assert "__main__" not in first
    # every line of what gnn-codegen writes fits in 100 characters (the user's are theirs)
    method = first[first.index("    @torch.no_grad()"):]
    long = [line for line in method.splitlines() if len(line) > 100]
    assert not long, long


def test_helper_templates_render_black_formatted() -> None:
    """The runtime and every written-out convolution, with the names the templates are written
    for, are black's format as rendered: gnn-codegen formats only the rest of the module then."""
    from gnn_codegen.node_reductions import RUNTIME_METHODS
    from gnn_codegen.render import RUNTIME, render_helpers
    from gnn_codegen.write_out import SECTIONS

    names = {s: f"_{s}" for s in SECTIONS}
    for used in [set(SECTIONS), *({s} for s in SECTIONS)]:
        # the runtime's reductions over all nodes (node_reductions.py): none, each, all
        methods = sorted(set(RUNTIME_METHODS.values()))
        for reduces in [frozenset(), *(frozenset({m, "sum_nodes"}) for m in methods), frozenset(methods)]:
            helpers = render_helpers(RUNTIME, used, names, reduces).strip("\n") + "\n"
            assert black.format_str(helpers, mode=black.Mode()) == helpers, (sorted(used), reduces)
    # with the method that returns a range of rows (row_ranges.py)
    helpers = render_helpers(RUNTIME, set(), names, frozenset(), ranges=True).strip("\n") + "\n"
    assert "def result_rows(" in helpers and black.format_str(helpers, mode=black.Mode()) == helpers


def test_hetero_helper_templates_render_black_formatted() -> None:
    """The heterogeneous runtime with each combination of its optional sections."""
    from gnn_codegen.hetero.generate import HETERO_SECTIONS, render_hetero_helpers

    sections = sorted(HETERO_SECTIONS)
    for used in [set(), set(sections), *({s} for s in sections)]:
        helpers = render_hetero_helpers(used).strip("\n") + "\n"
        assert black.format_str(helpers, mode=black.Mode()) == helpers, sorted(used)

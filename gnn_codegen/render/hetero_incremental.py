"""Stage 6, render (heterogeneous): where incremental re-inference (changed=, keep_layers=) cannot
be exact for a model, the lines at the method's entry that refuse it with a ValueError, and the
reason the docstring gives. The machinery is the runtime's (templates/hetero_incremental.py.j2)."""

from __future__ import annotations

from gnn_codegen.render.quoted_lines import raised


def refused(returns_rows: bool, count_lines: list[str]) -> tuple[str, str] | None:
    """(the condition, the reason) where the model cannot have it: a result that is no rows of
    a node type, which the runtime cannot keep apart from its kept layers (so that a result once
    returned never changes); or forward reading an edge count of g, which edges added or removed
    change for every row at once (node counts are the manifest's, never changed)."""
    if not returns_rows:
        return ("changed is not None or keep_layers",
                "forward returns no rows per node of a type, which a run would keep apart from its layers")
    calls = [line.split(" = ", 1)[1] for line in count_lines]
    edges = [call for call in calls if "edge" in call.split("(", 1)[0].rsplit(".", 1)[-1]]
    if edges:
        return ("changed is not None",
                f"forward reads {edges[0]}, which edges added or removed change for every row: a full run "
                "recomputes them")
    return None


def refusal_lines(returns_rows: bool, count_lines: list[str]) -> list[str]:
    found = refused(returns_rows, count_lines)
    if found is None:
        return []
    condition, reason = found
    message = f"changed= and keep_layers= (incremental re-inference) are not done for this model: {reason}"
    return raised(condition, message)


def paragraph(returns_rows: bool, count_lines: list[str]) -> str:
    """The docstring's sentence where this model refuses keep_layers= or changed=; else "" (what
    they do is the same in every module: the runtime's docstring says it)."""
    found = refused(returns_rows, count_lines)
    if found is None:
        return ""
    return f"changed= and keep_layers= (incremental re-inference): ValueError, as {found[1]}."

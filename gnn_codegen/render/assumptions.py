"""Render, entry checks: what forward's Python decisions on its values' shapes and dtypes assumed
of its inputs (ir.StaticDecision, static_decisions.py), as the lines at the top of the generated
inference that refuse other inputs with a ValueError instead of computing the other branch's
result with this one's code. Also the notes that list those decisions for the user."""

from __future__ import annotations

import os

from gnn_codegen.ir import Assumption, StaticDecision, location_parts
from gnn_codegen.render.code import comment
from gnn_codegen.render.quoted_lines import in_quotes, line_said


def assumptions_by_input(decisions: tuple[StaticDecision, ...]) -> dict[tuple[str, str], tuple[Assumption, str]]:
    """Each (input, what) assumed once, with the user's line of the first decision that assumes
    it as the generated message says it; a shape implies its number of dimensions, so ndim is
    left out where the shape is known."""
    found: dict[tuple[str, str], tuple[Assumption, str]] = {}
    for decision in decisions:
        for assumption in decision.assumptions:
            found.setdefault((assumption.input, assumption.what), (assumption, line_said(decision.where, decision.source)))
    return {key: value for key, value in found.items()
            if not (key[1] == "ndim" and (key[0], "shape") in found)}


# the characters a line of the message may take: black puts it 16 columns in, and no line of
# the generated method is longer than 100
_MESSAGE_WIDTH = 84


def entry_checks(decisions: tuple[StaticDecision, ...], names: dict[str, str]) -> list[str]:
    """One check per assumption, `names`: forward's input -> its name in the generated method."""
    checks = assumptions_by_input(decisions)
    if not checks:
        return []
    why = "forward decides in Python on what its inputs are: generated for inputs like these"
    if any(d.intermediate for d in decisions):
        why += " (what it tests of values computed from them follows from these and the model's weights)"
    lines = comment(why)
    for (param, what), (assumption, place) in checks.items():
        x = names[param]
        where = in_quotes(place)
        hint = f"regenerate with --feat-dims {param}=WIDTH"
        if what == "shape":
            shape = tuple(assumption.value)
            test, got = f"{x}.shape[1:] != {shape!r}", f"tuple({x}.shape[1:])"
            expected = f"width {shape[0]}" if len(shape) == 1 else f"rows of shape {shape!r}"
        elif what == "ndim":
            test, got = f"{x}.dim() != {assumption.value}", f"{x}.dim()"
            expected, hint = f"{assumption.value} dimensions", hint + " (4x16 for rows of shape (4, 16))"
        else:
            test, got = f"{x}.dtype != {assumption.value}", f"{x}.dtype"
            expected, hint = str(assumption.value), ""
        first = f"\"{x}: generated for {expected}, as forward decides at {where}; \""
        second = f"f\"got {'rows of shape ' if what == 'shape' else ''}{{{got}}}" + (f": {hint}" if hint else "") + "\""
        if max(len(first), len(second)) > _MESSAGE_WIDTH:  # in pieces, so that each line fits
            first = f"\"{x}: generated for {expected}, \"\n\"as forward decides at {where}; \""
            second = f"f\"got {'rows of shape ' if what == 'shape' else ''}{{{got}}}" + (f": \"\n\"{hint}\"" if hint else "\"")
        lines += [f"if {test}:", "    raise ValueError(", *(f"        {part}" for part in f"{first}\n{second}".split("\n")),
                  "    )"]
    return lines


def decision_notes(decisions: tuple[StaticDecision, ...]) -> tuple[str, ...]:
    """forward's decisions, each with what the module was generated for (--explain, notes)."""
    by_line: dict[tuple[str, str], list[StaticDecision]] = {}
    for decision in decisions:  # a test in a loop is met once per round: said once
        by_line.setdefault((_place(decision.where), decision.source), []).append(decision)
    notes = []
    for (where, source), met in by_line.items():
        assumed = [a for a, _ in assumptions_by_input(tuple(met)).values()]
        follows = " (what it tests follows from that and the model's weights)" if any(d.intermediate for d in met) else ""
        if not assumed:  # of the model's own tables and weights, which no input changes
            notes.append(f"forward's `{source}` at {where} is decided while tracing: it tests only what "
                         "the model's own weights and tables fix")
            continue
        notes.append(f"forward's `{source}` at {where} is decided while tracing: generated for "
                     f"{', '.join(_spelled(a) for a in assumed)}{follows}; the generated method checks "
                     "that its inputs agree")
    return tuple(notes)


def _spelled(assumption: Assumption) -> str:
    if assumption.what == "shape":
        shape = tuple(assumption.value)
        if not shape:
            return f"{assumption.input} of one number per row"
        return f"{assumption.input} of width {shape[0]}" if len(shape) == 1 else \
            f"{assumption.input} with rows of shape {shape!r}"
    if assumption.what == "ndim":
        return f"{assumption.input} of {assumption.value} dimensions"
    return f"{assumption.input} of dtype {assumption.value}"


def _place(where: str) -> str:
    """`file.py:LINE`: the file's name alone, the same wherever the command runs (and the
    line's code after it where the location has it, which may hold colons of its own)."""
    parts = location_parts(where)
    place = f"{os.path.basename(parts.path)}:{parts.line}" if parts.path else parts.place
    return place + (f" (`{parts.code}`)" if parts.code else "")

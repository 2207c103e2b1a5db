"""Render, a loop's activation tested as the module's forward tests it (issue 37): a stack whose
last layer is built without its activation (DGL's TAGCN example: `activation=None` in the
last TAGConv) ends, in the loop's function, `if i == last: return h` before
`h = self.layers[i].activation(h)`, which reads as if the last layer forgot it. Where the
last layer's module holds None under that attribute (lower/module_lengths.unset_functions),
the call is tested as DGL's forward tests it, `if self.layers[i].activation:`, in every
layer, before the last layer's early return; the heterogeneous loops do the same
(hetero_loop_ending.py)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace

from gnn_codegen.render.last_copies import Ending


def activation_tested(body: list[str], ending: Ending, counter: str, last_index: int,
                      unset: tuple[str, ...]) -> tuple[list[str], Ending] | None:
    """The body and ending with the others' first ending line, `x = self.L[i].A(x)`, tested
    and moved before the last layer's `return x`; None where the ending is not so or the last
    layer's module holds A."""
    if len(ending.last) != 1:
        return None
    rest = body[ending.shared:]
    returned = ending.last[0].strip().removeprefix("return ")
    if not rest or not returned.isidentifier() or not ending.last[0].strip().startswith("return "):
        return None
    # the call already under its module's test, as its forward writes it (setting_branches.py)
    kept = _kept_test(rest)
    call = rest[len(kept)] if kept else rest[0]
    applied = re.fullmatch(rf"(\w+) = (self(?:\.\w+)+)\[{re.escape(counter)}\]\.(\w+)\((\w+)\)", call.strip())
    if applied is None or applied.group(1) != returned or applied.group(4) != returned:
        return None
    path, attribute = applied.group(2), applied.group(3)
    if f"{path}[{last_index}].{attribute}" not in unset:
        return None
    if kept and f"{path}[{counter}].{attribute}" not in kept[-1]:
        return None
    indent = rest[0][: len(rest[0]) - len(rest[0].lstrip())]
    tested = f"{path}[{counter}].{attribute}"
    said = f"{indent}# as the layer's forward tests it: the last layer has no {attribute.lstrip('_')}"
    if kept:  # the module's own test, kept; the line above says why it matters here
        lines = [said, *(_code(line) for line in kept if not line.strip().startswith("#")), call]
    else:
        lines = [said, f"{indent}if {tested}:", f"{indent}    {call.strip()}"]
    shared = body[: ending.shared]
    after = rest[len(kept) + 1:] if kept else rest[1:]
    return [*shared, *lines, *after], replace(ending, shared=len(shared) + len(lines))


def _kept_test(rest: list[str]) -> list[str]:
    """The lines of an `if ...:` (and the comment above it, where one is) before an indented
    call, at the start of `rest`; [] where it does not start so."""
    at = 1 if rest and rest[0].strip().startswith("#") else 0
    if len(rest) < at + 2 or not rest[at].strip().startswith("if ") or not _code(rest[at]).endswith(":"):
        return []
    indent = len(rest[at]) - len(rest[at].lstrip())
    if len(rest[at + 1]) - len(rest[at + 1].lstrip()) <= indent:
        return []
    if len(rest) > at + 2 and len(rest[at + 2]) - len(rest[at + 2].lstrip()) > indent:
        return []  # more than the call under it
    return rest[: at + 1]


def unset_said(body: list[str], modules: list[str], unset: tuple[str, ...]) -> list[str]:
    """The body of a layer that finishes a module holding None where others of its class hold
    a function (TAGCN's last TAGConv, `activation=None`), with a comment before its return
    that says so: the others' functions call it and this one does not (issue 37: "layer 4
    silently drops the activation")."""
    said = [path for module in modules for path in unset if path.rpartition(".")[0] == module]
    if not said or not body or not body[-1].startswith("return "):
        return body
    named = ", ".join(f"{path} is None" for path in said)
    # within 88 columns in a function of the method's body (indented 12)
    text = textwrap.wrap(f"as the layer's forward tests it: {named} in this model, so none is applied", 88 - 12 - 2)
    return [*body[:-1], *(f"# {line}" for line in text), body[-1]]


def forward_tested(body: list[str], counter: str, index: int, tested: tuple[str, ...]) -> list[str]:
    """A loop's body with each `x = self.L[i].A(x)` whose module's forward tests A before
    calling it (lower/module_lengths.tested_functions: ChebConv's `if self.activation:`)
    under the same test, so that the loop reads as DGL's forward, not as a call that forgot
    the test; one already tested (activation_tested) as it is."""
    out: list[str] = []
    for line in body:
        applied = re.fullmatch(rf"(\s*)(\w+) = (self(?:\.\w+)+)\[{re.escape(counter)}\]\.(\w+)\((\w+)\)", line)
        if applied is None or applied.group(2) != applied.group(5) or out and out[-1].strip().startswith("if "):
            out.append(line)
            continue
        indent, path, attribute = applied.group(1), applied.group(3), applied.group(4)
        if f"{path}[{index}].{attribute}" not in tested:
            out.append(line)
            continue
        out += [f"{indent}if {path}[{counter}].{attribute}:  # as the module's forward tests it",
                f"    {line}"]
    return out


def _code(line: str) -> str:
    """The line without its trailing comment."""
    return line.split("  #")[0].rstrip()

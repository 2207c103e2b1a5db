"""Render, a value of no rows the method binds under a counted name takes its base's name back
where the base is dead (issue 37): PairNorm's column mean after layer 2 was `col_mean_2` beside
`col_mean` after layer 1, though nothing read the first once the second was made; now both are
`col_mean`, as a person reusing a variable writes it. Only values bound before a pass or layer
(reductions over all nodes and what is computed from them alone, a module function's results:
module_functions.py) are renamed, never stored tensors or the caller's, and only where no code
from the binding on reads or binds the base, but for a function's own local of that name in a
function that does not read the value."""

from __future__ import annotations

import ast
import re

from gnn_codegen.render.module_functions import free_names, rename_in, reads, tokens

_COUNTED = re.compile(r"^(\w*[A-Za-z])_\d+$")


def bound(line: str) -> list[str]:
    """The names a statement of one line binds, where it is an assignment to names."""
    try:
        statement = ast.parse(line).body
    except SyntaxError:
        return []
    if len(statement) != 1 or not isinstance(statement[0], ast.Assign):
        return []
    return [n.id for t in statement[0].targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _text(d: dict) -> list[str]:
    f = d.get("function")
    own = [f"def {f.name}({', '.join(f.params)}):", *(f"    {b}" for b in f.body)] if f else []
    return [*d["before"], *own, *d["after"]]


def _free_of_base(d: dict, value: str, base: str) -> bool:
    """d's code neither reads nor binds base, but as a local of its function that does not read
    value."""
    f = d.get("function")
    level = [*d["before"], *d["after"]]
    if base in {t for _, t in tokens(level) or [(0, base)]}:
        return False
    if f is None or base not in {t for _, t in tokens(_text(d)) or ()}:
        return True
    functions = free_names("\n".join(_text(d))) or [("", frozenset({base}), frozenset({value}))]
    return all(base not in free and (value not in free or base not in own) for _, own, free in functions)


def uncounted(stages: list[dict], kept: set[str]) -> None:
    """stages (the method's stage dicts) with their counted values renamed in place; kept: the
    names never renamed (stored tensors, the caller's)."""
    for k, d in enumerate(stages):
        for line in list(d["before"]):
            for name in bound(line):
                match = _COUNTED.match(name)
                if name in kept or match is None:
                    continue
                base = match.group(1)
                later = stages[k:]
                if any(base in reads(other) for other in later):
                    continue
                if not all(_free_of_base(other, name, base) for other in later):
                    continue
                for other in later:
                    rename_in(other, {name: base})
                    f = other.get("function")
                    if f is not None:
                        f.params[:] = [base if p == name else p for p in f.params]


"""Splice's import placement: an import the generated code adds (`import numpy`, `import os`)
goes where isort would put it among the user's imports, so that a module the user keeps
isort-clean stays so (isort's default profile: sections future, standard library, the rest;
in a section, `import x` before `from x import y`, each by module name)."""

from __future__ import annotations

import sys

import libcst as cst

_FUTURE, _STANDARD, _OTHER = 0, 1, 2


def _key(node: cst.CSTNode) -> tuple[int, int, str] | None:
    """(section, from-import?, module) of a one-import statement line, else None."""
    if not isinstance(node, cst.SimpleStatementLine) or len(node.body) != 1:
        return None
    statement = node.body[0]
    if isinstance(statement, cst.Import):
        module = cst.Module(body=[]).code_for_node(statement.names[0].name)
        from_import = 0
    elif isinstance(statement, cst.ImportFrom) and statement.module is not None and not statement.relative:
        module = cst.Module(body=[]).code_for_node(statement.module)
        from_import = 1
    else:
        return None
    top = module.split(".")[0]
    section = _FUTURE if top == "__future__" else _STANDARD if top in sys.stdlib_module_names else _OTHER
    return section, from_import, module.lower()


def insert_sorted(body: list[cst.CSTNode], line: str) -> list[cst.CSTNode]:
    """`body` (the module's statements above the class) with the import `line` where isort
    puts it: before the first import of its section that sorts after it, else after the last
    of its section; a section of its own (a blank line apart) where the module has none."""
    new = cst.ensure_type(cst.parse_statement(line), cst.SimpleStatementLine)
    key = _key(new)
    assert key is not None, line
    imports = [(i, k) for i, k in ((i, _key(n)) for i, n in enumerate(body)) if k is not None]
    same = [(i, k) for i, k in imports if k[0] == key[0]]
    after = next((i for i, k in same if k > key), None)
    if after is not None:  # it takes the place, and the blank lines or comments, of the one after it
        moved = cst.ensure_type(body[after], cst.SimpleStatementLine)
        new = new.with_changes(leading_lines=moved.leading_lines)
        return [*body[:after], new, moved.with_changes(leading_lines=[]), *body[after + 1:]]
    if same:
        at = same[-1][0] + 1
        return [*body[:at], new, *body[at:]]
    later = next((i for i, k in imports if k[0] > key[0]), None)
    if later is not None:  # a section of its own before the sections after it
        moved = cst.ensure_type(body[later], cst.SimpleStatementLine)
        new = new.with_changes(leading_lines=moved.leading_lines)
        moved = moved.with_changes(leading_lines=[cst.EmptyLine()])
        return [*body[:later], new, moved, *body[later + 1:]]
    at = imports[-1][0] + 1 if imports else 0
    spaced = [cst.EmptyLine()] if imports else []
    return [*body[:at], new.with_changes(leading_lines=spaced), *body[at:]]

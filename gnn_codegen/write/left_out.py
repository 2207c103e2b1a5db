"""After splice: what of the user's file the generated module does not do, said on stderr.
Top-level statements that run code when the file is imported and were left out (the class does
not need them), those that do a script's work and were kept (the class needs them), and the
statements of forward done for their effect (a print, a global counter, a file written), which
tracing runs once and `inference` does not repeat. Read from the two sources' syntax trees, so
the same for every kind of model."""

from __future__ import annotations

import ast
from pathlib import Path

from gnn_codegen.load.model import first_work, is_main_guard, walk_executed

# Modules whose calls compute values, which the trace follows; a call rooted at any other name
# of the file (logging, wandb, a logger or writer it made) is made for its effect
_COMPUTING = frozenset({"torch", "dgl", "numpy", "math", "operator", "functools", "itertools"})
_SHOWN = 4  # statements named in one message; the rest are counted


def top_level_report(source: str, path: Path, generated: str, class_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(warnings, notes) about the user's top-level statements that run code when imported."""
    user = ast.parse(source).body
    kept = {ast.dump(s) for s in ast.parse(generated).body}
    functions = frozenset(s.name for s in user if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
    dropped, work = [], []
    for statement in user:
        if not _runs_code(statement):
            continue
        if ast.dump(statement) not in kept:
            dropped.append(statement)
        elif first_work([statement], functions) is not None:
            work.append(statement)
    warnings = ()
    if work:
        warnings = (
            f"the generated module keeps {_lines(work, source, path)} from {path}, which {class_name} needs; "
            "it does a script's work (loading data, reading the command line), so it runs wherever the "
            "generated module is imported: move what the class needs from it into the class, or into a "
            "function the class calls",
        )
    notes = ()
    if dropped:
        notes = (
            f"left out of the generated module: {_lines(dropped, source, path)}, which run code when "
            f"{path} is imported and which {class_name} does not need",
        )
    return warnings, notes


def forward_effects(source: str, path: Path, class_name: str) -> tuple[str, ...]:
    """A warning naming the statements of the class's forward done for their effect alone."""
    tree = ast.parse(source)
    forward = next((f for c in tree.body if isinstance(c, ast.ClassDef) and c.name == class_name
                    for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return ()
    effects = _effects(forward.body, _effect_roots(tree), set(), set())
    if not effects:
        return ()
    return (
        f"{class_name}.forward does more than compute its result: {_lines(effects, source, path)}. The "
        "generated inference computes forward's result and does not repeat these (they ran once while "
        "gnn-codegen traced forward); do them around the call to inference if you need them",
    )


def _effects(statements: list[ast.stmt], roots: frozenset[str], declared: set[str],
             files: set[str]) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, (ast.Global, ast.Nonlocal)):
            declared.update(statement.names)
        elif isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(_root(t) == "self" and not isinstance(t, ast.Name) or _root(t) in declared for t in targets):
                found.append(statement)  # self.last = x, calls += 1 (global calls)
            elif isinstance(statement.value, ast.Call) and _name(statement.value.func) == "open":
                files.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            if any(isinstance(i.context_expr, ast.Call) and _name(i.context_expr.func) == "open" for i in statement.items):
                found.append(statement)  # with open(...) as f: a file read or written
                continue
            found += _effects(statement.body, roots, declared, files)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            root = _root(statement.value.func)
            if root == "print" or root in roots or root in files:
                found.append(statement)
        elif isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try)):
            inner = [*statement.body, *statement.orelse]
            if isinstance(statement, ast.Try):
                inner += [s for h in statement.handlers for s in h.body] + statement.finalbody
            found += _effects(inner, roots, declared, files)
    return found


def _effect_roots(tree: ast.Module) -> frozenset[str]:
    """The file's top-level names a call in forward is made for its effect on: modules other
    than torch's and dgl's (logging, wandb, sys) and objects it made (a logger, a writer)."""
    roots: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            package = statement.module if isinstance(statement, ast.ImportFrom) else None
            for alias in statement.names:
                top = (package or alias.name).split(".")[0]
                if top not in _COMPUTING and not getattr(statement, "level", 0):
                    roots.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
            roots.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    return frozenset(roots)


def _runs_code(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return False
    if isinstance(statement, ast.If) and is_main_guard(statement.test):
        return False
    return any(isinstance(n, ast.Call) for n in walk_executed(statement))


def _root(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _lines(statements: list[ast.stmt], source: str, path: Path) -> str:
    shown = []
    for statement in statements[:_SHOWN]:
        text = (ast.get_source_segment(source, statement) or "").strip().splitlines()[0]
        text = text if len(text) <= 50 else text[:47] + "..."
        shown.append(f"{path}:{statement.lineno} (`{text}`)")
    more = len(statements) - _SHOWN
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

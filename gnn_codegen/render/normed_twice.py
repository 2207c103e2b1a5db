"""Render, a factor a layer's function applies twice says why (issue 37): SGConv's and TAGConv's
hops end `h = h * norm` and then `return h * norm` (the norm of this hop's result, then of the
copy the next hop sends from, which the cut placed here), which reads as a slip. Where a
function returns `x * f` and an earlier statement of its body was `x = ... * f` (the same two
names), a comment before the return says what each is."""

from __future__ import annotations

import ast
import textwrap

# a comment's width in a body indented 16 (a function made in the method's loop), of 88 columns
_WIDTH = 88 - 16 - 2


def _scaled(node: ast.AST) -> tuple[str, str] | None:
    """(x, f) for the expression `x * f` of two names."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        if isinstance(node.left, ast.Name) and isinstance(node.right, ast.Name):
            return node.left.id, node.right.id
    return None


def said_twice(body: list[str]) -> list[str]:
    """The body with `# ... again: ...` before each return of `x * f` where x was assigned
    `... * f` earlier in it (at the top level of the body; a body that does not parse alone
    is kept as it is)."""
    try:
        module = ast.parse(textwrap.dedent("\n".join(body)))
    except SyntaxError:
        return body
    if any("\n" in line for line in body):
        return body
    if any(isinstance(node, (ast.For, ast.While)) for node in ast.walk(module)):
        return body  # an assignment below a return in the text may run before it
    # the assignments to each name, by line: a return reads the last one above it
    assigned: dict[str, list[tuple[int, ast.expr]]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in (t for t in ast.walk(target) if isinstance(t, ast.Name)):
                    assigned.setdefault(name.id, []).append((node.lineno, node.value))
    comments: dict[int, str] = {}  # line index (0-based) -> the comment before it
    for node in ast.walk(module):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        for value in values:
            pair = _scaled(value)
            if pair is None:
                continue
            x, f = pair
            above = [made for line, made in assigned.get(x, []) if line < node.lineno]
            made = max(above, key=lambda m: m.lineno) if above else None
            if (isinstance(made, ast.BinOp) and isinstance(made.op, ast.Mult) and isinstance(made.right, ast.Name)
                    and made.right.id == f):
                comments[node.lineno - 1] = (f"`* {f}` again, not a slip: above, on this layer's result; here, "
                                             "on the copy the next layer reads")
                break
    if not comments:
        return body
    written: list[str] = []
    for i, line in enumerate(body):
        if i in comments:
            indent = line[: len(line) - len(line.lstrip())]
            written += [f"{indent}# {part}" for part in textwrap.wrap(comments[i], _WIDTH - len(indent))]
        written.append(line)
    return written

"""Render, a layer function's body with its names made anonymous, to compare with another's
(layer_loops.py): parameters by position, and every local by the order it is assigned in, so
that two bodies compare equal exactly where they compute the same from the same parameters,
whatever their names. Text substitution of the parameters alone is not enough: where a local
takes a parameter's name (`h = self.layers[0](block, (h, h_dst))`, as forward writes it) it
would be read as the parameter."""

from __future__ import annotations

import ast
import textwrap


class _Anonymous(ast.NodeTransformer):
    """Names read take the name their value was given (a parameter's `\\0{i}`, a local's `v{n}`
    for the n-th assignment); names assigned take a new one. A statement's values are visited
    before its targets, as Python runs it."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = dict(names)
        self.count = 0

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(self.names.get(node.id, node.id), node.ctx), node)
        self.count += 1
        self.names[node.id] = f"v{self.count}"
        return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        node.value = self.visit(node.value)
        node.targets = [self.visit(target) for target in node.targets]
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        node.value = self.visit(node.value)
        if not isinstance(node.target, ast.Name):  # `h[...] += x`: reads and writes in place
            node.target = self.visit(node.target)
            return node
        # `h += x` reads the old value and names the new one: `v2 = v1 + x`
        old = ast.Name(self.names.get(node.target.id, node.target.id), ast.Load())
        new = self.visit(ast.Name(node.target.id, ast.Store()))
        return ast.copy_location(ast.Assign([new], ast.BinOp(old, node.op, node.value)), node)

def anonymous_body(body: list[str], names: dict[str, str]) -> tuple[str, ...] | None:
    """The body's lines with names read and assigned made anonymous (names: the parameters'
    anonymous names); None where the body does not parse alone or branches (not compared so)."""
    try:
        module = ast.parse(textwrap.dedent("\n".join(body)))
    except SyntaxError:
        return None
    if any(isinstance(n, (ast.For, ast.While, ast.Try, ast.FunctionDef, ast.Lambda, ast.comprehension,
                          ast.Global, ast.Nonlocal, ast.NamedExpr)) for n in ast.walk(module)):
        return None
    # a test of the model's settings alone (a module's forward's, setting_branches.py) compares
    # as any statement; a test of the body's values does not
    if any(isinstance(n, ast.If) and any(isinstance(m, ast.Name) and m.id != "self" for m in ast.walk(n.test))
           for n in ast.walk(module)):
        return None
    module = _Anonymous(names).visit(module)
    return tuple(ast.unparse(statement) for statement in module.body)


def bindings_kept(body: list[str], renamed: list[str], names: dict[str, str], renamed_names: dict[str, str]) -> bool:
    """Whether `renamed` is `body` with names changed and nothing else: every name read is still
    the value it was (a local renamed onto another's name would read that one instead). names,
    renamed_names: each's parameters' anonymous names. Branches and loops are compared too."""
    try:
        ours, theirs = (ast.parse(textwrap.dedent("\n".join(lines))) for lines in (body, renamed))
    except SyntaxError:
        return False
    return ast.unparse(_Anonymous(names).visit(ours)) == ast.unparse(_Anonymous(renamed_names).visit(theirs))

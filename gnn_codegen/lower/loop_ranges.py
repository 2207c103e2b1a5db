"""Stage 3, lower, the user's loops over a count the model holds: `for j in range(self.num_etypes):`
in forward, with the lines each spans and the count's value on the model traced. A graph forward
derives on one line of such a loop, once per value of its variable (an edge subgraph per edge
type), is written once in the generated inference as a comprehension over the same range
(render/graph_lists.py), `[... for j in range(self.num_etypes)]`, where a number would hide where
the count comes from. Only a count the model alone gives (its attributes, `len` of them,
numbers) is kept: inference has none of forward's locals. The generated inference checks first
that the model is built as the one traced (render/built.py), so the count read at run time is
this one."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import torch.nn as nn


@dataclass(frozen=True)
class LoopRange:
    path: str  # the file as the ops' locations name it
    first: int  # the loop's lines, its header's first
    last: int
    var: str  # the loop's variable, `j`
    spelled: str  # the count as the user's file writes it, `self.num_etypes`; "" where it is
    # not the model's alone (`range(len(mfgs))`): kept, so that a line in it is not taken for
    # a line of a loop around it
    value: int  # its value on the model traced (0 where spelled is "")

    def holds(self, location: str) -> bool:
        """The location ("file.py:12 (`...`)") is a line of the loop's body."""
        where = location.split(" ", 1)[0]
        path, _, line = where.rpartition(":")
        return path == self.path and line.isdigit() and self.first < int(line) <= self.last


def _of_model(node: ast.AST) -> bool:
    """An expression of the model alone: `self.a.b`, `len(self.convs)`, numbers, + and -."""
    if isinstance(node, ast.Attribute):
        return _of_model(node.value)
    if isinstance(node, ast.Name):
        return node.id == "self"
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.Add, ast.Sub)) and _of_model(node.left) and _of_model(node.right)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1
                and not node.keywords and _of_model(node.args[0]))
    return False


def loop_ranges(source: str, path: Path | str, model: nn.Module) -> tuple[LoopRange, ...]:
    """Every `for NAME in ...:` of the model's class (its methods, where `self` is the model:
    not a submodule's forward, whose `self` is another), with its count where it is
    `range(COUNT)` of the model's alone and its value on `model` an int; spelled "" otherwise."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == type(model).__name__]
    if len(classes) != 1:
        return ()
    found = []
    for node in ast.walk(classes[0]):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        var = node.target.id if isinstance(node.target, ast.Name) else ""
        spelled, value = "", 0
        if (var and not node.orelse and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                and node.iter.func.id == "range" and len(node.iter.args) == 1 and not node.iter.keywords
                and _of_model(node.iter.args[0])):
            try:  # an expression of attributes, len and numbers alone (_of_model): nothing else runs
                counted = eval(compile(ast.Expression(node.iter.args[0]), "<count>", "eval"),
                               {"__builtins__": {"len": len}}, {"self": model})
            except Exception:  # an attribute forward sets itself, say: not the model's as built
                counted = None
            if type(counted) is int:
                spelled, value = ast.unparse(node.iter.args[0]), counted
        found.append(LoopRange(str(path), node.lineno, node.end_lineno or node.lineno, var, spelled, value))
    return tuple(found)


def innermost(ranges: tuple[LoopRange, ...], location: str) -> LoopRange | None:
    """The innermost loop of the file that holds the location's line, None where none does."""
    holding = [r for r in ranges if r.holds(location)]
    return max(holding, key=lambda r: r.first, default=None)

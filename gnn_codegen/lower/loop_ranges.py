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
    first: int  # the first line of the loop's body (a comprehension's: its own first line)
    last: int
    var: str  # the loop's variable, `j`
    spelled: str  # the count as the user's file writes it, `self.num_etypes`; "" where it is
    # not the model's alone (`range(len(mfgs))`): kept, so that a line in it is not taken for
    # a line of a loop around it
    value: int  # its value on the model traced (0 where spelled is "")
    comprehension: bool = False  # `[... for j in range(...)]`: the line's variable is the list

    def holds(self, location: str) -> bool:
        """The location ("file.py:12 (`...`)") is a line of the loop's body."""
        where = location.split(" ", 1)[0]
        path, _, line = where.rpartition(":")
        return path == self.path and line.isdigit() and self.first <= int(line) <= self.last


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
    """Every `for NAME in ...:` and one-generator list comprehension of the model's class (its methods, where `self` is the model:
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
        if isinstance(node, (ast.For, ast.AsyncFor)):
            target, loop_iter, plain, first = node.target, node.iter, not node.orelse, node.body[0].lineno
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp)):  # one generator, no `if`
            generator = node.generators[0]
            target, loop_iter, first = generator.target, generator.iter, node.lineno
            plain = len(node.generators) == 1 and not generator.ifs and not generator.is_async
        else:
            continue
        var = target.id if isinstance(target, ast.Name) else ""
        spelled, value = "", 0
        if (var and plain and isinstance(loop_iter, ast.Call) and isinstance(loop_iter.func, ast.Name)
                and loop_iter.func.id == "range" and len(loop_iter.args) == 1 and not loop_iter.keywords
                and _of_model(loop_iter.args[0])):
            try:  # an expression of attributes, len and numbers alone (_of_model): nothing else runs
                counted = eval(compile(ast.Expression(loop_iter.args[0]), "<count>", "eval"),
                               {"__builtins__": {"len": len}}, {"self": model})
            except Exception:  # an attribute forward sets itself, say: not the model's as built
                counted = None
            if type(counted) is int:
                spelled, value = ast.unparse(loop_iter.args[0]), counted
        found.append(LoopRange(str(path), first, node.end_lineno or node.lineno, var, spelled, value,
                               not isinstance(node, (ast.For, ast.AsyncFor))))
    return tuple(found)


def innermost(ranges: tuple[LoopRange, ...], location: str) -> LoopRange | None:
    """The innermost loop of the file that holds the location's line, None where none does."""
    holding = [r for r in ranges if r.holds(location)]
    return max(holding, key=lambda r: r.first, default=None)

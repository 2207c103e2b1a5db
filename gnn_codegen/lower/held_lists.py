"""Stage 3, lower, loops over a list a module holds: `{metapath: dgl.metapath_reachable_graph(g,
metapath) for metapath in self.metapaths}` in a HANLayer's forward, a comprehension (list, dict,
generator) or a `for` over an attribute of `self` in any class of the user's file, with the
list's value on the first module of that class (the model itself, or a submodule) and how the
model reaches it, `self.layers[0].metapaths`. A graph forward derives on a line of such a loop,
once per item, is written once in the generated inference as a comprehension over the same list
(render/held_graph_lists.py), where the items written out would bake them into the code.

Only a list of settings is kept: strings, numbers and tuples or lists of them, which the digest
of how the model is built covers (render/built.py, checked first by the generated inference),
so the list read at run time is the one traced. Each module of the class holds its own list
(every HANLayer its metapaths): the one named is the first whose list gives the graphs."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import torch.nn as nn

from gnn_codegen.lower.accessors import accessor


@dataclass(frozen=True)
class HeldLoop:
    path: str  # the file as the ops' locations name it
    first: int  # the loop's first line (a comprehension's own)
    last: int
    var: str  # the loop's variable, `metapath`
    attribute: str  # the list's attribute on its module, `metapaths`
    # each module of the loop's class that holds such a list: (how the model reaches the
    # list, `self.layers[0].metapaths`, its items)
    lists: tuple[tuple[str, tuple[object, ...]], ...]
    comprehension: bool = False  # a comprehension's, not a `for` statement's

    def holds(self, location: str) -> bool:
        """The location ("file.py:12 (`...`)") is a line of the loop."""
        path, _, line = location.split(" ", 1)[0].rpartition(":")
        return path == self.path and line.isdigit() and self.first <= int(line) <= self.last


def _setting(value: object) -> bool:
    """A value the built digest covers exactly: str, int (not bool), tuples and lists of them."""
    if isinstance(value, (tuple, list)):
        return all(map(_setting, value))
    return type(value) in (str, int)


def _held_attribute(node: ast.AST) -> str:
    """`metapaths` for `self.metapaths`, else ""."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return ""


def held_loops(source: str, path: Path | str, model: nn.Module) -> tuple[HeldLoop, ...]:
    """Every one-generator comprehension and plain `for NAME in self.ATTR` of a class of the
    file whose modules in `model` hold ATTR as a list of settings of two items or more."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    found = []
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        modules = [(name, m) for name, m in model.named_modules() if type(m).__name__ == cls.name]
        for node in ast.walk(cls):
            if isinstance(node, ast.For):
                target, loop_iter, plain = node.target, node.iter, not node.orelse
            elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
                generator = node.generators[0]
                target, loop_iter = generator.target, generator.iter
                plain = len(node.generators) == 1 and not generator.ifs and not generator.is_async
            else:
                continue
            attribute = _held_attribute(loop_iter)
            if not (plain and attribute and isinstance(target, ast.Name)):
                continue
            lists = []
            for name, module in modules:
                value = module.__dict__.get(attribute)  # a plain attribute: no submodule, no property
                if isinstance(value, (list, tuple)) and len(value) >= 2 and _setting(value):
                    spelled = accessor(model, name) if name else "self"
                    lists.append((f"{spelled}.{attribute}", tuple(value)))
            if lists:
                found.append(HeldLoop(str(path), node.lineno, node.end_lineno or node.lineno, target.id,
                                      attribute, tuple(lists), not isinstance(node, ast.For)))
    return tuple(found)

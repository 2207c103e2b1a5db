"""The goldens read as a reviewer reads them (issue 37): no run of three or more layer functions
that are the same code but for their names, their module's index (`self.convs[3]` in layer 4,
`self.convs[4]` in layer 5) and their float constants: such layers are one function in a loop
(render/layer_loops.py, render/module_index.py), their constants read from the module
(lower/module_constants.py)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.cases import all_cases

CASES = all_cases(heterogeneous=True)
_LAYER = re.compile(r"layer_(\d+)$")


class _Anonymous(ast.NodeTransformer):
    """A function with its names numbered in order of first use, `self.x[n]` relative to its
    layer, and float constants as one."""

    def __init__(self, layer: int) -> None:
        self.layer, self.names = layer, {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self._name(node.id) if node.id != "self" else "self", node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._name(node.arg)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) is int and ast.unparse(node.value).startswith("self."):
            node.slice = ast.Constant(f"layer{index.value - self.layer:+d}")
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant("float") if type(node.value) is float else node


def layer_functions(source: str) -> list[tuple[int, str]]:
    """(layer, normalised code) of each `def layer_<n>` of inference, in order."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "inference":
            for inner in node.body:
                match = _LAYER.match(inner.name) if isinstance(inner, ast.FunctionDef) else None
                if match:
                    layer = int(match.group(1))
                    inner = ast.parse(ast.unparse(inner)).body[0]  # a copy
                    inner.name = "layer"
                    found.append((layer, ast.dump(_Anonymous(layer).visit(inner))))
    return found


def repeated_runs(source: str, run: int = 3) -> list[list[int]]:
    """The runs of `run` or more consecutive layer functions alike but for names, module
    indices relative to their layer, and float constants."""
    functions, runs, current = layer_functions(source), [], []
    for i, (layer, code) in enumerate(functions):
        if current and functions[i - 1][1] == code and functions[i - 1][0] + 1 == layer:
            current.append(layer)
        else:
            if len(current) >= run:
                runs.append(current)
            current = [layer]
    if len(current) >= run:
        runs.append(current)
    return runs


def test_the_check_finds_layers_alike_but_for_their_module_index() -> None:
    def layer(n: int, alpha: float) -> str:
        return (f"    def layer_{n}(block, h{n - 1}):\n        return {alpha} * self.convs[{n - 1}](block, h{n - 1})\n")

    source = "def inference(self, g):\n" + "".join(layer(n, 0.1 * n) for n in range(1, 5))
    assert repeated_runs(source) == [[1, 2, 3, 4]]
    same_module = source.replace("self.convs[0]", "self.convs[2]")  # layer 1 differs now
    assert repeated_runs(same_module) == [[2, 3, 4]]


# Cases known to repeat, each with the issue that folds it (strict: seen when it passes).
# gcn_pairnorm's layers, a pair_norm call and a pass between every two, are one loop
# (render/round_loops.py).
_KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=_KNOWN[c.name]))
                                  if c.name in _KNOWN else c for c in CASES], ids=lambda c: c.name)
def test_no_run_of_three_layer_functions_alike(case) -> None:
    assert repeated_runs(case.golden.read_text()) == []

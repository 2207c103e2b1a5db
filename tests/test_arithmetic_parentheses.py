"""render/code.py's Code.operand_of: arithmetic is written with the parentheses Python needs to
read the same tree, and no others (`-2 * re_norm * h + t1 * 2 * (re_norm - 1) - x`, as DGL's
ChebConv writes it), never fewer: floats do not reassociate, so `a - (b - c)` and `a * (b * c)`
keep theirs. Checked on random trees against Python's own parse of them fully parenthesized."""

from __future__ import annotations

import ast
import random

import pytest

from gnn_codegen.render.code import ARITHMETIC_LEVEL, BINARY, NEGATION_LEVEL, Code


def _write(tree) -> Code:
    """As layer_expressions.py writes operator.add/sub/mul/truediv/neg and a negative number."""
    if isinstance(tree, str):
        negative = tree.startswith("-")
        return Code(tree, atom=not negative, level=NEGATION_LEVEL if negative else 0)
    if tree[0] == "neg":
        return Code(f"-{_write(tree[1]).operand_of(NEGATION_LEVEL, True)}", atom=False, level=NEGATION_LEVEL)
    name, left, right = tree
    level = ARITHMETIC_LEVEL[name]
    a, b = _write(left).operand_of(level, False), _write(right).operand_of(level, True)
    return Code(f"{a} {BINARY[name]} {b}", atom=False, level=level)


def _parenthesized(tree) -> str:
    if isinstance(tree, str):
        return f"({tree})"
    if tree[0] == "neg":
        return f"(-{_parenthesized(tree[1])})"
    return f"({_parenthesized(tree[1])} {BINARY[tree[0]]} {_parenthesized(tree[2])})"


def _tree(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(["h", "x", "re_norm", "2", "-2", "0.5", "self.alpha", "f(h)"])
    if rng.random() < 0.2:
        return ("neg", _tree(rng, depth - 1))
    return (rng.choice(sorted(ARITHMETIC_LEVEL)), _tree(rng, depth - 1), _tree(rng, depth - 1))


@pytest.mark.parametrize("seed", range(20))
def test_random_arithmetic_reads_back_as_its_tree(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        tree = _tree(rng, 4)
        text = _write(tree).text
        assert ast.dump(ast.parse(text, mode="eval")) == ast.dump(ast.parse(_parenthesized(tree), mode="eval")), text


def test_the_parentheses_kept_and_dropped() -> None:
    assert _write(("sub", ("add", ("mul", ("mul", "-2", "re_norm"), "h"),
                           ("mul", ("mul", "t1", "2"), ("sub", "re_norm", "1"))), "x")).text \
        == "-2 * re_norm * h + t1 * 2 * (re_norm - 1) - x"
    assert _write(("sub", "a", ("sub", "b", "c"))).text == "a - (b - c)"
    assert _write(("mul", "a", ("mul", "b", "c"))).text == "a * (b * c)"
    assert _write(("mul", "a", ("neg", "b"))).text == "a * (-b)"
    assert _write(("neg", ("neg", "b"))).text == "-(-b)"
    assert _write(("mul", ("neg", "re_norm"), "h")).text == "-re_norm * h"

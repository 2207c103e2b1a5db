"""Render, expressions: Python source for constants and operators, and the text of an
expression with whether it needs parentheses as an operand (render_layer.py writes with these)."""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass
from typing import Any

import torch

from gnn_codegen.errors import internal
from gnn_codegen.ir import MODULE_CONSTANTS

BINARY = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "matmul": "@", "and_": "&", "or_": "|", "xor": "^", "lt": "<", "le": "<=", "gt": ">",
    "ge": ">=", "eq": "==", "ne": "!=", "iadd": "+", "isub": "-", "imul": "*", "itruediv": "/",
}
UNARY = {"neg": "-", "pos": "+", "invert": "~"}
# how tightly Python binds the arithmetic a reader sees most (`-2 * re_norm * h + X_1 * 2`):
# their operands are written without the parentheses Python does not need to read the same tree
ARITHMETIC_LEVEL = {"add": 1, "sub": 1, "mul": 2, "truediv": 2}
NEGATION_LEVEL = 3  # `-x`, and a negative number


@dataclass(frozen=True)
class Code:
    text: str
    atom: bool = True  # safe as an operand or a receiver without parentheses
    level: int = 0  # of an arithmetic expression (ARITHMETIC_LEVEL, NEGATION_LEVEL); 0: another

    def operand(self) -> str:
        return self.text if self.atom else f"({self.text})"

    def operand_of(self, level: int, right: bool) -> str:
        """As the left or right operand of arithmetic of `level`: without parentheses where Python
        reads the same tree so. Left-associative, `a - b + c` is `(a - b) + c`; a right operand
        of the same level keeps them (`a - (b - c)`: floats do not reassociate), and so does a
        negation on the right, `a * (-b)`, which reads better so."""
        if self.atom or self.level > level and not (right and self.level == NEGATION_LEVEL) \
                or self.level == level and not right:
            return self.text
        return f"({self.text})"


@dataclass(frozen=True)
class Copy:
    """An argument handed over as a copy: the op changes it in place (Op.mutates)."""

    value: Any


def constant(value: Any) -> str:
    if isinstance(value, MODULE_CONSTANTS):  # read from its module (module_constants.py)
        return value.expression if value.atom else f"({value.expression})"
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return f'float("{value}")'
    if value is Ellipsis:
        return "..."
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, torch.device):
        return f'torch.device("{value}")'
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    raise internal(f"cannot write constant {value!r} of type {type(value).__name__}")


def comment(text: str, width: int = 84) -> list[str]:
    """A comment of the generated code, wrapped to fit beside its indentation."""
    return [f"# {line}" for line in textwrap.wrap(text, width)]


_STRING = re.compile(r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")


def replace_in_code(pattern: str, replacement: Any, text: str) -> str:
    """re.sub on a line of generated code outside its string literals: a name replaced or
    searched for is never a dict's key `"weight"` of the same spelling."""
    parts = _STRING.split(text)
    return "".join(part if i % 2 else re.sub(pattern, replacement, part) for i, part in enumerate(parts))


def search_in_code(pattern: str, text: str) -> bool:
    """Whether the pattern occurs in a line of generated code outside its string literals."""
    return any(re.search(pattern, part) for part in _STRING.split(text)[::2])

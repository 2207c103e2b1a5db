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


@dataclass(frozen=True)
class Code:
    text: str
    atom: bool = True  # safe as an operand or a receiver without parentheses

    def operand(self) -> str:
        return self.text if self.atom else f"({self.text})"


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

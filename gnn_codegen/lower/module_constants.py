"""Stage 3, lower, constants read from the module: a float that fx folded from a module's
attributes while tracing (GCN2Conv's `(1 - self.beta) * feat_sum`, APPNPConv's
`self._alpha * feat_0`) becomes a ModuleFloat that prints as the expression it came from,
`1 - self.convs[4].beta`, not as `0.5945348918918356`: the reviewer sees where the number comes
from, and layers that differ only in their module then read alike (layer_loops.py).

Only where it is certain: the attribute is named on the very line that made the op (its stack
trace, so the number is not a coincidence of equal values) and the number is not written there
itself (`x * 0.5`), and the expression, evaluated as Python evaluates the printed code, gives
the folded double to the bit. Otherwise the literal stays."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Any, Iterator

import torch
import torch.fx as fx

from gnn_codegen.ir import ModuleFloat
from gnn_codegen.lower.accessors import accessor

_FRAME = re.compile(r'File "[^"]+", line \d+, in \w+\n\s*(.*)')
_SELF_ATTRIBUTE = re.compile(r"\bself\.(\w+)\b(?!\s*\()")


def _innermost_line(node: fx.Node) -> str:
    """The code of the innermost frame that made the node (library code such as DGL's forward)."""
    frames = _FRAME.findall(node.stack_trace or "")
    return frames[-1] if frames else ""


def _numbers(line: str) -> set[float]:
    """The numbers written on a line of code."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set()
    numbers = set()
    for token in tokens:
        if token.type == tokenize.NUMBER:
            try:
                numbers.add(float(token.string))
            except ValueError:  # 1j
                pass
    return numbers


def _candidates(module_expr: str, attributes: dict[str, float]) -> Iterator[tuple[float, str, bool]]:
    """(value, expression, atom) for the simple expressions of the attributes a line names:
    a, 1 - a, -a, a * b — each value computed as the printed expression computes it."""
    for name, a in attributes.items():
        ref = f"{module_expr}.{name}"
        yield a, ref, True
        yield 1 - a, f"1 - {ref}", False
        yield -a, f"-{ref}", False
        for other, b in attributes.items():
            yield a * b, f"{ref} * {module_expr}.{other}", False


def _spelled(value: float, module_expr: str, attributes: dict[str, float]) -> ModuleFloat | None:
    for candidate, expression, atom in _candidates(module_expr, attributes):
        # to the bit (0.0 and -0.0 differ; a NaN is never spelled)
        if isinstance(candidate, float) and candidate.hex() == value.hex():
            return ModuleFloat(value, expression, atom)
    return None


def spell_module_constants(node: fx.Node, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...],
                           model: torch.nn.Module) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    """node's float arguments that its module's attributes, named on its line, give exactly, as
    ModuleFloats; the others as they are."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack or not any(type(v) is float for v in (*args, *(v for _, v in kwargs))):
        return args, kwargs
    path = list(stack.values())[-1][0]  # the innermost module the op ran in
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return args, kwargs
    line = _innermost_line(node)
    named = set(_SELF_ATTRIBUTE.findall(line))
    written = _numbers(line)  # `x * 0.5` on the line: its 0.5 is that literal, not an attribute
    attributes = {n: v for n, v in vars(module).items() if n in named and type(v) is float}
    if not attributes:
        return args, kwargs
    module_expr = accessor(model, path)

    def spell(value: Any) -> Any:
        if type(value) is not float or value in written:
            return value
        return _spelled(value, module_expr, attributes) or value

    return tuple(spell(a) for a in args), tuple((k, spell(v)) for k, v in kwargs)

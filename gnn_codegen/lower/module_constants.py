"""Stage 3, lower, constants read from the module: a float that fx folded from a module's
attributes while tracing (GCN2Conv's `(1 - self.beta) * feat_sum`, APPNPConv's
`self._alpha * feat_0`) becomes a ModuleFloat that prints as the expression it came from,
`1 - self.convs[4].beta`, not as `0.5945348918918356`: the reviewer sees where the number comes
from, and layers that differ only in their module then read alike (layer_loops.py).

Only where it is certain: the attribute is named on the very line that made the op (its stack
trace, so the number is not a coincidence of equal values) and the number is not written there
itself (`x * 0.5`), and the expression, evaluated as Python evaluates the printed code, gives
the folded double to the bit. Otherwise the literal stays.

Ints the same way (ModuleInt): a width or head count from --init that fx folded
(`.view(-1, self.hidden_channels)`, `torch.zeros(n, self.hid_dim)`) prints as the attribute,
where one attribute alone (or one product of two) gives it, it is no 0 or 1 (a dimension, a
count of one: too common to be told apart) unless it is an operand of arithmetic (PairNorm's
`self.scale * x` with scale=1), and no other int argument of the op has that value
(`view(-1, h.shape[1] // self.heads, self.heads)` with both 4: which is which cannot be told).
Ops of forward itself read the model's own attributes (`self` is the model)."""

from __future__ import annotations

import io
import operator
import re
from pathlib import Path
import tokenize
from typing import Any, Iterator

import torch
import torch.fx as fx

from gnn_codegen.ir import ModuleFloat, ModuleInt
from gnn_codegen.lower.accessors import accessor
from gnn_codegen.trace.stack_frames import frames

_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv})

# frames of gnn_codegen's own tracer (a wrapper that made the node) are not the line that named it
_OWN = str(Path(__file__).resolve().parents[1])
_SELF_ATTRIBUTE = re.compile(r"\bself\.(\w+)\b(?!\s*\()")


def _innermost_line(node: fx.Node) -> str:
    """The code of the innermost frame that made the node (library code such as DGL's forward)."""
    library = [frame.code for frame in frames(node) if not frame.file.startswith(_OWN)]
    return library[-1] if library else ""


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


def _spelled_int(value: int, module_expr: str, attributes: dict[str, int]) -> ModuleInt | None:
    """value as the one attribute (or product of two) that gives it, else None."""
    found = [(expression, atom) for candidate, expression, atom in _int_candidates(module_expr, attributes)
             if candidate == value]
    return ModuleInt(value, *found[0]) if len(found) == 1 else None


def _int_candidates(module_expr: str, attributes: dict[str, int]) -> Iterator[tuple[int, str, bool]]:
    """(value, expression, atom): a, and a * b once per pair."""
    for name, a in attributes.items():
        yield a, f"{module_expr}.{name}", True
        for other, b in attributes.items():
            if name < other:
                yield a * b, f"{module_expr}.{name} * {module_expr}.{other}", False


def _ints(values: Any) -> Iterator[int]:
    """The ints among values, in tuples, lists and slices too (not bools)."""
    for value in values:
        if type(value) is int:
            yield value
        elif isinstance(value, (tuple, list)):
            yield from _ints(value)
        elif isinstance(value, slice):
            yield from _ints((value.start, value.stop, value.step))


def _each(value: Any, spell: Any) -> Any:
    """value with spell applied to every number in it, through tuples, lists and slices."""
    if isinstance(value, tuple):
        return tuple(_each(v, spell) for v in value)
    if isinstance(value, list):
        return [_each(v, spell) for v in value]
    if isinstance(value, slice):
        return slice(_each(value.start, spell), _each(value.stop, spell), _each(value.step, spell))
    return spell(value)


def spell_module_constants(node: fx.Node, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...],
                           model: torch.nn.Module) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    """node's floats and ints that its module's attributes, named on its line, give exactly, as
    ModuleFloats and ModuleInts; the others as they are."""
    values = (*args, *(v for _, v in kwargs))
    ints = list(_ints(values))
    if not any(type(v) is float for v in values) and not ints:
        return args, kwargs
    stack = node.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else ""  # the innermost module the op ran in
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return args, kwargs
    line = _innermost_line(node)
    named = set(_SELF_ATTRIBUTE.findall(line))
    written = _numbers(line)  # `x * 0.5` on the line: its 0.5 is that literal, not an attribute
    floats = {n: v for n, v in vars(module).items() if n in named and type(v) is float}
    whole = {n: v for n, v in vars(module).items() if n in named and type(v) is int}
    if not floats and not whole:
        return args, kwargs
    module_expr = accessor(model, path) if path else "self"
    # an operand of arithmetic is no dimension or count: 0, 1 and -1 there are the attribute's
    # too (PairNorm's `self.scale * x` with scale=1 printed `1 * x`)
    operand = node.op == "call_function" and node.target in _ARITHMETIC

    def spell(value: Any) -> Any:
        if type(value) is float and floats and value not in written:
            return _spelled(value, module_expr, floats) or value
        if type(value) is int and whole and value not in written and (operand or value not in (0, 1, -1)) \
                and ints.count(value) == 1:
            return _spelled_int(value, module_expr, whole) or value
        return value

    return tuple(_each(a, spell) for a in args), tuple((k, _each(v, spell)) for k, v in kwargs)

"""Render, constants the method computes once for its layers: a constant that a library line
names and computes from numbers alone (ChebConv's `re_norm = 2.0 / lambda_max`, with forward's
lambda_max 2.0: analysis/named_constants.py), read by the layers' functions, is written once in
the method, before the first layer that reads it, and the functions read it from there, rather
than each computing it again under the same comment (issue 37: chebnet's four functions each
repeated `re_norm = 2.0 / 2.0`). Ops of one name and one expression (each ChebConv's re_norm)
are one value; a constant of the same name but another expression takes a name of its own.

Python computes the expression in float64, as the functions did: the same float, read by the
same expressions, so nothing changes but where the line is."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Op, Program
from gnn_codegen.render.code import comment
from gnn_codegen.render.shared_constants import inline_reads

# a comment's text in the method's body (indented 8, after `# `) within black's 88 columns
_COMMENT_WIDTH = 88 - 8 - 2
_OPERATORS = {"operator.add": "+", "operator.sub": "-", "operator.mul": "*", "operator.truediv": "/"}


@dataclass(frozen=True)
class MethodConstants:
    """named: constant op -> its name in the method (what the functions read); lines: stage
    position -> the lines that compute the constants it reads first."""

    named: dict[str, str]
    lines: dict[int, list[str]]


def _numbers_alone(op: Op) -> str | None:
    """`2.0 / 2.0`: op's expression, where it is arithmetic on two numbers; else None."""
    if op.kind != "function" or op.target not in _OPERATORS or len(op.args) != 2 or op.kwargs:
        return None
    if not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in op.args):
        return None
    left, right = op.args
    return f"{left!r} {_OPERATORS[op.target]} {right!r}"


def method_constants(program: Program, inline: frozenset[str], stages: Iterable[Stage],
                     take: Callable[[str], str]) -> MethodConstants:
    """The named constants of numbers alone that the stages read, each named once (take()
    allocates the method's names) and computed before the first stage that reads it."""
    named: dict[str, str] = {}
    by_expression: dict[tuple[str, str], str] = {}  # (the line's name, expression) -> name
    lines: dict[int, list[str]] = {}
    for position, stage in enumerate(stages):
        for placed in stage.ops:
            for name in inline_reads(program, inline, program.op(placed.name)):
                op = program.op(name)
                expression = _numbers_alone(op)
                if name in named or not op.var or not op.note or expression is None:
                    continue
                key = (op.var, expression)
                if key not in by_expression:
                    by_expression[key] = take(op.var)
                    lines.setdefault(position, []).extend(
                        [*comment(f"{op.note}, for every layer below", _COMMENT_WIDTH),
                         f"{by_expression[key]} = {expression}"])
                named[name] = by_expression[key]
    return MethodConstants(named, lines)

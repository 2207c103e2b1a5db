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

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gnn_codegen.cut.plan import Stage
from gnn_codegen.analysis.named_constants import library_line_code
from gnn_codegen.ir import Op, Program, location_parts
from gnn_codegen.render.code import comment
from gnn_codegen.render.quoted_lines import line_said
from gnn_codegen.render.shared_constants import inline_reads

# a comment's text in the method's body (indented 8, after `# `) within black's 88 columns
_COMMENT_WIDTH = 88 - 8 - 2
_OPERATORS = {"operator.add": "+", "operator.sub": "-", "operator.mul": "*", "operator.truediv": "/"}
_AST_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


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


def _line_operands(op: Op) -> list[str | float] | None:
    """The library line's two operands (`re_norm = 2.0 / lambda_max`: [2.0, "lambda_max"]):
    a name where the line reads a variable that forward's number fills, the number where it
    writes one; None where the line is not op's arithmetic on two such operands."""
    try:
        line = ast.parse(library_line_code(op))
    except SyntaxError:
        return None
    statement = line.body[0] if len(line.body) == 1 else None
    value = statement.value if isinstance(statement, ast.Assign) else None
    if not isinstance(value, ast.BinOp) or _AST_OPERATORS.get(type(value.op)) != _OPERATORS.get(op.target):
        return None
    operands: list[str | float] = []
    for side, number in zip((value.left, value.right), op.args):
        if isinstance(side, ast.Name):
            operands.append(side.id)
        elif isinstance(side, ast.Constant) and side.value == number:
            operands.append(number)
        else:
            return None
    return operands


def _named_lines(op: Op, name: str, take: Callable[[str], str],
                 given: dict[tuple[str, float], str]) -> list[str] | None:
    """The constant as its library line writes it, each number forward gives it bound to the
    line's name first (issue 37: `lambda_max = 2.0` then `re_norm = 2.0 / lambda_max`, where
    `re_norm = 2.0 / 2.0` did not say which 2.0 was forward's); None where the line does not
    read a name (given: (name, number) -> the method's name, one per value)."""
    operands = _line_operands(op)
    if operands is None or not any(isinstance(o, str) for o in operands):
        return None
    lines, spelled = [], []
    for operand, number in zip(operands, op.args):
        if not isinstance(operand, str):
            spelled.append(repr(number))
            continue
        if (operand, number) not in given:
            given[(operand, number)] = take(operand)
            # the user's line that passes it (`h = layer(self.g, h, [2])`): where to change it
            lines.append(f"{given[(operand, number)]} = {number!r}  # forward's, in {line_said(op.location)}")
            if len(lines[-1]) > _COMMENT_WIDTH + 2:  # beside the line, 88 columns
                lines[-1:] = [*comment(f"forward's {operand}, in {line_said(op.location)}", _COMMENT_WIDTH),
                              f"{given[(operand, number)]} = {number!r}"]
        spelled.append(given[(operand, number)])
    place = location_parts(op.library_line).path
    said = f"`{library_line_code(op)}` as {place.replace(chr(92), '/').rpartition('/')[2] or 'the library'} computes it"
    return [*lines, *comment(f"{said}: once for every layer below, a Python float (the same in every float "
                             "dtype)", _COMMENT_WIDTH),
            f"{name} = {spelled[0]} {_OPERATORS[op.target]} {spelled[1]}"]


def method_constants(program: Program, inline: frozenset[str], stages: Iterable[Stage],
                     take: Callable[[str], str]) -> MethodConstants:
    """The named constants of numbers alone that the stages read, each named once (take()
    allocates the method's names) and computed before the first stage that reads it."""
    named: dict[str, str] = {}
    by_expression: dict[tuple[str, str], str] = {}  # (the line's name, expression) -> name
    given: dict[tuple[str, float], str] = {}  # (a name the line reads, forward's number) -> name
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
                    written = _named_lines(op, by_expression[key], take, given) or [
                        *comment(f"{op.note}, for every layer below", _COMMENT_WIDTH),
                        f"{by_expression[key]} = {expression}"]
                    lines.setdefault(position, []).extend(written)
                named[name] = by_expression[key]
    return MethodConstants(named, lines)

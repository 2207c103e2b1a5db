"""Stage 4, analysis, constants a library line names: which of the tensors of one number that
constant_scalars.py finds are written as the Python float of their own name, computed as the
line computes it, and the ops that turn one into that.

DGL's ChebConv assigns `re_norm = 2.0 / lambda_max` and reads it in its recurrence,
`X_1 = -re_norm * h + X_0 * (re_norm - 1)`. Folded into its readers, lambda_max 2 made
`-1.0 * h` and `X_0 * 0.0`, a product by zero kept only so that infinities give NaN as forward's
do, which needed a comment to defend it and read as a bug beside DGL's line. Kept as the
library names it, `re_norm = 2.0 / 2.0`, with what is computed from it in the line's own form
(`(-re_norm) * h + x * (re_norm - 1)`), the code reads as the module's forward, and its NaN and
infinities are forward's by construction.

A constant is named so where it is the value a library line assigns (its `var`, on a
`library_line` that is not the user's own line) and is computed by arithmetic (`2.0 / lambda_max`, not the `.to(feat)` of a
tensor made from a list: that is a number); the constants computed from it by arithmetic
(`-re_norm`, `re_norm - 1`, `-2 * re_norm`) follow it. Their arguments that are other constants
are written as their numbers (lambda_max's 2.0). Python computes each in float64, which
constant_scalars.py has checked gives every one of them to the bit, as float16, bfloat16 and
float32 do. Each of their readers outside them must be arithmetic with a tensor that keeps its
shape and dtype beside a float (the caller's `fits`, as for every folded constant); where one is
not, the constants it reads, and every constant computed with them, stay tensors, as do those
of a user's own line (constant_scalars.py folds those)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gnn_codegen.ir import Op, Program, Ref, iter_refs, map_refs

_BINARY = frozenset({"operator.add", "operator.sub", "operator.mul", "operator.truediv"})
_ARITHMETIC = _BINARY | {"operator.neg"}
# a line as locations() gives it, `.../chebconv.py:121 (`re_norm = 2.0 / lambda_max`)`: the
# file's name, the line's number and its code
_LINE = re.compile(r"([^/\\]*):(\d+) \(`(.*)`\)$")


def library_line_code(op: Op) -> str:
    """The code of the line of library code that made op ("" where the user's line did: its
    `library_line` is then the user's line that its location names, the file's path spelled
    otherwise)."""
    line, user = _LINE.search(op.library_line), _LINE.search(op.location)
    return line.group(3) if line and not (user and user.groups() == line.groups()) else ""


def _arithmetic(op: Op) -> bool:
    return op.kind == "function" and op.target in _ARITHMETIC and not op.kwargs


def _reader_fits(op: Op, name: str, dims: int, fits: Callable[[Any, int], bool]) -> bool:
    """op, which reads the named constant `name` (of `dims` dimensions), gives forward's value
    with a float in its place."""
    if op.kind != "function" or op.target not in _BINARY or len(op.args) != 2 or op.kwargs:
        return False
    return all(fits(op.args[1 - i], dims) for i, arg in enumerate(op.args)
               if isinstance(arg, Ref) and arg.name == name)


def named_constants(program: Program, constants: dict[str, tuple[float, int]],
                    fits: Callable[[Any, int], bool]) -> frozenset[str]:
    """The constants (constant_scalars.py's: name -> (value, dimensions)) written as Python
    floats under their own names: those a library line names and those computed from them,
    where every reader of theirs takes a float; fits(other operand, dimensions) says whether a
    reader's tensor does."""
    roots: dict[str, frozenset[str]] = {}  # constant -> the named constants it is computed from
    for op in program.ops:
        if op.name not in constants or not _arithmetic(op):
            continue
        from_named = frozenset().union(*(roots[r] for r in op.refs() if r in roots))
        if op.var and library_line_code(op):
            from_named |= {op.name}
        if from_named:
            roots[op.name] = from_named
    unfit: set[str] = set()
    for op in program.ops:
        for name in {r for r in op.refs() if r in roots}:
            if op.name not in roots and not _reader_fits(op, name, constants[name][1], fits):
                unfit |= roots[name]
    unfit |= {root for r in iter_refs(program.output) if r in roots for root in roots[r]}
    # a constant that stays a tensor keeps every constant it reads a tensor: to a fixed point
    kept = set(roots)
    while dropped := {name for name in kept if roots[name] & unfit}:
        kept -= dropped
        for name in dropped:
            unfit |= {root for r in program.op(name).refs() if r in roots for root in roots[r]}
    return frozenset(kept)


def as_python_float(op: Op, program: Program, constants: dict[str, tuple[float, int]],
                    named: frozenset[str]) -> Op:
    """The named constant's op with the other constants it reads as their numbers; a library
    line's own name says, in a note, where its numbers come from."""
    leaves = [r for r in op.refs() if r not in named]
    written = replace(op, args=map_refs(op.args, lambda r: r if r.name in named else constants[r.name][0]))
    code = library_line_code(op)
    if not (op.var and code) or op.note:
        return written
    given = ", ".join(f"{program.op(r).var} {constants[r][0]!r}" for r in leaves if program.op(r).var)
    return replace(written, note=f"`{code}` with forward's {given or 'constants'}, in every float dtype")

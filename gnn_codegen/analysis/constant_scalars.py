"""Stage 4, analysis, tensors of one number made from constants: ChebConv with `lambda_max`
given (`[2]`) builds `re_norm = 2.0 / torch.tensor([2.0]).to(feat)` and reads
`-re_norm * h + X_0 * (re_norm - 1)`, so the generated code built a tensor of 1 and one of 0 on
every batch, which reads as a bug. Such a tensor does not depend on the batch: it is a number,
computed here, and its readers take it as a Python float, with what that makes plain
simplified where it is exact for every input: `x * 1.0` is x, `-1.0 * x` is -x, `x - 0.0` is x
(NaN, infinities and -0.0 included). `x * 0.0` stays: it is NaN where x is not finite, as in
forward, and says so in a comment. A constant a library line names (`re_norm`), and what is
computed from it, is not folded so but kept as that name's Python float, read in the line's
own form (named_constants.py): `x * (re_norm - 1)` needs no defence.

When the float is the tensor: the ops are a whitelist of torch's (`torch.tensor`, arithmetic,
`.to(t)`, `.unsqueeze`), evaluated here in float16, bfloat16, float32 and float64 (`.to(t)`
reads of t only its dtype and device, which the caller picks); the float is taken only where
all four give it to the bit, so its dtype cannot change it. Its reader is an arithmetic op
whose other operand is a float32 tensor (on the probe, as unit_weights.py) of at least as many
dimensions as the constant, so broadcasting keeps its shape and the float's product, sum or
quotient with it is the tensor's, exactly. The generated module is verified against forward
before it is written, as always."""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any

import torch

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.analysis.named_constants import as_python_float, named_constants
from gnn_codegen.ir import Op, Program, Ref, map_refs
from gnn_codegen.lower.simplify import computed_once

_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_OPERATORS = {"operator.add": operator.add, "operator.sub": operator.sub, "operator.mul": operator.mul,
              "operator.truediv": operator.truediv, "operator.neg": operator.neg}
_FACTORIES = {"torch.tensor": torch.tensor, "torch.as_tensor": torch.as_tensor}
_METHODS = frozenset({"to", "unsqueeze", "float", "reshape", "view"})
_ARITHMETIC = frozenset({"operator.add", "operator.sub", "operator.mul", "operator.truediv"})
# why a product by zero stays in the generated code
ZERO_NOTE = ("a factor forward computes from constants alone is 0 here; kept as `* 0.0` so that "
             "infinities and NaN give NaN, as forward's would")


def _evaluate(op: Op, values: dict[str, Any], dtype: torch.dtype) -> Any:
    """op's value from its constant arguments, `.to(t)` read as `.to(dtype)`; KeyError where op
    is not a constant this module evaluates."""
    def arg(value: Any) -> Any:
        if isinstance(value, Ref):
            return values[value.name]
        if isinstance(value, (tuple, list)) and any(isinstance(v, Ref) for v in value):
            raise KeyError(op.name)
        return value

    kwargs = {k: arg(v) for k, v in op.kwargs}
    if op.kind == "function" and op.target in _OPERATORS:
        return _OPERATORS[op.target](*(arg(a) for a in op.args))
    if op.kind == "function" and op.target in _FACTORIES and op.args and not isinstance(op.args[0], Ref):
        return _FACTORIES[op.target](*op.args, **kwargs)
    if op.kind == "method" and op.target in _METHODS and op.args and isinstance(op.args[0], Ref):
        receiver = values[op.args[0].name]
        if op.target == "to" and len(op.args) == 2 and isinstance(op.args[1], Ref) and not kwargs:
            return receiver.to(dtype)  # of its argument, the dtype (and the device: a number here)
        return getattr(receiver, op.target)(*(arg(a) for a in op.args[1:]), **kwargs)
    raise KeyError(op.name)


def _constants(program: Program) -> dict[str, tuple[float, int]]:
    """(value, dimensions) of every op that is a tensor of one number, the same in every dtype."""
    per_dtype: list[dict[str, Any]] = []
    for dtype in _DTYPES:
        values: dict[str, Any] = {}
        for op in program.ops:
            try:
                with torch.no_grad():
                    values[op.name] = _evaluate(op, values, dtype)
            except (KeyError, TypeError, RuntimeError, ValueError):
                continue
        per_dtype.append(values)
    found = {}
    for name, value in per_dtype[0].items():
        if not isinstance(value, torch.Tensor) or value.numel() != 1 or not value.is_floating_point():
            continue
        numbers = [v.get(name) for v in per_dtype]
        if all(isinstance(n, torch.Tensor) and n.shape == value.shape for n in numbers):
            floats = {float(n.double().item()).hex() for n in numbers}
            if len(floats) == 1:
                found[name] = (float(value.double().item()), value.dim())
    return found


def _operand_fits(other: Any, dims: int, attrs: Attributes) -> bool:
    """The tensor beside the constant keeps its shape and dtype with a float in its place."""
    return isinstance(other, Ref) and attrs[other.name].rows in ("node", "edge") \
        and attrs[other.name].dtype == "torch.float32" and 1 + len(attrs[other.name].shape) >= dims


def with_constant_scalars(program: Program, attrs: Attributes) -> Program:
    """The program with its tensors of one constant number read as floats: a library line's
    named one (and what is computed from it) as that name's Python float, computed as the
    line computes it (named_constants.py); the others folded into their readers, with
    `x * 1.0`, `-1.0 * x`, `x - 0.0` simplified."""
    constants = _constants(program)
    if not constants:
        return program
    named = named_constants(program, constants, lambda other, dims: _operand_fits(other, dims, attrs))
    ops: list[Op] = []
    aliases: dict[str, Any] = {}
    for op in program.ops:
        op = replace(op, args=map_refs(op.args, lambda r: aliases.get(r.name, r)),
                     kwargs=map_refs(op.kwargs, lambda r: aliases.get(r.name, r)))
        if op.name in named:
            ops.append(as_python_float(op, program, constants, named))
            continue
        if op.name in constants or op.kind != "function" or op.target not in _ARITHMETIC or len(op.args) != 2:
            ops.append(op)
            continue
        args = list(op.args)
        for i, (mine, other) in enumerate((args, args[::-1])):
            if isinstance(mine, Ref) and mine.name in constants and mine.name not in named \
                    and _operand_fits(other, constants[mine.name][1], attrs):
                args[i] = constants[mine.name][0]
        op = replace(op, args=tuple(args))
        simpler = _simplified(op)
        if isinstance(simpler, Ref):
            aliases[op.name] = simpler
            continue
        ops.append(simpler)
    output = map_refs(program.output, lambda r: aliases.get(r.name, r))
    return computed_once(program.with_ops(tuple(ops), output=output))


def _simplified(op: Op) -> Op | Ref:
    """x * 1.0 -> x; -1.0 * x -> -x; x - 0.0 -> x; x * 0.0 noted; else op (all exact)."""
    a, b = op.args
    number, tensor = (a, b) if isinstance(b, Ref) else (b, a)
    if not isinstance(tensor, Ref) or type(number) is not float:
        return op
    if number == 1.0 and (op.target == "operator.mul" or op.target == "operator.truediv" and a is tensor):
        return tensor
    if op.target == "operator.mul" and number == -1.0:
        return replace(op, target="operator.neg", args=(tensor,))
    if op.target == "operator.sub" and number.hex() == "0x0.0p+0" and a is tensor:
        return tensor  # x - 0.0 is x, -0.0 too (x + 0.0 is not: -0.0 + 0.0 is 0.0)
    if op.target == "operator.mul" and number == 0.0 and not op.note:
        return replace(op, args=(tensor, number), note=ZERO_NOTE)
    return op

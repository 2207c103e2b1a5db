"""Stage 4, analysis, sums and products written in the other order: forward's `h = relu1 + x0`
and `readout = x0 + relu1` are one value, which the generated code should compute and store
once, under one name, not twice. Tensor addition and multiplication commute exactly (IEEE 754
`a + b` and `b + a` are the same double, NaN aside, and broadcasting and type promotion are
symmetric), so where both operands are tensors, an op that repeats an earlier one with its
operands swapped is written in the earlier's order, and simplify's common subexpressions
(computed_once) make it the earlier's value."""

from __future__ import annotations

from dataclasses import replace

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.ir import Op, Program, Ref, quoted_code
from gnn_codegen.lower.simplify import computed_once

# binary ops that commute on tensors (never on lists or strings, where `+` concatenates: both
# operands must be tensors); `torch.add(a, b, alpha=2)` does not, hence no keyword arguments
_COMMUTATIVE = frozenset({"operator.add", "operator.mul", "torch.add", "torch.mul"})


def _operands(op: Op, tensors: set[str]) -> tuple[Ref, Ref] | None:
    """The two tensor operands of a commutative op, or None where op is not one."""
    if op.kind != "function" or op.target not in _COMMUTATIVE or op.kwargs or op.mutates or len(op.args) != 2:
        return None
    a, b = op.args
    if not (isinstance(a, Ref) and isinstance(b, Ref) and a.name in tensors and b.name in tensors):
        return None
    return a, b


def one_order(program: Program, attrs: Attributes) -> Program:
    """The program with every commutative op that swaps an earlier one's tensor operands
    computed once (the earlier's value)."""
    info = attrs.as_dict()
    tensors = {name for name, t in info.items() if t.dtype.startswith("torch.")}
    family = {"operator.add": "add", "torch.add": "add", "operator.mul": "mul", "torch.mul": "mul"}
    seen: dict[tuple[str, str, str], Op] = {}
    swapped: dict[str, Op] = {}
    earlier_of: dict[str, Op] = {}  # a swapped op -> the op whose value it is
    for op in program.ops:
        operands = _operands(op, tensors)
        if operands is None:
            continue
        a, b = operands
        earlier = seen.get((family[op.target], b.name, a.name))
        if earlier is not None and a != b:
            # the earlier's target and order: the same key in computed_once
            swapped[op.name] = replace(op, target=earlier.target, args=earlier.args)
            earlier_of[op.name] = earlier
        else:
            seen.setdefault((family[op.target], a.name, b.name), op)
    if not swapped:
        return program
    noted = _noted_readers(program, swapped, earlier_of)
    return computed_once(program.with_ops(tuple(noted.get(op.name, swapped.get(op.name, op)) for op in program.ops)))


def _noted_readers(program: Program, swapped: dict[str, Op], earlier_of: dict[str, Op]) -> dict[str, Op]:
    """The ops that read a swapped sum, each with a note saying that the value they read is an
    earlier line's in the other order (residual's `readout = x0 + relu1 + relu2` written
    `h1_dst + relu2`: a reviewer should not have to prove it): only where both lines and the
    operands' variables are known."""
    by_name = {op.name: op for op in program.ops}
    noted: dict[str, Op] = {}
    for op in program.ops:
        for ref in op.refs():
            if ref not in swapped or op.note:
                continue
            earlier, original = earlier_of[ref], by_name[ref]
            symbol = "+" if "add" in original.target else "*"
            operands = [by_name[r.name].var for r in original.args if r.name in by_name]
            here, there = quoted_code(op.location), quoted_code(earlier.location)
            if len(operands) != 2 or not all(operands) or not here or not there or not earlier.var:
                continue
            noted[op.name] = replace(swapped.get(op.name, op), note=(
                f"`{here}`: its {f' {symbol} '.join(operands)} is {earlier.var} of "
                f"`{there}`, the same {'sum' if symbol == '+' else 'product'} in the other order"))
    return noted

"""Part of stage 3, simplify: forward's results whose node rows are on another axis than the
first, taken off the program and kept on the result's reference (RowAxis), which `inference`
applies to the whole result.

Self-supervised models keep per-node state as a batch of one graph: GGD returns
`feat.unsqueeze(0).detach()` (rows on axis 1), DGI's discriminator takes `h.unsqueeze(0)`, and
a result may be returned transposed (`h.t()`, features by node). On a batch of nodes the row
axis moves the same way, but the runtime keeps every stored and returned tensor with a row per
node first. So the ops that move the rows of a result (`unsqueeze(0)`, `t()`, `transpose(0, 1)`)
and those after them that treat every element alike (`detach`, `clone`, `float`) leave the
program, and the generated method applies them to the result for all nodes (or for the
requested nodes: rows `nodes` on the moved axis).

The row axis of a value is followed from forward's result back to the value whose rows are
first; a chain that moves rows into the middle of a computation that later reads them is not
taken, and stays refused by the row-wise check (attributes.py), naming its line."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gnn_codegen.ir import Op, Program, Ref

# element-wise ops that keep every axis where it is
_KEEPS_AXES = frozenset({"detach", "clone", "contiguous", "float", "double", "half"})


@dataclass(frozen=True)
class RowAxis(Ref):
    """A result that is the node tensor `name` (rows first) with `suffix` applied, which puts its
    rows on axis `axis`."""

    suffix: str = ""  # `.unsqueeze(0).detach()`
    axis: int = 0
    ops: tuple[str, ...] = ()  # the ops it stands for, left out of the program


def take_row_axes(program: Program) -> Program:
    """The program with each result whose rows a chain of ops moves off the first axis replaced
    by a RowAxis of the value before the chain."""
    users = program.consumers()
    returned = set(program.output_refs())
    taken: set[str] = set()

    def moved(ref: Any) -> Any:
        if type(ref) is not Ref or users[ref.name] or ref.name not in returned:
            return ref
        chain: list[Op] = []
        op = program.op(ref.name)
        while _step(op) is not None and (not chain or users[op.name] == [chain[-1].name]):
            chain.append(op)
            op = program.op(op.args[0].name)
        chain.reverse()
        axis, suffix = 0, ""
        for step in chain:
            axis = _moved_axis(step, axis)
            suffix += _step(step) or ""
        if not chain or axis == 0:
            return ref
        taken.update(step.name for step in chain)
        return RowAxis(chain[0].args[0].name, suffix, axis, tuple(step.name for step in chain))

    output = _map_results(program.output, moved)
    if not taken:
        return program
    return replace(program.with_ops(tuple(op for op in program.ops if op.name not in taken)), output=output)


def _step(op: Op) -> str | None:
    """The op spelled as a method on its first argument, where it belongs to a chain."""
    if op.kind not in ("method", "function") or not op.args or not isinstance(op.args[0], Ref) or op.kwargs:
        return None
    name = op.target.rsplit(".", 1)[-1]
    rest = op.args[1:]
    if name in _KEEPS_AXES and not rest:
        return f".{name}()"
    if name == "unsqueeze" and rest == (0,):
        return ".unsqueeze(0)"
    if name == "t" and not rest or name in ("transpose", "swapaxes", "swapdims") and set(rest) == {0, 1}:
        return ".transpose(0, 1)"
    return None


def _moved_axis(op: Op, axis: int) -> int:
    name = op.target.rsplit(".", 1)[-1]
    if name == "unsqueeze":
        return axis + 1
    if name in ("t", "transpose", "swapaxes", "swapdims"):
        return {0: 1, 1: 0}.get(axis, axis)
    return axis


def _map_results(value: Any, fn: Any) -> Any:
    if isinstance(value, Ref):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map_results(v, fn) for v in value)
    if isinstance(value, list):
        return [_map_results(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_results(v, fn) for k, v in value.items()}
    return value


def axis_ops(output: Any) -> frozenset[str]:
    """The traced ops that results on another axis stand for (not run on the probe graph)."""
    from gnn_codegen.lower.row_ranges import result_refs

    return frozenset(name for ref in result_refs(output) if isinstance(ref, RowAxis) for name in ref.ops)


def rows_on_axis(ref: RowAxis, value: Any, nodes: Any) -> Any:
    """forward's result `value` at the requested nodes: rows `nodes` on its axis (the checks)."""
    return value.index_select(ref.axis, nodes.to(value.device).long())

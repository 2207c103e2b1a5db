"""Render, the first value of a state a layer loop carries, made before the loop (issue 37):
GeniePath's LSTM memory starts as forward's `torch.zeros(1, N, hid)` before its loop, and each
layer steps it and hands it on. The cut makes that start where the first layer reads it, per
batch (free there: nothing stored), so the first layer's function differs from the others'
only in it, `_lstm_step(..., torch.zeros(...), torch.zeros(...))` where they read `h1, c1`, and
stays out of their loop (layer_loops.py folds functions equal up to names).

Here each start the first layer reads where the next layer reads a state the first one stores
is made one stage sooner, by the stage before (the prologue), and stored: the first layer then
reads it as the others read the layer before's, and is the loop's first round. A start is a
tensor of constants sized by a node count: a factory of a row per node (`torch.zeros(n, d)`,
`x.new_zeros(n, d)`, not `torch.empty`, whose rows are whatever memory held), or a move of one
(`.to(x.device)`); its shape and dtype are the state's it starts.

Memory: a tensor of a row per node per start, made before the first layer and freed after it.
While the first layer runs it reads these and writes the next states, as every later layer of
the loop reads and writes them, so the peak stored is the loop's anyway (GeniePath: two
N x hid tensors, h and c). The per-batch zeros would store nothing, but only a first layer
apart, or a test in the loop's function for the round that makes them, can keep them per
batch: render() keeps these starts only where the first layer then folds into a loop."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.analysis.sized_tensors import is_factory, row_count_of
from gnn_codegen.cut.plan import PlacedOp, Plan, Stage, Stored
from gnn_codegen.ir import Op, Program, Ref, iter_refs, reads_device

# factories whose tensor holds no value until written: not a state forward starts from
_UNWRITTEN = ("empty", "new_empty")


@dataclass(frozen=True)
class StateStarts:
    """The program, attributes and plan with the starts made by the stage before each first
    layer; first_layers: those layers' positions in the plan's stages."""

    program: Program
    attrs: Attributes
    plan: Plan
    first_layers: tuple[int, ...]


def _is_start(op: Op, program: Program, info: dict[str, Any]) -> bool:
    """A tensor of constants sized by a node tensor's rows, or a move of one to a device."""
    if op.kind == "method" and op.target == "to" and op.args and isinstance(op.args[0], Ref):
        where = (*op.args[1:], *(v for _, v in op.kwargs))
        moved_only = all(not isinstance(v, Ref) or reads_device(program, program.op(v.name)) for v in where)
        return moved_only and _is_start(program.op(op.args[0].name), program, info)
    if not is_factory(op) or op.target.rsplit(".", 1)[-1] in _UNWRITTEN:
        return False
    counted = row_count_of(op, program)
    return counted is not None and counted[0] == "tensor" and info[counted[1]].rows == "node"


def _reads(program: Program, inline: frozenset[str], name: str) -> set[str]:
    """The values an inline value reads (through inline ones), but for device reads, with the
    tensors it counts: what the stage that makes it must hold."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        op = program.op(todo.pop())
        for ref in iter_refs((op.args, tuple(v for _, v in op.kwargs))):
            read = program.op(ref)
            if ref in seen or read.kind == "graph" or reads_device(program, read):
                continue
            seen.add(ref)
            if ref in inline:
                todo.append(ref)
    return {ref for ref in seen if ref not in inline}


def _shape(op: Op) -> tuple[str, str]:
    """An op's kind and target with numbers left out (`layers.0.fc` as `layers.#.fc`)."""
    return op.kind, re.sub(r"\d+", "#", op.target)


def _leaves(ours: Any, theirs: Any, at: tuple[int, ...]):
    """(position, our Ref, their Ref) at each place where both arguments hold a Ref, in tuples
    and lists alike (an LSTMCell's state `(h, c)`); position: the indices down to it."""
    if isinstance(ours, Ref) and isinstance(theirs, Ref):
        yield at, ours, theirs
    elif isinstance(ours, (tuple, list)) and isinstance(theirs, (tuple, list)) and len(ours) == len(theirs):
        for i, (mine, other) in enumerate(zip(ours, theirs)):
            yield from _leaves(mine, other, (*at, i))


def _replaced(value: Any, at: tuple[int, ...], new: Ref) -> Any:
    """value with the Ref at position `at` (_leaves) replaced by `new`."""
    if not at:
        return new
    items = [_replaced(v, at[1:], new) if i == at[0] else v for i, v in enumerate(value)]
    return type(value)(items)


def _is_layer(stage: Stage) -> bool:
    return stage.index != 0 and not stage.node_pass and bool(stage.graph or stage.loads)


def _starts(program: Program, info: dict[str, Any], inline: frozenset[str], stages: list[Stage],
            position: int) -> list[tuple[str, tuple[int, ...], str, str]] | None:
    """The starts layer `position` reads where the next layer reads a state this one stores:
    (the reading op, the argument's position, the start, the state), where the stage before
    holds what each reads; None where the two layers' ops are not alike, one by one."""
    first, second, before = stages[position], stages[position + 1], stages[position - 1]
    if not (_is_layer(first) and _is_layer(second)) or first.graph != second.graph:
        return None
    ours, theirs = [program.op(p.name) for p in first.ops], [program.op(p.name) for p in second.ops]
    if len(ours) != len(theirs) or any(_shape(a) != _shape(b) for a, b in zip(ours, theirs)):
        return None
    held = {p.name for p in before.ops} | {value for value, _ in before.loads}
    starts = []
    for a, b in zip(ours, theirs):
        for i, mine, next_one in _leaves(a.args, b.args, ()):
            if mine.name not in inline or next_one.name not in first.stores:
                continue
            if not _is_start(program.op(mine.name), program, info) or info[next_one.name].rows != "node":
                continue
            # the stage before holds what it reads, the tensor it counts too (over ranges of
            # nodes the count is that tensor's rows: layer_expressions._counted_only)
            if not _reads(program, inline, mine.name) <= held:
                continue
            starts.append((a.name, i, mine.name, next_one.name))
    return starts


def _counting_own(program: Program, inline: frozenset[str], made: Op, before: Stage, info: dict[str, Any],
                  taken: set[str]) -> list[tuple[Op, str]]:
    """The start as the stage before makes it, with the inline ops it reads copied where they
    change (each with the op it copies): over ranges of nodes, sized by the rows of the first
    tensor of a row per node that the stage computes rather than of one it loads (`x =
    self.linear1(x)`, then `torch.zeros(x.shape[0], d)`, not a count of the input x that x
    replaced); the start last."""
    computed = [p.name for p in before.ops if p.name in info and info[p.name].rows == "node"]
    loaded = {value for value, _ in before.loads}
    if not (before.index == 0 or before.node_pass) or not computed:
        return [(made, "")]
    copies: list[tuple[Op, str]] = []

    def swapped(value: Any, counts: bool = False) -> Any:
        if counts and isinstance(value, Ref) and value.name in loaded and info[value.name].rows == "node":
            return Ref(computed[0])
        if isinstance(value, Ref) and value.name in inline:
            return Ref(copy(program.op(value.name)).name)
        if isinstance(value, (tuple, list)):
            return type(value)(swapped(v) for v in value)
        return value

    def copy(op: Op) -> Op:
        # only the tensor whose rows it counts (`x.shape`, `x.size(0)`, `len(x)`): the dtype
        # and device of `x.new_zeros(...)` stay the loaded tensor's
        counts = (op.kind == "function" and op.target in ("getattr", "len") and op.args[1:] in ((), ("shape",))
                  or op.kind == "method" and op.target == "size")
        args = (swapped(op.args[0], counts), *swapped(op.args[1:])) if op.args else ()
        kwargs = tuple((k, swapped(v)) for k, v in op.kwargs)
        if (args, kwargs) == (op.args, op.kwargs):
            return op
        name = next(f"{op.name}_of_{n}" for n in range(len(taken) + 1) if f"{op.name}_of_{n}" not in taken)
        taken.add(name)
        copies.append((replace(op, name=name, args=args, kwargs=kwargs), op.name))
        return copies[-1][0]

    args, kwargs = swapped(made.args), tuple((k, swapped(v)) for k, v in made.kwargs)
    return [*copies, (replace(made, args=args, kwargs=kwargs), "")]


def _loads_as(loads: tuple[tuple[str, str], ...], next_loads: tuple[tuple[str, str], ...],
              made_for: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The first layer's loads with the starts among them where the next layer loads the states
    they start (its function's parameters follow its loads: layer_loops.py compares them in
    order): the next layer's loads in turn, a start for each state, the first layer's own for
    the others; the starts after them where the others are not as many."""
    own = iter(loads)
    ordered = [(made_for[value], "dst") if value in made_for else next(own, None) for value, _ in next_loads]
    if None in ordered or next(own, None) is not None:
        return (*loads, *((start, "dst") for start in made_for.values()))
    return tuple(ordered)  # type: ignore[arg-type]


def state_starts(program: Program, attrs: Attributes, plan: Plan, inline: frozenset[str]) -> StateStarts | None:
    """The plan with each first layer's starts made and stored by the stage before it, one
    tensor per argument that reads one (h and c are two states, though forward's zeros are
    alike); None where no layer reads one."""
    info = attrs.as_dict()
    stages = list(plan.stages)
    ops = list(program.ops)
    added_info, stored, first_layers = [], list(plan.stored), []
    taken = {op.name for op in ops}
    for position in range(1, len(stages) - 1):
        starts = _starts(program, info, inline, stages, position)
        if not starts:
            continue
        before, first = stages[position - 1], stages[position]
        rewritten: dict[str, Op] = {}
        made_for: dict[str, str] = {}  # a state -> the start made for it
        for reader, at, start, state in starts:
            name = next(f"{start}_start_{n}" for n in range(len(taken) + 1) if f"{start}_start_{n}" not in taken)
            taken.add(name)
            # named in the stage that makes it as the state is where forward reads it (h, c)
            made = replace(program.op(start), name=name, var=program.op(state).var or program.op(start).var)
            copies = _counting_own(program, inline, made, before, info, taken)
            read = {start, *(ref for copy, _ in copies for ref in copy.refs())}
            after = max(i for i, op in enumerate(ops) if op.name in read)
            ops[after + 1:after + 1] = [copy for copy, _ in copies]
            added_info += [(copy.name, info[original]) for copy, original in copies[:-1]]
            op = rewritten.get(reader, program.op(reader))
            rewritten[reader] = replace(op, args=_replaced(op.args, at, Ref(name)))
            added_info.append((name, replace(info[state], rows="node")))
            stored.append(Stored(name, info[state].shape, info[state].dtype, before.index))
            before = replace(before, ops=(*before.ops, PlacedOp(name, "dst")), stores=(*before.stores, name))
            first = replace(first, frees=(*first.frees, name))
            made_for[state] = name
        first = replace(first, loads=_loads_as(first.loads, stages[position + 1].loads, made_for))
        ops = [rewritten.get(op.name, op) for op in ops]
        stages[position - 1], stages[position] = before, first
        first_layers.append(position)
    if not first_layers:
        return None
    return StateStarts(replace(program, ops=tuple(ops)), replace(attrs, info=(*attrs.info, *added_info)),
                       replace(plan, stages=tuple(stages), stored=tuple(stored)), tuple(first_layers))


def with_states_started(program: Program, attrs: Attributes, plan: Plan, first: Any, method: str,
                        renderer: Callable[[Program, Attributes, Plan], Any]) -> tuple[Any, str]:
    """The renderer and method to keep: `first`'s, or where a first layer makes a state's start
    per batch (GeniePath's zero LSTM memory), those of the plan with the starts made before it
    (renderer(...) makes one), kept where that layer then opens a loop."""
    starts = state_starts(program, attrs, plan, first.inline)
    if starts is None:
        return first, method
    started = renderer(starts.program, starts.attrs, starts.plan)
    started_method = started.method()
    return (started, started_method) if set(starts.first_layers) <= started.loop_starts else (first, method)

"""Render, the names of the values a loop of layers carries from round to round (issue 37): as
forward names the value its loop carries, `h` where forward writes `h = layer(g, h)`, not
the name of what a layer's last line happens to compute (GraphConv's normed source rows,
`feat`); and a plain name, `linear`, where the allocator counted one (`linear_2`) only
because some function's local holds the base. forward's output made by the loop's last
round is then returned under the loop's name, as forward returns its loop's `h`: no alias
after the loop (a reviewer: "name the running value well, not add an alias and a comment").

A name is taken only where it is free in the method: no other value the method binds
(a stored tensor, forward's input or output, a value computed once) and no other name of the
method's (`batches`, `needed`) holds it; a local of a layer's function that holds it is that
function's own (the function's allocator counts it, local_names.py gives it back)."""

from __future__ import annotations

import ast
import re

from gnn_codegen.cut.plan import Plan, Stage
from gnn_codegen.ir import Program

# a location's code: `path:LINE (`h = layer(g, h)`)`
_CODE = re.compile(r"\(`(.*)`\)$")


def forward_carried(program: Program, stages: list[Stage]) -> str | None:
    """The one name that the user's line passing each stage's messages both assigns and reads
    (`h` of `h = layer(g, h)`, `x_skip` of `x_skip += conv(...)`), the same line's name for
    every stage; None where a stage's line names none, or several (`x, (h, c) = layer(...)`)."""
    found: set[str] = set()
    for stage in stages:
        for placed in stage.ops:
            op = program.op(placed.name)
            if op.kind != "mp":
                continue
            name = _assigned_and_read(op.location)
            if name is None:
                return None
            found.add(name)
    return found.pop() if len(found) == 1 else None


def _assigned_and_read(location: str) -> str | None:
    match = _CODE.search(location)
    if match is None:
        return None
    try:
        statement = ast.parse(match.group(1)).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id  # `x_skip += ...` reads x_skip
    if not isinstance(statement, ast.Assign):
        return None
    assigned = {n.id for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    read = {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
    both = assigned & read
    return both.pop() if len(both) == 1 else None


def method_values(program: Program, plan: Plan) -> frozenset[str]:
    """The values the method itself binds a name to: what a stage stores, forward's inputs and
    outputs, values computed once or reduced over all nodes before a stage, and every value
    no stage's function computes (graphs forward derives, ...); the others are locals of a
    layer's function alone."""
    bound = {*program.inputs, *plan.outputs}
    in_functions: set[str] = set()
    for stage in plan.stages:
        bound |= {*stage.stores, *stage.once, *(n for pair in stage.reductions for n in pair)}
        in_functions |= {placed.name for placed in stage.ops}
    return frozenset(bound | {op.name for op in program.ops if op.name not in in_functions})


def free_for(name: str, values: tuple[str, ...], buffer: dict[str, str], bound: frozenset[str],
             taken: set[str], inputs: tuple[str, ...]) -> bool:
    """Whether the loop whose variable holds `values` in turn may name it `name`: no value the
    method binds other than the loop's own holds it (forward's input read before the loop
    counts as another's: layer_loops.fold decides when a loop may take it), and it is no
    name of the method's that no value holds (`batches`)."""
    holders = [v for v, named in buffer.items() if named == name]
    if not holders:
        return name not in taken and name.isidentifier()
    own = set(values) - set(inputs)
    return all(v in own or v not in bound for v in holders)


def plain(name: str, running: str) -> bool:
    """Whether `name` is the allocator's count of `running` (`linear_2` of `linear`)."""
    return re.fullmatch(rf"{re.escape(running)}_\d+", name) is not None


def carries_out(values: tuple[str, ...], end: int, stages: list[Stage], outputs: tuple[str, ...]) -> bool:
    """Whether a loop's variable holding `values` in turn leaves the loop (the loop ending at
    position `end` of the method's stages) with its last value: forward's output, or rows a
    stage after the loop reads."""
    last = values[-1]
    return last in outputs or any(last == value for stage in stages[end + 1:] for value, _ in stage.loads)


def loop_name(name: str, running: str, values: tuple[str, ...], chained: tuple[tuple[str, ...], ...],
              forward: str | None, out: list[bool], free) -> str:
    """The name of a loop's variable holding `values` in turn, which fold named `name` from its
    running state `running`: forward's name for its loop's carried value (`forward`), for
    the one variable of the loop that leaves it (`out`: per variable of `chained`); else
    `running` where `name` is its count (`linear_2`); else `name`. free(name): whether the
    variable may take it (free_for)."""
    leaves = [v for v, leaving in zip(chained, out) if leaving]
    if forward is not None and leaves == [values] and (name == forward or free(forward)):
        return forward
    if plain(name, running) and free(running):
        return running
    return name

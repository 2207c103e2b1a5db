"""Stage 6, render (heterogeneous): the node types a loop over the user's layers computes
(hetero_loops.py), or a layer forward calls on its own line, read as forward's HeteroGraphConv
gives them, `hs.items()`: each type a relation from a type of the loop's (the layer's) dict goes
into, in the graph's order, rather than a tuple of type names. Written so only where, in every
layer of the loop, that rule gives exactly the
types the plan computes (the layer's every result is read: not a last layer into fewer types),
so the loop runs the same types as before; the graph's relations and the dict's types are
checked at inference's entry (check_graph, check_rows, check_built) as before."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

import torch.fx as fx

from gnn_codegen.render.hetero_loops import Folded, needed_counted_by_loop

_TYPES_LOOP = re.compile(r"^(    )for ntype in (\(.*\)):$")  # the loop body's, as _fold writes it
_UNROLLED_TYPES_LOOP = re.compile(r"^()for ntype in (\(.*\)):$")  # an unrolled layer's
_SOURCES_READ = re.compile(r"^    \w+ = batches\.map_sources\(self[\w.\[\]]*, (\w+), ")  # the dict it reads
_CARRIED = re.compile(r"^    (\w+) = (\w+)$")  # `h = h_next`, the loop's last line


def spelled_as_forward(lines: list[str], folded: Folded, calls: dict[int, list[fx.Node]],
                       relations: Sequence[tuple[str, str, str]], graph: str,
                       new_name: Callable[[str], str]) -> tuple[list[str], list[list[str]], str]:
    """inference's lines before the layers, the stages and the result after fold_layers, with
    its loops spelled as forward spells them: needed's count the loop's
    (hetero_loops.needed_counted_by_loop), the types each layer computes forward's
    (types_as_forward_gives)."""
    stages = len(folded.stages) - 1  # stage 0: the work before layer 1
    lines = needed_counted_by_loop(lines, folded.loops, stages)
    return lines, types_as_forward_gives(folded.stages, folded.loops, calls, relations, graph, new_name), folded.result


def types_as_forward_gives(stages: list[list[str]], loops: Sequence[tuple[int, int, str]],
                           calls: dict[int, list[fx.Node]], relations: Sequence[tuple[str, str, str]],
                           graph: str, new_name: Callable[[str], str]) -> list[list[str]]:
    """The stages with each loop's `for ntype in ("game", "user"):` read from the graph (named
    `graph` in inference) and the loop's dict where that is the same in every layer (the
    module's docstring); new_name(base) allocates a name of the method."""
    stages = [list(lines) for lines in stages]
    ntypes = sorted({t for s, _, d in relations for t in (s, d)})  # DGL's order, g.ntypes
    into: list[str] = []  # the one name every rewritten loop binds, allocated at the first

    def spell(lines: list[str], at: int, found: re.Match[str], running: str, first: int, last: int) -> None:
        try:
            written = list(ast.literal_eval(found.group(2)))
        except (ValueError, SyntaxError):
            return
        if running in ("s", "d", "t", graph):  # the comprehensions' own names
            return
        if not all(_given_types(calls.get(k, []), relations, ntypes) == written for k in range(first, last + 1)):
            return
        into[:] = into or [new_name("into")]
        indent = found.group(1)
        lines[at:at + 1] = [
            f"{indent}# HeteroGraphConv's result types: those relations from {running} go into",
            f"{indent}{into[0]} = {{d for s, _, d in {graph}.canonical_etypes if s in {running}}}",
            f"{indent}for ntype in (t for t in {graph}.ntypes if t in {into[0]}):  # in the graph's order",
        ]

    looped = {k for first, last, _ in loops for k in range(first, last + 1)}
    for first, last, _ in loops:
        lines = stages[first]
        at = next((j for j, line in enumerate(lines) if _TYPES_LOOP.match(line)), None)
        carried = next((m for line in reversed(lines) if (m := _CARRIED.match(line))), None)
        if at is not None and carried is not None and carried.group(2).startswith(carried.group(1)):
            spell(lines, at, _TYPES_LOOP.match(lines[at]), carried.group(1), first, last)
    # a layer forward calls on its own line: the dict its relations' source rows are read from
    for k, lines in enumerate(stages):
        at = next((j for j, line in enumerate(lines) if _UNROLLED_TYPES_LOOP.match(line)), None)
        read = next((m for line in lines[at or 0:] if (m := _SOURCES_READ.match(line))), None)
        if k and k not in looped and at is not None and read is not None:
            spell(lines, at, _UNROLLED_TYPES_LOOP.match(lines[at]), read.group(1), k, k)
    return stages


def _given_types(calls: list[fx.Node], relations: Sequence[tuple[str, str, str]],
                 ntypes: Sequence[str]) -> list[str] | None:
    """The types the stage's one HeteroGraphConv call gives results for, as DGL does: each a
    relation from a type of its inputs goes into, in the graph's order; None where the stage
    has no such call or several on other inputs."""
    given = {tuple(c.args[2]) for c in calls if isinstance(c.args[2], dict)}
    paths = {c.args[0] for c in calls}
    if len(given) != 1 or len(paths) != 1 or len(calls) != sum(isinstance(c.args[2], dict) for c in calls):
        return None
    inputs = set(next(iter(given)))
    return [t for t in ntypes if any(s in inputs and d == t for s, _, d in relations)]

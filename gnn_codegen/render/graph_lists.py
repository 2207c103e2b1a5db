"""Stage 6, render, graphs forward derives in a loop, as one list: where one line of forward's
loop over a count the model holds (`for j in range(self.num_etypes):`) derives a graph per value
of the loop's variable (`mfg.edge_subgraph(mfg.edata["etype"] == j, ...)`, an R-GAT's edge
type's subgraph), the generated inference derives them as forward does, in one comprehension
over the same range, each with its batches,

    graphs = [dgl.edge_subgraph(g, etype == j, relabel_nodes=False) for j in range(self.num_etypes)]
    graph_batches = [batches.over(graph) for graph in graphs]

and its layers run on `graphs[1]`'s batches, `graph_batches[1]`, instead of a copy of the line
per value with the value in its name (`g_etype_1`). Graphs written one by one in forward, on
lines of their own, or of arguments that differ otherwise than in the loop's value, stay apart."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gnn_codegen.ir import Op, Program, Spelled
from gnn_codegen.lower.loop_ranges import LoopRange, innermost


@dataclass(frozen=True)
class GraphList:
    ops: tuple[str, ...]  # the graphs' ops, in the loop's order: graph j is ops[j]
    loop: LoopRange
    template: Op  # the first graph's op with the loop's value as its variable
    var: str = ""  # the variable forward's line assigns: a graph's (`subg`) or the list's


def _with_value(value: object, var: str, expected: str) -> tuple[object, int]:
    """(value with each part that is exactly `expected` written as var, how many such parts)."""
    if isinstance(value, Spelled):
        parts = tuple(var if p == expected else p for p in value.parts)
        return Spelled(parts), sum(p == expected for p in value.parts)
    return value, 0


def _as_template(op: Op, var: str, j: int) -> tuple[Op, int]:
    """The op with the loop's value j written as its variable, and where it was found."""
    found = 0
    args = []
    for a in op.args[1:]:
        a, n = _with_value(a, var, str(j))
        args.append(a)
        found += n
    kwargs = []
    for k, v in op.kwargs:
        v, n = _with_value(v, var, str(j))
        kwargs.append((k, v))
        found += n
    # the variable the line assigns: the last graph's alone where it is the comprehension's list
    return replace(op, args=(op.args[0], *args), kwargs=tuple(kwargs), name="", var="", line_var=""), found


def graph_lists(program: Program, derived: list[Op], iterated: set[str]) -> list[GraphList]:
    """The runs of derived graphs (in `derived`'s order) that one line of a loop over the
    model's count makes, one per value 0, 1, ... of the loop's variable, each graph the same
    call on the same graph but for that value where the line reads the variable, each with
    batches of its own (in `iterated`); at least two of them."""
    found: list[GraphList] = []
    position = 0
    while position < len(derived):
        op = derived[position]
        loop = innermost(program.loop_ranges, op.location) if op.location else None
        run: list[Op] = []
        template = None
        if loop is not None and loop.spelled and loop.value >= 2 and re.search(
                rf"\b{re.escape(loop.var)}\b", op.location.partition(" ")[2]):
            template, count = _as_template(op, loop.var, 0)
            if count == 1:
                for j, candidate in enumerate(derived[position:position + loop.value]):
                    alike, n = _as_template(candidate, loop.var, j)
                    if (n != 1 or alike != template or candidate.location != op.location
                            or candidate.name not in iterated):
                        break
                    run.append(candidate)
        if template is not None and loop is not None and len(run) == loop.value:
            var = next((o.var or o.line_var for o in run if o.var or o.line_var), "")
            found.append(GraphList(tuple(o.name for o in run), loop, template, var))
            position += len(run)
        else:
            position += 1
    return found


def spelled_layers(layers: list[str], lengths: dict[str, int]) -> str:
    """The list of each layer's batches as `needed` takes it, a list of batches (lengths: its
    length) written whole where its items run in order: `graph_batches * 2` for the batches of
    three graphs twice over, `[*graph_batches, batches]`, not each item."""
    items: list[str] = []
    position = 0
    while position < len(layers):
        listed = re.fullmatch(r"(\w+)\[0\]", layers[position])
        count = lengths.get(listed.group(1), 0) if listed else 0
        run = [f"{listed.group(1)}[{j}]" for j in range(count)] if listed else []
        if run and layers[position:position + count] == run:
            items.append(f"*{listed.group(1)}")  # type: ignore[union-attr]
            position += count
        else:
            items.append(layers[position])
            position += 1
    if len(set(items)) == 1 and items[0].startswith("*"):
        return items[0][1:] if len(items) == 1 else f"{items[0][1:]} * {len(items)}"
    return f"[{', '.join(items)}]"


def renamed(template: Op, var: str, name: str) -> Op:
    """The template with the loop's variable called `name` (the method has a `j` already)."""
    return replace(template, args=(template.args[0], *(_with_value(a, name, var)[0] for a in template.args[1:])),
                   kwargs=tuple((k, _with_value(v, name, var)[0]) for k, v in template.kwargs))

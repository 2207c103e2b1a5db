"""Stage 6, render, graphs forward derives in a loop over a list a module holds, as one list:
where one line of a comprehension or `for` over `self.metapaths` (lower/held_lists.py) derives
a graph per item (HAN's `{metapath: dgl.metapath_reachable_graph(g, metapath) for metapath in
self.metapaths}`), the generated inference derives them as forward does, in one comprehension
over the list the model holds,

    graphs = [dgl.metapath_reachable_graph(g, metapath) for metapath in self.layers[0].metapaths]

and its layers run on `graph_batches[1]` instead of a copy of the line per item with the item in
its name (`g_pf_fp`). The graphs are a GraphList as those of a loop over a count are
(graph_lists.py), so their rows and passes are lists and loops alike. Graphs of one line whose
calls differ otherwise than in the item, or whose items are not a module's list in its order,
stay apart."""

from __future__ import annotations

from dataclasses import replace
from itertools import groupby
from typing import Any

from gnn_codegen.ir import Op, Program, Spelled
from gnn_codegen.lower.held_lists import HeldLoop
from gnn_codegen.lower.loop_ranges import LoopRange
from gnn_codegen.render.graph_lists import GraphList
from gnn_codegen.trace.relation_graphs import RELATION_GRAPH
from gnn_codegen.trace.several_graphs import GRAPH_ITEM


def _plain(value: Any) -> Any:
    """Lists as tuples, all the way down: a metapath traced as a tuple is the list's item."""
    return tuple(map(_plain, value)) if isinstance(value, (tuple, list)) else value


def _with_item(op: Op, at: int | str, var: str) -> Op:
    """The op with its argument at `at` (a position after the graph, or a keyword) written as
    the loop's variable, and no name of its own."""
    if isinstance(at, int):
        args = tuple(Spelled((var,)) if i == at else a for i, a in enumerate(op.args))
        return replace(op, args=args, name="", var="", line_var="")
    kwargs = tuple((k, Spelled((var,)) if k == at else v) for k, v in op.kwargs)
    return replace(op, kwargs=kwargs, name="", var="", line_var="")


def _argument(op: Op, at: int | str) -> Any:
    return op.args[at] if isinstance(at, int) else dict(op.kwargs)[at]


def _as_list(run: list[Op], loop: HeldLoop) -> GraphList | None:
    """The run as a list over one of the loop's lists: the same call but for one argument, the
    list's item, graph j on item j; None where no list gives it."""
    places: list[int | str] = [*range(1, len(run[0].args)), *(k for k, _ in run[0].kwargs)]
    for spelled, items in loop.lists:
        if len(items) != len(run):
            continue
        for at in places:
            template = _with_item(run[0], at, loop.var)
            if all(_with_item(op, at, loop.var) == template and _plain(_argument(op, at)) == _plain(item)
                   for op, item in zip(run, items)):
                counted = LoopRange(loop.path, loop.first, loop.last, loop.var, "", len(items), loop.comprehension)
                return GraphList(tuple(op.name for op in run), counted, template, over=spelled)
    return None


def held_graph_lists(program: Program, derived: list[Op], iterated: set[str]) -> list[GraphList]:
    """The runs of derived graphs (consecutive in `derived`) that one line of a loop over a
    module's list makes, one per item in the list's order, each with batches of its own."""
    found = []
    for location, run in groupby(derived, key=lambda op: op.location):
        ops = list(run)
        holding = [loop for loop in program.held_loops if location and loop.holds(location)]
        if len(ops) < 2 or not holding or any(op.name not in iterated for op in ops):
            continue
        if ops[0].target in (GRAPH_ITEM, RELATION_GRAPH):  # `g[relation]`, `gs[0]`: no call to write
            continue
        listed = _as_list(ops, max(holding, key=lambda loop: loop.first))
        if listed is not None:
            found.append(listed)
    return found


def unheld(derived: list[Op], held: list[GraphList]) -> list[Op]:
    """The derived graphs no list of `held` holds."""
    listed = {name for graphs in held for name in graphs.ops}
    return [op for op in derived if op.name not in listed]

"""Render, whether consecutive layers are the user's own loop (issue 37): the message passing of
each runs from the same line of the user's file, on a module of its own (`h = layer(block, h)`
in `for layer in self.layers[:-1]:`, run once per module). A line of forward that ran for two
modules was run twice, by a loop (or a helper forward calls twice): two such layers, alike but
for their module's index, read best as that loop (layer_loops.py folds them), where two layers
that only happen to be alike (written out one by one) stay apart, and so do two rounds of one
module's own loop (SGConv's hops, one module: not the user's loop)."""

from __future__ import annotations

from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Op, Program


def _calls(program: Program, stage: Stage) -> tuple[frozenset[str], frozenset[str]]:
    """The user's lines the stage's message passing runs from, and the modules it runs."""
    ops: list[Op] = [program.op(placed.name) for placed in stage.ops]
    passing = [op for op in ops if op.kind == "mp"]
    lines = frozenset(op.location for op in passing)
    modules = frozenset((op.mp.within if op.mp is not None and op.mp.within else "") or program.module_path(op)
                        for op in passing)
    return lines, modules


def written_as_loop(program: Program, stages: list[Stage], start: int, end: int) -> bool:
    """stages[start..end] each pass messages from the same lines of the user's file (all known),
    each on modules no other of them runs."""
    calls = [_calls(program, stages[p]) for p in range(start, end + 1)]
    lines = {line for line_set, _ in calls for line in line_set}
    if not calls[0][0] or "" in lines or any(line_set != calls[0][0] for line_set, _ in calls):
        return False
    seen: set[str] = set()
    for _, modules in calls:
        if not modules or "" in modules or modules & seen:
            return False
        seen |= modules
    return True


def same_lines(program: Program, stages: list[Stage], first: int, second: int) -> bool:
    """stages[first] and stages[second] pass messages from the same lines of a file (all
    known): one loop's rounds, the user's or a module's (APPNPConv's hops), where a last layer
    of its own line is one forward writes apart from the loop (GATv2's `self.layers[-1]`)."""
    lines = _calls(program, stages[first])[0]
    return bool(lines) and "" not in lines and lines == _calls(program, stages[second])[0]

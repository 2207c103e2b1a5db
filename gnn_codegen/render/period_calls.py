"""Render, the lines of a loop over user layers of several passes each (period_loops.py): the
loop's header, each pass's function made in the loop (its module's index a parameter's
default, `i=i`, read by no closure) and its call, `nodes=needed[2 * i + 1]` (the pass's layer
from the loop's variable: each user layer is `period` layers of needed's), the last layer's
ending under `if i == len(self.layers) - 1:`, and what each round frees."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gnn_codegen.cut.plan import Stage
from gnn_codegen.render.activation_test import activation_tested, forward_tested
from gnn_codegen.render.code import comment
from gnn_codegen.render.fewer_stored import padded
from gnn_codegen.render.last_copies import merged
from gnn_codegen.render.module_index import last_of, spelled_stop, uses_name
from gnn_codegen.render.normed_twice import said_twice
from gnn_codegen.render.period_loops import PeriodLoop

# the Renderer (method.py) whose names, program and calls the lines use
Renderer = Any

_PAD = "    "


def _layer(period: int, counter: str, offset: int) -> str:
    """`2 * i + 1`: the layer (of needed's) of a pass from the loop's variable."""
    term = f"{period} * {counter}"
    return term if not offset else f"{term} + {offset}" if offset > 0 else f"{term} - {-offset}"


def period_stages(r: Renderer, loop: PeriodLoop, runs: list[tuple[Stage, Any]], all_nodes_before: int,
                  frees_after: list[str], last: bool) -> list[dict]:
    """The method's stage dicts (method.py) of the loop's passes, its first group's positions;
    frees_after: what the method frees after the loop (read in it last)."""
    first = runs[loop.start][0]
    counter = loop.counter
    stop = spelled_stop(loop.functions[0], counter, loop.base + loop.groups, dict(r.program.module_lengths))
    if stop == str(loop.base + loop.groups):  # the first pass may read no module of the list
        stop = next((s for s in (spelled_stop(f, counter, loop.base + loop.groups, dict(r.program.module_lengths))
                                 for f in loop.functions) if not s.isdigit()), stop)
    last_index = last_of(stop)
    header = [*loop.starts, f"for {counter} in {f'range({stop})' if not loop.base else f'range({loop.base}, {stop})'}:"]
    if loop.base == 0 and first.layer == 1 and loop.end == len(runs) - 1 and not stop.isdigit():
        # every layer in the loop: needed counts them as it does (preamble.py)
        r.layer_count = f"{stop} * {loop.period}"
    span = (f"Layers {first.layer} to {runs[loop.end][0].layer} of {r.plan.num_layers}, {loop.period} per "
            f"{loop.kind} (a layer per hop): {loop.path}[{loop.base}] to {loop.path}[{loop.base + loop.groups - 1}], "
            f"a round of the loop below each, [{counter}], each hop's function the same in every round.")
    dicts = []
    for j, function in enumerate(loop.functions):
        stage = runs[loop.start + j][0]
        name = r.names.take(f"hop_{j + 1}")
        function = replace(function, name=name)
        ending_here = j == loop.period - 1 and loop.ending is not None
        if ending_here:
            ending = loop.ending
            tested = activation_tested(function.body, ending, counter, loop.base + loop.groups - 1,
                                       r.program.unset_functions)
            if tested is not None:
                function, ending = replace(function, body=tested[0]), tested[1]
            if loop.last_stores:  # `return h, None`: the others' h, h_src (fewer_stored.py)
                ending = padded(ending, loop.last_stores, len(stage.stores))
            function = replace(function, body=merged(function.body, ending, f"{counter} == {last_index}"))
        # `if self.layers[i].activation:` where the module's forward tests it
        function = replace(function, body=forward_tested(function.body, counter, loop.base + loop.groups - 1,
                                                         r.program.tested_functions))
        function = replace(function, body=said_twice(function.body))  # `h * norm` after `h = h * norm`
        if uses_name(function, counter):  # its module's index, bound where it is made: no closure reads it
            function = replace(function, params=[*function.params, f"{counter}={counter}"])
        which = None
        if loop.start + j >= all_nodes_before:
            which = f"{r.needed}[{_layer(loop.period, counter, first.layer - loop.base * loop.period + j)}]"
        call = r._call(function, r.runtimes.get(stage.graph, r.batches), which)
        targets = ", ".join(r.buffer[v] for v in stage.stores)
        said = [f"{_PAD}{line}" for line in r._in_place_comment(function)]
        body = [*said, f"{_PAD}{targets} = {call}"]
        if loop.frees[j]:
            body.append(f"{_PAD}del {', '.join(loop.frees[j])}")
        if j == loop.period - 1 and frees_after and not last:
            body.append(f"del {', '.join(frees_after)}")
        hop = [f"{_PAD}{line}" for line in comment(f"{loop.path}[{counter}] ({loop.kind}), hop {j + 1} of "
                                                     f"{loop.period}.", 84)]
        dicts.append({"comment": comment(span) if j == 0 else hop, "function": function, "after": body,
                      "before": [], "opening": [*header, *hop] if j == 0 else [], "pad": _PAD,
                      "position": loop.start + j})
    return dicts

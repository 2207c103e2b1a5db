"""Stage 6, render, the calls of the layers: each layer's call to the runtime and its
arguments, identical layers folded into a loop, what is freed after its last use, and what is
returned."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from typing import Any

from gnn_codegen.render.activation_test import activation_tested, forward_tested
from gnn_codegen.render.last_copies import merged
from gnn_codegen.render.fewer_stored import padded
from gnn_codegen.render.layer_loops import LayerLoop, fold
from gnn_codegen.render.loop_results import layer_loop_output, renamed_outputs
from gnn_codegen.render.period_loops import fold_periods
from gnn_codegen.render.map_bindings import map_bindings
from gnn_codegen.render.module_index import every_hop, spelled_hops, spelled_stop, uses_name
from gnn_codegen.errors import internal
from gnn_codegen.ir import Ref, iter_refs
from gnn_codegen.analysis.node_reductions import node_reduction, pass_expression
from gnn_codegen.cut.plan import Stage
from gnn_codegen.lower.row_axis import RowAxis
from gnn_codegen.lower.row_ranges import RowRange, spelled_result
from gnn_codegen.render.code import comment
from gnn_codegen.render.layer import LayerFunction, LayerWriter
from gnn_codegen.render.stored_names import stored_name
from gnn_codegen.render.user_layer_words import stage_name
from gnn_codegen.render.written_as_loop import same_lines, written_as_loop

# an item of a list a loop appends to (`feats_by_layer[0]`, layer_loops.py)
_LISTED = re.compile(r"^(\w+)\[\d+\]$")


class LayerCalls:
    """The lines that call the layers (a part of render's Renderer)."""

    in_place_said = False  # whether a call said what in_place=True means (_in_place_comment)
    some_in_place = False  # whether any layer of the module reads its source rows in place

    def _fold_loops(self, runs: list[tuple[Stage, LayerWriter]], functions: list[LayerFunction]):
        """Consecutive layers that are one function of the layer before: their chained tensors
        take one name and their functions are written again (layer_loops.py)."""
        readers = Counter(t for f in functions for t in {*f.src, *f.dst, *f.edges})
        for stage in self.plan.stages:  # values read before a stage's loop count as readers
            for value in (*(v for _, v in stage.reductions), *(r for n in stage.once for r in self.program.op(n).refs())):
                if value in self.buffer:
                    readers[self.buffer[value]] += 2
        self.rebound: set[str] = set()
        self.loop_outputs: dict[str, str] = {}  # loop_results.renamed_outputs
        callers = self._callers_tensors()
        private = {value for value, name in self.buffer.items() if name not in callers}

        def rewrite() -> list[LayerFunction]:
            self.origins = []
            return [LayerWriter(self, stage, writer.name).write() for stage, writer in runs]

        def take_name(base: str, value: str | None = None) -> str:
            return stored_name(base, value, self.sources, self.buffer, self.names.taken, self.names.take)

        stages = [stage for stage, _ in runs]
        outputs = {self.buffer[n] for n in self.plan.outputs}
        # user layers of several passes each (ChebConv's hops): one loop over the user's layers
        functions, self.period_loops = fold_periods(self.program, stages, functions, self.buffer, private,
                                                    dict(readers), set(self.plan.outputs), self.generic,
                                                    self.names.taken, self.names.take, rewrite)
        if self.period_loops:  # not beside a loop of one pass per layer (not seen together)
            return functions, []

        def rebinds(value: str) -> bool:  # forward's input read by one layer alone (the loop's first)
            return value in self.program.inputs and self.buffer[value] not in outputs and readers[self.buffer[value]] == 1

        named = dict(self.buffer)  # forward's output a loop carries keeps this name after it
        functions, loops = fold(stages, functions, self.buffer, private, dict(readers), take_name, rewrite,
                                lambda start, end: written_as_loop(self.program, stages, start, end), rebinds,
                                lambda regular, last: same_lines(self.program, stages, regular, last),
                                lambda start, end: every_hop(self.program, stages[start:end + 1]))
        # a loop's variable that took the name of the caller's tensor it starts from is freed as
        # the method's own (`del h` unbinds the name only: the caller's tensor is the caller's)
        self.rebound = {self.buffer[values[-1]] for loop in loops for values in loop.chained
                        if values[0] in self.program.inputs and self.buffer[values[0]] == self.buffer[values[-1]]}
        self.loop_outputs = renamed_outputs(loops, named, self.buffer, self.plan.outputs, len(functions) - 1)
        return functions, loops

    def _loop_lines(self, loop: LayerLoop, runs, function: LayerFunction, which: str | None):
        """The loop over a run of identical layers: its function, named for any of them, and
        `for k in range(first, last + 1): h = batches.map(layer_k, source_rows=dict(h=h), ...)`.
        A function that reads the module's index (`self.convs[i]`) is made in the loop, with the
        index as a parameter's default (`def layer_i(block, h, i=i)`): it reads no loop variable
        by closure (flake8-bugbear's B023), so it computes the layer it was made for wherever it
        runs. Returned: the function, the nodes it computes, the lines before the function (the
        loop's header, where it is made in the loop) and those after it."""
        first, last = runs[loop.start][0].layer, runs[loop.end][0].layer
        # over the layers, or over the index of the module each layer runs (module_index.py)
        counter, base = (loop.counter, loop.base) if loop.indexed else (self.names.take("k"), 0)
        function = replace(function, name=self.names.take("layer_i" if loop.indexed else "layer_k"))
        # made in the loop where it reads the loop's variable: its module's index, or whether
        # it runs the last layer (last_copies.py)
        in_loop = loop.indexed or loop.ending is not None
        # a local of the function would hide the layer's number it reads (fold checks the index)
        while loop.ending is not None and not loop.indexed and uses_name(function, counter):
            counter = self.names.take("k")
        if in_loop:  # the variable bound where the function is made, in the loop, not read by closure
            function = replace(function, params=[*function.params, f"{counter}={counter}"])
        if which is not None:
            layer = counter if not base else f"{counter} - {base}" if base > 0 else f"{counter} + {-base}"
            which = f"{self.needed}[{layer}]"
        elif not in_loop:
            counter = "_"
        call = self._call(function, self.runtimes.get(runs[loop.start][0].graph, self.batches), which)
        # what each layer stores for the layers after the loop: appended to its list in turn
        lists = {values[-1]: _LISTED.match(self.buffer[values[-1]]).group(1) for values in loop.collected}  # type: ignore[union-attr]
        # each layer's, named for the layer (`feats_k`)
        each = {value: self.names.take(f"{listed.removesuffix('_by_layer')}_{counter.strip('_') or 'k'}")
                for value, listed in lists.items()}
        # a last layer that stores fewer: the others' stores (each but the last layer's), bound below
        stored_by = runs[loop.end - 1 if loop.last_stores else loop.end][0].stores
        targets = ", ".join(each.get(v, self.buffer[v]) for v in stored_by)
        # a loop variable that starts from a tensor of another name (the caller's x)
        starts = [f"{self.buffer[values[-1]]} = {self.buffer[values[0]]}" for values in loop.chained
                  if self.buffer[values[0]] != self.buffer[values[-1]]]
        starts += [f"{listed} = []" for listed in lists.values()]
        appends = [f"    {lists[v]}.append({name})" for v, name in each.items()]
        stop = str(last + base + 1)
        if loop.indexed:  # `len(self.convs) - 1`, where the layers run the list's modules
            stop = spelled_stop(function, counter, last + base + 1, dict(self.program.module_lengths))
        else:  # `self.propagate._k + 1`, where they are a module's hops
            hops = [runs[p][0] for p in range(loop.start, loop.end + 1)]
            stop = spelled_hops(self.program, hops, last + 1) or stop
        if loop.ending is not None:  # the last layer's own ending, under `if k == 10:`
            ending = loop.ending
            # an activation the last layer's module lacks: tested as its forward does
            tested = activation_tested(function.body, ending, counter, last + base, self.program.unset_functions)
            if tested is not None:
                function, ending = replace(function, body=tested[0]), tested[1]
            if loop.last_stores:  # `return h, None`: the others' h, h_src (fewer_stored.py)
                ending = padded(ending, loop.last_stores, len(stored_by))
            function = replace(function, body=merged(function.body, ending, f"{counter} == {_less_one(stop)}"))
        if loop.indexed:  # `if self.layers[i].activation:` where the module's forward tests it
            function = replace(function, body=forward_tested(function.body, counter, last + base,
                                                             self.program.tested_functions))
        header = [*starts, f"for {counter} in {_spelled_range(first + base, stop)}:"]
        if first + base == 0 and first == 1 and last == self.plan.num_layers and not stop.isdigit():
            self.layer_count = stop  # every layer in it: `needed` counts them as it does (preamble.py)
        said = [f"    {line}" for line in self._in_place_comment(function)]
        body = [*said, f"    {targets} = {call}", *appends]
        if loop.end == len(runs) - 1:  # forward's output under its own name, not the loop's
            body += layer_loop_output(self, self.loop_outputs, loop.ending.last if loop.ending else None)
        return function, which, header if in_loop else [], body if in_loop else [*header, *body]

    def _nodes_from_here(self, runs: list[tuple[Stage, LayerWriter]], folded: dict[str, str] | None = None
                         ) -> list[str]:
        """Why `nodes=` first appears at this call (the last stage that reads a reduction over
        all nodes): the stages above compute every node whatever nodes= asks, as the means
        (sums, ...) over all nodes they feed read every node's rows (PairNorm's column mean
        and mean row norm, issue 37: a reviewer saw nodes= on the last layers only)."""
        reductions = []
        for stage, _ in runs:
            for name, value in stage.reductions:
                reduction = node_reduction(self.program.op(name), lambda n: self.attrs[n].rows)
                if reduction is not None and folded and name in folded:  # in a module's function
                    said = f"{folded[name]}'s {reduction.how}s"  # (module_functions.py)
                    reductions += [said] if said not in reductions else []
                elif reduction is not None:
                    reductions.append(f"{self.buffer[value]}.{reduction.how}({'0' if reduction.over_rows_only else ''})")
        listed = ", ".join(reductions[:-1]) + " and " + reductions[-1] if len(reductions) > 1 else reductions[0]
        return comment(f"{self.nodes}= from here on: every layer and pass above computes all nodes whatever "
                       f"{self.nodes}= asks, since {listed} over all nodes read every node's rows", 80)

    def _before_loop(self, stage: Stage, writer: LayerWriter) -> list[str]:
        """The lines that compute the stage's reductions over all nodes from stored rows, in a
        pass over ranges of nodes before its batch loop (node_reductions.py), and what it
        computes from them alone, once (`beta = torch.softmax(w, dim=0)`)."""
        lines = []
        for name, value in stage.reductions:
            op = self.program.op(name)
            reduction = node_reduction(op, lambda n: self.attrs[n].rows)
            if reduction is None:
                raise internal(f"{name} is placed as a reduction over nodes but is none")
            stored = self.buffer[value]
            spelled = f"{stored}.{reduction.how}({'0' if reduction.over_rows_only else ''})"
            # layer 2, the pass after the last layer, the pass before self.layers[1]
            where = stage_name(self.plan, self.parts, stage)
            where = where if where.startswith(("layer ", "self")) else f"the {where}"
            how = {"sum_nodes": "summed in a pass", "var_nodes": "in two passes (the mean, the squared "
                   "deviations from it)"}.get(reduction.runtime_method, "in a pass")
            lines += comment(f"{spelled} over all nodes, which {where} reads: {how} over ranges of the "
                             "stored rows")
            lines.append(f"{self.buffer[name]} = {pass_expression(reduction, stored, self.batches)}")
        for name in stage.once:
            text = writer.op_expression(self.program.op(name), "dst").text
            if len(self.users[name]) == 1 and self.users[name][0] in stage.once and name not in self.plan.outputs:
                # a part of its one reader's line, as forward writes it: `(1e-06 + m).sqrt()`
                self.buffer[name] = f"({text})"
                continue
            lines.append(f"{self.buffer[name]} = {text}")
        return lines

    def _call(self, function: LayerFunction, batches: str, nodes: str | None) -> str:
        which = [] if nodes is None else [f"nodes={nodes}"]
        if not function.params or function.params[0] != "block":  # the prologue: node ranges
            return f"{self.batches}.map_nodes({', '.join([function.name, *function.dst, *which])})"
        args = [function.name, *map_bindings(function.bindings())]
        if function.returns:
            args.append(f"returns={function.returns!r}")
        if function.in_place:
            args.append("in_place=True")
        return f"{batches}.map({', '.join([*args, *which])})"

    def _in_place_comment(self, function: LayerFunction) -> list[str]:
        """What `in_place=True` means, where the module first passes it, and why a layer that
        reads source rows gathers them, in a module where others read theirs in place (the
        calls in their order; `self.in_place_said` and `self.some_in_place` set by method.py)."""
        if function.in_place and not self.in_place_said:
            self.in_place_said = True
            return comment("in_place=True: source rows are read where they are stored, not gathered per batch "
                           "(the layer reads them only in messages)", 80)
        if function.gathered and self.some_in_place:
            return comment(f"source rows gathered per batch: {function.gathered}", 86)
        return []

    def _callers_tensors(self) -> set[str]:
        """forward's inputs and results: the caller's, never deleted (but for a loop's variable
        that took an input's name, _fold_loops)."""
        callers = set(self.params) | {self.buffer[n] for n in (*self.program.inputs, *self.plan.outputs)}
        return callers - getattr(self, "rebound", set())

    def _last_uses(self, functions: list[LayerFunction]) -> dict[str, int]:
        """Stored tensors and graph values -> the stage position after which nothing reads
        them (never forward's inputs nor its results, which are the caller's)."""
        keep = self._callers_tensors()
        last: dict[str, int] = {}
        for position, function in enumerate(functions):
            for tensor in (*function.src, *function.dst, *function.edges):
                listed = _LISTED.match(tensor)  # a list a loop appended to (layer_loops.py): whole
                tensor = listed.group(1) if listed else tensor
                if tensor not in keep:
                    last[tensor] = position
        return last

    def _returned(self, value: Any) -> tuple[list[str], str]:
        """What inference returns: forward's results, each with a row per node or edge through
        the runtime's `result` (its rows for `nodes`, its file out of core). Where there are
        several, each is taken under its own name first (`out = batches.result(out, ...)`), so
        that the return reads as forward's and black splits no call inside it: the lines that
        take them, and what is returned."""
        with_rows = [n for n in self._output_names() if self.attrs[n].rows in ("node", "edge")]
        files = iter(range(len(with_rows)))  # out of core, each in a file of its own
        lines: list[str] = []
        # a tensor returned twice (or also as a range of its rows) keeps its calls in the return
        refs = list(iter_refs(value))
        repeated = len(refs) != len(set(refs))

        def spell(value: Any) -> str:
            if isinstance(value, tuple):
                return ", ".join(spell(v) for v in value) + ("," if len(value) == 1 else "")
            if isinstance(value, list):
                return "[" + ", ".join(spell(v) for v in value) + "]"
            if isinstance(value, dict) and all(isinstance(k, str) for k in value):  # {"logits": ...}
                return "{" + ", ".join(f"{json.dumps(k)}: {spell(v)}" for k, v in value.items()) + "}"
            if not isinstance(value, Ref):
                raise internal(f"cannot return {value!r}")
            name = self.buffer[value.name]
            if isinstance(value, RowRange):  # rows start:stop of the result (row_ranges.py)
                return spelled_result(value, name, self.batches, self.nodes, f"result_{next(files)}")
            if isinstance(value, RowAxis):  # rows moved off the first axis (row_axis.py)
                return spell(Ref(value.name)) + value.suffix
            if value.name not in with_rows:
                return name
            args = [name]
            if self.attrs[value.name].rows == "node":
                args.append(f"{self.nodes}={self.nodes}")
            if len(with_rows) > 1:
                args.append(f'name="result_{next(files)}"')
            if len(with_rows) == 1 or repeated:
                return f"{self.batches}.result({', '.join(args)})"
            lines.append(f"{name} = {self.batches}.result({', '.join(args)})")
            return name

        returned = spell(value)
        return lines, returned


def _less_one(stop: str) -> str:
    """The loop's last value from its stop as spelled: `10` for 11, `len(self.convs) - 1`."""
    if stop.isdigit():
        return str(int(stop) - 1)
    head, minus, count = stop.rpartition(" - ")
    if minus and count.isdigit():
        return f"{head} - {int(count) + 1}"
    head, plus, count = stop.rpartition(" + ")
    if plus and count.isdigit():
        return head if count == "1" else f"{head} + {int(count) - 1}"
    return f"{stop} - 1"


def _spelled_range(start: int, stop: str) -> str:
    """`range(7)` for range(0, 7), as a person writes it."""
    return f"range({stop})" if start == 0 else f"range({start}, {stop})"

"""Stage 6, render, the words of the method: its docstring, each layer's function name and
the comment that describes it."""

from __future__ import annotations

import textwrap

from gnn_codegen.trace.homogenized import kept_fields, subgraph_types
from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Op, quoted_code
from gnn_codegen.lower.row_ranges import range_docstring
from gnn_codegen.render.code import comment
from gnn_codegen.render.runtime_section import parameters_sentence
from gnn_codegen.render.user_layer_words import between_user_layers, owner_index, part_function_name
from gnn_codegen.render.user_layers import graph_suffix
from gnn_codegen.render import type_offsets as by_type
from gnn_codegen.trace.write_out import ONCE_PER_NODE


class MethodDocstring:
    """The method's docstring and the layers' names (a part of render's Renderer)."""

    def _pass_number(self, stage: Stage, position: int) -> tuple[int, int]:
        """(which, of how many) passes over ranges of nodes in the stage's gap between layers."""
        gap = self.gaps.get(stage.layer, [position])
        return gap.index(position) + 1, len(gap)

    def _function_name(self, stage: Stage, position: int) -> str:
        # a pass of a user's layer of a convolution per graph, or between two: named for them
        between = between_user_layers(self.plan, self.parts, stage)
        if stage.node_pass:
            which, _ = self._pass_number(stage, position)
            name = f"before_layer_{stage.layer + 1}" if stage.layer < self.plan.num_layers else "after_last_layer"
            name = f"before_layer{owner_index(between[1])}" if between else name
            return name if which == 1 else f"{name}_pass_{which}"
        part = self.parts.get(stage.index)
        if part is not None and stage.graph:
            name = part_function_name(part, graph_suffix(self.plain_graph_name[stage.graph], self.params[0]))
            if name is not None:
                return name
        return "prologue" if stage.index == 0 else f"layer_{stage.layer}"

    def _describe(self, stage: Stage, position: int, last: Stage | None = None, counter: str = "") -> list[str]:
        ops = [self.program.op(p.name) for p in stage.ops]
        if stage.node_pass:
            which, count = self._pass_number(stage, position)
            # a line of the user's split at a value over all nodes, its first part in the stage before
            split = self._split_line(stage, self.plan.stages[position - 1]) if position else []
            # between two user's layers of a convolution per graph: their names, not pass counts
            between = between_user_layers(self.plan, self.parts, stage)
            previous, following = (between[0].owner, between[1].owner) if between else (
                f"layer {stage.layer}", f"layer {stage.layer + 1}")
            if which > 1:
                where = following if stage.layer < self.plan.num_layers else "the last layer"
                return comment(f"{'Before' if stage.layer < self.plan.num_layers else 'After'} {where}, pass "
                               f"{which} of {count}, once per node, from what the pass before it stored.") + split
            if stage.layer < self.plan.num_layers:
                return comment(f"Before {following}, once per node, from what {previous} stored.") + split
            return comment("After the last layer, once per node, from what the layers stored.") + split
        if stage.index == 0:
            what = ", ".join(f"{op.accessor} ({op.class_name})" for op in ops if op.kind == "module" or op.helper)
            when = "Before the first layer, once" if self.plan.num_layers else "Once"  # none: an MLP's forward
            return comment(f"{when} per node: {what or 'work on the inputs'}.")
        convs = _computes(ops)
        # on a graph forward derives (dgl.add_self_loop, an edge subgraph): say which
        on = f", on {self.graph_name[stage.graph]}" if stage.graph and stage.graph != self.program.graph else ""
        if last is not None and last is not stage:  # a loop over identical layers (layer_loops.py)
            # layers that differ in their module's index read it from the loop (module_index.py)
            index = f" with its own module, [{counter}] of the loop below" if counter else ""
            convs = _span(convs, _computes([self.program.op(p.name) for p in last.ops]))
            return comment(f"Layers {stage.layer} to {last.layer} of {self.plan.num_layers}, each the same function "
                           f"of the layer before{index}: {convs}{on}.")
        part = self.parts.get(stage.index)
        if part is not None:  # one of a user's layer's convolutions, each on its graph (user_layers.py)
            return comment(f"{part.label()}: {convs}{on}.")
        return comment(f"Layer {stage.layer} of {self.plan.num_layers}: {convs}{on}.")

    def _split_line(self, stage: Stage, before: Stage) -> list[str]:
        """Where a line of the user's runs in two passes, split where it reads a value over all
        nodes (PairNorm's `x = self.scale * x / rownorm_mean`: `self.scale * x` in the pass
        before, the division here), the sentence that says so: it runs in its own order, which
        the reader need not re-derive; none for none."""
        # the line that made each op: inside a module forward is traced into, that module's line
        made_before = {name: self.program.op(name).innermost_line for name in before.stores}
        over_all = {name for name, _ in stage.reductions} | set(stage.once)
        over_all |= {name for s in self.plan.stages for name in s.once}
        for placed in stage.ops:
            op = self.program.op(placed.name)
            reads = set(op.refs())
            line = quoted_code(op.innermost_line)
            if not line or not reads & over_all:
                continue
            if any(made_before.get(r) == op.innermost_line for r in reads):
                value = self.buffer.get(next(iter(sorted(reads & over_all))), "")
                that = "the pass before" if before.node_pass else f"layer {before.layer}"
                whose = f"{op.module_call[1]}'s " if op.module_call else ""
                stored = [self.buffer[r] for r in sorted(reads) if made_before.get(r) == op.innermost_line]
                kept = f" ({', '.join(stored)})" if stored else ""
                # the ops are the line's as traced, none reordered: each part runs in the line's order
                return comment(f"{whose}`{line}` needs {value or 'a value'} over all nodes: the part that reads "
                               f"none ran in {that}{kept}, the rest runs here.")
        return []

    def _docstring(self) -> list[str]:
        p = self.program
        g = self.params[0]
        names = {p.op(n).target: self.buffer[n] for n in p.inputs} | self.dicts
        names[p.op(p.graph).target] = f"[{g}] * {p.num_blocks}" if p.blocks_style else g
        names.update(zip(p.graph_params, self.params))  # forward(self, g1, g2, x)
        call = ", ".join(names[name] if kind == "positional" else f"{name}={names[name]}"
                         for name, kind in p.signature if name not in self.from_graph and name not in self.from_model)
        call = ", ".join([call, *(f"{name}={value}" for name, value in p.flags)])
        kept = " and ".join(f"self.{path}" for path in p.kept_graph)
        on_graph = f" on {g} (the graph forward reads as {kept})" if kept else ""
        first = (f"self.forward({call}){on_graph} in eval mode, computed one layer at a time over batches of "
                 f"{self.batch_size} destination nodes, each with the block of all its in-edges.")
        if not self.plan.num_layers:  # forward passes no messages: each node's rows are its own
            first = f"self.forward({call}){on_graph} in eval mode, computed over batches of {self.batch_size} nodes."
        # what the runtime's parameters do is the same in every module: its docstring says it
        own = [self.batch_size, self.device, self.max_memory, self.progress, self.nodes, self.storage,
               self.changed, self.keep_layers]
        paragraphs = [first]
        if self._hoists_source_work():
            paragraphs.append(
                "A layer's function may end with the next layer's work on each source row (a Linear, an "
                "attention term: its comment names the module): it runs there once per node, as the rows "
                "are made, instead of on every batch that reads them.")
        if p.homogenized is not None:  # homogenized.py
            fields = kept_fields(p.homogenized, "ndata") + kept_fields(p.homogenized, "edata")
            carried = f", with {', '.join(repr(f) for f in fields)} on its types as the conversion reads them" if fields else ""
            subgraph = subgraph_types(p.homogenized)
            if subgraph:
                paragraphs.insert(1, (
                    f"{g}: the heterogeneous graph forward takes; inference takes the subgraph forward "
                    f"takes ({p.homogenized[0]}), so {self.nodes}= and the rows returned are those of its "
                    f"nodes of type {subgraph[0]!r}, and the inputs have a row per such node."))
            else:
                paragraphs.insert(1, (
                    f"{g}: the heterogeneous graph forward takes{carried}; inference makes it homogeneous "
                    f"as forward does (dgl.to_homogeneous), so {self.nodes}= and the rows returned are "
                    f"those of the homogeneous graph: every type's nodes by type offsets, in the order of "
                    f"{g}.ntypes."))
            paragraphs[1] = by_type.docstring(p, self.buffer, g, self.nodes) or paragraphs[1]  # dict inputs
        optional = [f"{param}: as forward's {param} (None: {self.from_model[self.program.op(table).target]}, as forward)."
                    for table, param in self.optional.items()]
        if optional:
            paragraphs.append(" ".join(optional))
        paragraphs += range_docstring(self.program.output, self.nodes)
        paragraphs.append(parameters_sentence(own, self.runtime, self.runtime_module))
        return [line for i, text in enumerate(paragraphs) for line in ([""] if i else []) + textwrap.wrap(text, 88)]


    def _hoists_source_work(self) -> bool:
        """Whether a layer (not the prologue, not a pass between layers) computes a later
        layer's work on source rows once per node (trace/write_out.py's note on the line)."""
        return any(placed.space != "src" and self.program.op(placed.name).note.endswith(_SOURCE_WORK)
                   for stage in self.plan.stages if stage.index and not stage.node_pass for placed in stage.ops)


_SOURCE_WORK = f"on each source row{ONCE_PER_NODE}"


def _computes(ops: list[Op]) -> str:
    """What a layer's message passing is: `self.conv1 (GATConv)`; for an update_all of a
    module traced into, that module and the hop (lower/hops.py): `self.layers[0] (TAGConv),
    hop 2 of 2`; for one of forward's own, `g.update_all (copy_u, sum)`."""
    parts = []
    for op in ops:
        if op.kind != "mp":
            continue
        if op.mp is not None and op.mp.within:
            hop = f", hop {op.mp.hop} of {op.mp.hops}" if op.mp.hop and op.mp.hops > 1 else ""
            parts.append(f"{op.mp.within}{hop}")
        else:
            parts.append(f"{op.accessor} ({op.class_name})")
    return ", ".join(dict.fromkeys(parts))


def _span(first: str, last: str) -> str:
    """The message passing of a run of layers, from the first's to the last's: `self.propagate
    (APPNPConv), hops 1 to 9 of 10`, `self.convs[0] (GCN2Conv) to self.convs[6] (GCN2Conv)`."""
    if first == last:
        return first
    head, hop, rest = first.rpartition(", hop ")
    tail_head, tail_hop, tail_rest = last.rpartition(", hop ")
    if hop and tail_hop and head == tail_head and rest.split(" of ")[1:] == tail_rest.split(" of ")[1:]:
        return f"{head}, hops {rest.split(' of ')[0]} to {tail_rest}"
    return f"{first} to {last}"

"""Stage 6, render: the Plan into Python source through the Jinja templates in templates/. This
module decides the method's names and lines (render_layer.py each stage's function); the
templates only print them. The generated `inference` is a short sequence of layers, each a
function of one batch (the user's forward for that layer) handed to the runtime's `map`, which
owns the mechanism: batches, blocks, moving rows to the device, buffers on the host."""

from __future__ import annotations

import ast
import json
import textwrap
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from gnn_codegen.attributes import Attributes
from gnn_codegen.graph_lineage import DERIVED
from gnn_codegen.distributed import not_distributed, paragraph, refusal
from gnn_codegen.edge_masks import graph_arguments, is_edge_subgraph
from gnn_codegen.edge_masks import suffix as edge_subgraph_suffix
from gnn_codegen.edge_weight_norm import EDGE_WEIGHT_NORM
from gnn_codegen.graph_data import BLOCK_EDGE_IDS, BLOCK_NODE_IDS
from gnn_codegen.layer_loops import LayerLoop, fold
from gnn_codegen.map_bindings import map_bindings
from gnn_codegen.homogenized import kept_fields, spelled_conversion, subgraph_types
from gnn_codegen.node_counts import GRAPH, MADE
from gnn_codegen.graph_proxy import BATCH_SIZE
from gnn_codegen.errors import internal
from gnn_codegen.ir import Op, Program, Ref, iter_refs
from gnn_codegen.metapaths import metapath_of
from gnn_codegen.dict_inputs import packed_arguments, unpacking_lines
from gnn_codegen.metapath_types import rows_type_of
from gnn_codegen.relation_graphs import RELATION_GRAPH
from gnn_codegen.relation_graphs import spelled as relation_spelled, suffix as relation_suffix
from gnn_codegen.several_graphs import GRAPH_ITEM, in_forwards_order
from gnn_codegen.names import NameAllocator
from gnn_codegen.node_reductions import node_reduction, pass_expression
from gnn_codegen.plan import Plan, Stage, inline_ops
from gnn_codegen.render_assumptions import entry_checks
from gnn_codegen.row_axis import RowAxis
from gnn_codegen.row_ranges import RowRange, range_docstring, spelled_result
from gnn_codegen.row_ranges import entry_checks as row_range_checks
from gnn_codegen.squeezed_rows import homogeneous_checks as squeeze_checks
from gnn_codegen.render_code import comment
from gnn_codegen.render_layer import LayerFunction, LayerWriter
from gnn_codegen import incremental
from gnn_codegen import render_type_offsets as by_type
from gnn_codegen.runtime_module import DIST_RUNTIME, RUNTIME, imported
from gnn_codegen.runtime_section import model_helpers, runtime_helpers
from gnn_codegen.templating import render_template
from gnn_codegen.write_out import SECTIONS, sections_needed

BLOCK_AS_GRAPH = "_block_as_graph"


@dataclass(frozen=True)
class Rendered:
    header: str
    helpers: str  # the runtime and the written-out convolutions, placed after the class
    method: str
    buffers: tuple[tuple[str, str], ...] = ()  # value -> its name in the generated code
    # (generated statement, the user's line it computes), to point a failure at the user's code
    origins: tuple[tuple[str, str], ...] = ()
    # the helpers are black-formatted as rendered: the templates are written so for their
    # default names (tests/test_goldens.py), and formatting them again took a tenth of the command
    helpers_formatted: bool = False
    imports: tuple[str, ...] = ()  # the runtime's, from --runtime-module's module (runtime_module.py)
    after_imports: str = ""  # with them, the check that it is the runtime generated against


# a block's IDs (graph_data.BLOCK_NODE_IDS): what counts them in g, and how forward reads them
_BLOCK_IDS = {BLOCK_NODE_IDS: ("num_nodes", "srcdata[dgl.NID]"), BLOCK_EDGE_IDS: ("num_edges", "edata[dgl.EID]")}


class Renderer:
    def __init__(self, program: Program, attrs: Attributes, plan: Plan, module_names: set[str]):
        self.program, self.attrs, self.plan = program, attrs, plan
        self.inline = inline_ops(program, attrs)
        self.users = program.consumers()
        self.origins: list[tuple[str, str]] = []
        self._noted: dict[int, tuple[int, Op | None]] = {}
        # module-level names the generated code adds: never one the user's file defines
        used = {op.helper for op in program.ops if op.helper}
        self.sections = sections_needed(used)
        top = NameAllocator(module_names)
        self.runtime, self.dist_runtime = top.take(RUNTIME), top.take(DIST_RUNTIME)
        self.helper_names = {section: top.take(f"_{section}") for section in SECTIONS}
        # the runtime's helper that gives a block as a graph over its sources (block_as_graph.py)
        self.block_as_graph = top.take(BLOCK_AS_GRAPH)
        self.uses_block_as_graph = any(op.mp is not None and op.mp.as_graph for op in program.ops)
        # what the method reads from the module: its locals never take these names, and
        # nothing else is reserved (a top-level `g` in the user's file is no concern of ours)
        self.reserved = _globals_read(program) | {self.runtime, self.dist_runtime, self.block_as_graph, *self.helper_names.values()}
        self.names = NameAllocator(self.reserved)
        # inputs forward reads from the graph (`g.ndata["feat"]`): read from g at the top, not
        # parameters; target -> (view, key)
        self.from_graph = {target: (view, key) for target, view, key in program.graph_data}
        # tables of the model read as node features (`self.emb.weight`): target -> how to read it
        self.from_model = {target: spelled for target, _, spelled in program.tables}
        # forward's graphs side by side (several_graphs.py) keep forward's name for their list
        self.params = [self.names.take(program.op(program.graph).target if program.graphs else "g")]
        if program.graph_params:  # forward(self, g1, g2, x): inference(self, g1, g2, x, ...)
            self.params = [self.names.take(name) for name in program.graph_params]
        self.buffer = {n: self.names.take(program.op(n).target) for n in program.inputs}
        self.params += [self.buffer[n] for n in program.inputs
                        if program.op(n).target not in self.from_graph and program.op(n).target not in self.from_model]
        # the method's parameters in forward's order (forward(self, graph1, feat1, graph2, feat2)),
        # where it takes several graphs; else the graph first, as here
        taken = [program.op(n).target for n in program.inputs
                 if program.op(n).target not in self.from_graph and program.op(n).target not in self.from_model]
        graphs = list(program.graph_params) or ["g"]
        named = list(zip([*graphs, *taken], self.params))
        # forward's dict of features by node type (dict_inputs.py): one parameter, as forward's
        self.dicts = {param: self.names.take(param) for param, _ in program.dict_inputs}
        named = [(n, self.dicts[n] if isinstance(v, dict) else v) for n, v in packed_arguments(named, program.dict_inputs)]
        self.in_forwards_order = in_forwards_order(program, named)
        # forward's None defaults that stand for a table (`h=None`: self.node_emb.weight), kept
        # as parameters of the same name (forward_defaults.py): table input -> parameter
        self.optional = {table: self.names.take(param) for param, table in program.optional}
        self.batch_size, self.device = self.names.take("batch_size"), self.names.take("device")
        self.max_memory, self.progress = self.names.take("max_memory"), self.names.take("progress")
        self.nodes, self.storage = self.names.take("nodes"), self.names.take("storage")
        self.changed, self.keep_layers = self.names.take("changed"), self.names.take("keep_layers")
        self.batches, self.needed = self.names.take("batches"), self.names.take("needed")
        # graphs forward derives from its graph (derived_graphs.py), each with batches of its own
        # (one read only by the next: written inside it, `dgl.add_self_loop(dgl.remove_self_loop(g))`)
        derived = [op for op in program.ops if op.kind == "graph" and op.args]
        iterated = {stage.graph for stage in plan.stages}
        self.nested_graphs = {
            op.name for op in derived
            if op.name not in iterated and len(self.users[op.name]) == 1
            and program.op(self.users[op.name][0]).kind == "graph"
        }
        self.derived = [op for op in derived if op.name not in self.nested_graphs]
        self.graph_name = {program.graph: self.params[0]}
        self.runtimes = {program.graph: self.batches}
        # a heterogeneous graph that forward only reads through its metapaths (metapaths.py):
        # the batches of the first metapath's graph, whose nodes are forward's rows, are the
        # method's own (`batches`)
        # ...or through its relations' graphs (relation_graphs.py), whose nodes are forward's rows too
        self.metapaths = [op for op in self.derived if metapath_of(op) or op.target == RELATION_GRAPH]
        self.over_metapaths = bool(self.metapaths) and all(
            metapath_of(program.op(u)) or program.op(u).target == RELATION_GRAPH for u in self.users[program.graph])
        # likewise forward's graphs side by side (several_graphs.py): the first one's batches
        self.items = [op for op in self.derived if op.target == GRAPH_ITEM]
        if self.items and all(program.op(u).target == GRAPH_ITEM for u in self.users[program.graph]):
            self.metapaths, self.over_metapaths = self.items, True
        # a name the user's line gives the one graph it derives (`sg = ...`), not a line that
        # makes several (`graphs = [dgl.edge_subgraph(g, etype == r) for r in ...]`)
        lines_made = Counter(op.location for op in self.derived)
        for op in self.derived:
            path = metapath_of(op)
            suffix = "_".join(path) if path else DERIVED.get(op.target.rsplit(".", 1)[-1], "derived")
            if op.target == GRAPH_ITEM:  # gs_0, gs_1
                suffix = str(op.args[1])
            if op.target == RELATION_GRAPH:  # g_rur
                suffix = relation_suffix(op.args[1])
            if is_edge_subgraph(op):
                suffix = edge_subgraph_suffix(op, self.buffer)
            own = op.var if op.var and op.var not in self.params and not path and lines_made[op.location] == 1 else ""
            if op.target == GRAPH_ITEM and program.graph_params:  # one of forward's graph parameters
                self.graph_name[op.name] = self.params[op.args[1]]
            else:
                self.graph_name[op.name] = self.names.take(own or f"{self.params[0]}_{suffix}")
            if self.over_metapaths and op is self.metapaths[0]:
                self.runtimes[op.name] = self.batches
            elif op.name in iterated:
                self.runtimes[op.name] = self.names.take(f"{self.batches}_{suffix}")
        self.graph_values = [op for op in program.ops if op.kind == "graph_value"]
        for op in self.graph_values:
            receiver = op.args[0].name if op.args and isinstance(op.args[0], Ref) else program.graph
            of = "" if receiver == program.graph else f"{self.graph_name[receiver]}_"  # rg_in_degrees
            name = op.var or f"{of}{op.target}"
            if op.target == EDGE_WEIGHT_NORM:  # `w = self.norm(g, w)`: w_norm, not w_2
                name = op.var if op.var and op.var not in self.names.taken else f"{op.var or 'edge_weight'}_norm"
            self.buffer[op.name] = self.names.take(name)
        # the name a person gives the running hidden state, unless the model's input has it
        self.hidden = next(n for n in ("h", "hidden", "z", "h_") if n not in self.params)
        # names too generic to tell stored tensors apart: those get h1, h2, ... instead
        self.generic = {"h", "x", "out", "hidden", "feat", "feats", "inputs", "z", "el", "c", *self.params}
        # values computed once for all nodes keep forward's names: `w = ...mean(0)`, and
        # `rownorm_mean = (...).sqrt()` before the line's parts take its name
        self.reduced = {value for stage in plan.stages for _, value in stage.reductions}
        global_values = [n for stage in plan.stages for n in (*(r for r, _ in stage.reductions), *stage.once)]
        # ...unless the layer functions that read them name a parameter so (`block`)
        unfit = self.generic | {"block"}
        for name in global_values:
            op = program.op(name)
            if op.var and op.var not in unfit:
                self.buffer[name] = self.names.take(op.var)
        self._name_buffers()
        for stage in plan.stages:  # reductions over all nodes: `h1_mean`, after what they reduce
            for name, value in stage.reductions:
                if name not in self.buffer:
                    how = program.op(name).target.rsplit(".", 1)[-1]
                    self.buffer[name] = self.names.take(f"{self.buffer[value]}_{how}")
            for name in stage.once:  # and what is computed from them alone: as forward names it,
                if name not in self.buffer:  # or after the reduction it comes from (h1_std_2)
                    op = program.op(name)
                    own = next((n for n in (op.var, op.line_var) if n and n not in unfit), None)
                    made_from = next((self.buffer[r] for r in op.refs() if r in self.buffer), self.hidden)
                    self.buffer[name] = self.names.take(own or (made_from if made_from not in unfit else "value"))
        # what the layer functions read from the method around them: never one of their locals
        # (`h = (h1 - h1_mean) / h` would read the local h before it is assigned)
        self.closure_names = frozenset(self.buffer[n] for stage in plan.stages
                                       for n in (*(r for r, _ in stage.reductions), *stage.once))

    def note_origins(self, lines: list[str], op: Op | None) -> None:
        """The lines appended to `lines` since the last note came from the op noted then; `op`
        is the op whose lines follow (None: plumbing)."""
        start, previous = self._noted.pop(id(lines), (0, None))
        if previous is not None and previous.location:
            self.origins += [(line, previous.location) for line in lines[start:] if not line.startswith("#")]
        if op is not None:  # None ends the list: its id may be another list's later
            self._noted[id(lines)] = (len(lines), op)

    def base_name(self, op: Op) -> str:
        """A local's name: the user's variable for the value, else the variable its line
        assigns, else what computes it."""
        if op.var:
            return op.var
        if op.kind == "module":  # self.skip(x): skip
            last = op.target.rsplit(".", 1)[-1]
            return last if last.isidentifier() else op.class_name.lower()
        if op.kind == "method" and op.args and isinstance(op.args[0], Ref):  # e.flatten(1): e
            receiver = self.program.op(op.args[0].name)
            if receiver.var:
                return receiver.var
        if op.line_var and op.name in self.reduced:  # `x.pow(2).sum(1)` of `rownorm_mean = (...mean()).sqrt()`
            return f"{op.line_var}_terms"
        return op.line_var or self.hidden

    def _name_buffers(self) -> None:
        """Stored tensors take the user's names (forward's results first, so that they keep
        theirs); generic names (h, x, feat) get the stage that writes them: h1, feat2."""
        outputs = self.plan.outputs
        stores = [(stage, name) for stage in self.plan.stages for name in stage.stores]
        stores.sort(key=lambda item: item[1] not in outputs)
        for stage, name in stores:
            op = self.program.op(name)
            own = self.base_name(op)
            if name in outputs and op.var and op.var not in self.params:
                base = op.var
            elif name in outputs:
                base = "out" if len(outputs) == 1 else f"out{outputs.index(name)}"
            elif own not in self.generic and own not in self.names.taken:
                base = own
            else:  # readout1: the part of readout that layer 1 computes
                base = f"{own}{stage.layer}"
            self.buffer[name] = self.names.take(base)

    # -- the method -----------------------------------------------------------------------------
    def method(self) -> str:
        stages = []
        ordered = list(self.plan.stages)
        # the passes over ranges of nodes in each gap between layers, in order (PairNorm's
        # centring, then its scaling after the mean row norm of the centred rows)
        self.gaps: dict[int, list[int]] = {}  # layer before the gap -> positions of its passes
        for position, stage in enumerate(ordered):
            if stage.node_pass:
                self.gaps.setdefault(stage.layer, []).append(position)
        runs: list[tuple[Stage, LayerWriter]] = [
            (stage, LayerWriter(self, stage, self.names.take(self._function_name(stage, position))))
            for position, stage in enumerate(ordered)
        ]
        functions = [writer.write() for _, writer in runs]
        functions, loops = self._fold_loops(runs, functions)
        loop_at = {loop.start: loop for loop in loops}
        folded = {position for loop in loops for position in range(loop.start + 1, loop.end + 1)}
        last_use = self._last_uses(functions)
        # a tensor whose last reader is a reduction (read before its stage's loop) is deleted
        # right after it, not after an earlier stage
        keep, freed_after_reductions = self._callers_tensors(), {}
        for position, (stage, _) in enumerate(runs):
            for _, value in stage.reductions:
                name = self.buffer[value]
                if name not in keep and last_use.get(name, -1) < position:
                    last_use.pop(name, None)
                    freed_after_reductions.setdefault(position, []).append(name)
        # with nodes=...: the stages before the last that reads a reduction over all nodes run
        # for all nodes, the others for the nodes the output needs (_FullNeighbourBatches.needed)
        all_nodes_before = max((position for position, (stage, _) in enumerate(runs) if stage.reductions), default=0)
        for position, ((stage, writer), function) in enumerate(zip(runs, functions)):
            if position in folded:  # written once, with the loop at its run's first layer
                continue
            loop = loop_at.get(position)
            end = loop.end if loop else position
            last = end == len(functions) - 1
            which = None if position < all_nodes_before else f"{self.needed}[{stage.layer}]"
            if loop:  # the loop's last layer's function: the first may name its input otherwise
                function, which, lines = self._loop_lines(loop, runs, functions[loop.end], which)
            else:
                call = self._call(function, self.runtimes.get(stage.graph, self.batches), which)
                targets = [self.buffer[n] for n in stage.stores]
                lines = [f"{', '.join(targets)} = {call}"]
            frees = [name for name, at in last_use.items() if position <= at <= end and not last]
            if frees:
                lines.append(f"del {', '.join(frees)}")
            comment = self._describe(stage, position, runs[end][0])
            before = self._before_loop(stage, writer)
            if position in freed_after_reductions:
                before.append(f"del {', '.join(freed_after_reductions[position])}")
            stages.append({"comment": comment, "function": function, "after": lines, "before": before})
        preamble = self._preamble()  # before the result, which the names it takes may split by type
        before_return, returned = by_type.result(self.program, self._returned(self.program.output), self.type_counts,
                                                 self.names.take)
        return render_template(
            "inference.py.j2",
            params=[*self.in_forwards_order, self.batch_size, self.device, f"{self.max_memory}=2**30", f"{self.progress}=False",
                    f"{self.nodes}=None", f"{self.storage}=None", f"{self.changed}=None", f"{self.keep_layers}=False",
                    *(f"{p}=None" for p in self.optional.values())],
            docstring=self._docstring(),
            preamble=preamble,
            stages=stages,
            before_return=before_return,
            result=returned,
        )

    def _fold_loops(self, runs: list[tuple[Stage, LayerWriter]], functions: list[LayerFunction]):
        """Consecutive layers that are one function of the layer before: their chained tensors
        take one name and their functions are written again (layer_loops.py)."""
        readers = Counter(t for f in functions for t in {*f.src, *f.dst, *f.edges})
        for stage in self.plan.stages:  # values read before a stage's loop count as readers
            for value in (*(v for _, v in stage.reductions), *(r for n in stage.once for r in self.program.op(n).refs())):
                if value in self.buffer:
                    readers[self.buffer[value]] += 2
        callers = self._callers_tensors()
        private = {value for value, name in self.buffer.items() if name not in callers}

        def rewrite() -> list[LayerFunction]:
            self.origins = []
            return [LayerWriter(self, stage, writer.name).write() for stage, writer in runs]

        return fold([stage for stage, _ in runs], functions, self.buffer, private, dict(readers), self.names.take,
                     rewrite)

    def _loop_lines(self, loop: LayerLoop, runs, function: LayerFunction, which: str | None):
        """The loop over a run of identical layers: its function, named for any of them, and
        `for k in range(first, last + 1): h = batches.map(layer_k, source_rows=dict(h=h), ...)`."""
        first, last = runs[loop.start][0].layer, runs[loop.end][0].layer
        counter = self.names.take("k")
        function = replace(function, name=self.names.take("layer_k"))
        if which is not None:
            which = f"{self.needed}[{counter}]"
        else:
            counter = "_"
        call = self._call(function, self.runtimes.get(runs[loop.start][0].graph, self.batches), which)
        targets = ", ".join(self.buffer[v] for v in runs[loop.end][0].stores)
        # a loop variable that starts from a tensor of another name (the caller's x)
        starts = [f"{self.buffer[values[-1]]} = {self.buffer[values[0]]}" for values in loop.chained
                  if self.buffer[values[0]] != self.buffer[values[-1]]]
        return function, which, [*starts, f"for {counter} in range({first}, {last + 1}):", f"    {targets} = {call}"]

    def _preamble(self) -> list[str]:
        g = self.params[0]
        reason = not_distributed(self.program, self.derived)  # DistDGL: distributed.py
        lines = refusal(g, reason) if reason else []
        lines += unpacking_lines(self.program.dict_inputs, {self.program.op(n).target: self.buffer[n]
                                                            for n in self.program.inputs}, self.dicts)
        by_type_lines, self.type_counts = by_type.preamble(self.program, self.buffer, g, self.nodes, self.names.take)
        lines += by_type_lines
        if self.program.homogenized is not None:  # homogenized.py
            if subgraph_types(self.program.homogenized):
                lines += comment(f"the subgraph of one type that forward takes of its heterograph, once: from "
                                 f"here on {g} is that graph, whose nodes are forward's rows")
            else:
                lines += comment(f"forward's heterograph made homogeneous as forward makes it, once: from here on "
                                 f"{g} is that graph, whose nodes (every type's, by type offsets) are forward's rows")
            lines.append(f"{g} = {spelled_conversion(g, self.program.homogenized)}")
            if self.program.homogenized[0] == "node_type_subgraph":  # one relation, as forward was traced for
                lines += [f"if len({g}.canonical_etypes) != 1:",
                          "    raise ValueError(\"forward's layers take a graph of one node and edge type; \"",
                          f"                     f\"{g} has {{{g}.canonical_etypes}}\")"]
        if self.over_metapaths:
            lines += self._derived_graphs()
        else:
            lines += [f"{self.batches} = {self.runtime}(self, {g}, {self.batch_size}, {self.device}, "
                     f"{self.max_memory}, {self.progress}, {self.storage}"
                     f"{incremental.runtime_arguments(self.changed, self.keep_layers)})"]
        if self.items and self.program.decisions:  # graphs side by side: each must agree
            graphs = f"({', '.join(self.params[:self.program.graphs])})" if self.program.graph_params else g
            g = self.names.take("graph")
            lines.append(f"for {g} in {graphs}:  # what forward decided on its graphs, on each")
        for view, key, present in self.program.decisions:  # forward's `"w" in g.edata`
            spelled = f"{g}.{view}[{_spell_key(view, key)}]"
            if view == BATCH_SIZE:  # `graph.batch_size` read as one graph (graph_proxy.py)
                lines += [f"if {g}.batch_size != 1:",
                          f"    raise ValueError(\"generated for one graph, as forward reads {g}.batch_size: \"",
                          f"                     f\"{{{g}.batch_size}} batched in {g}\")"]
            elif present:
                lines += [f"if {_spell_key(view, key)} not in {g}.{view}:",
                          f"    raise ValueError(\"forward reads {_plain(spelled)}, which {g} lacks\")"]
            else:
                lines += [f"if {_spell_key(view, key)} in {g}.{view}:  # forward would read it",
                          f"    raise ValueError(\"generated for graphs without {_plain(spelled)}: "
                          f"regenerate with --feat-dims {key}=WIDTH\")"]
        if self.items and self.program.decisions:
            at = lines.index(next(line for line in lines if line.startswith(f"for {g} in ")))
            lines[at + 1:] = [f"    {line}" for line in lines[at + 1:]]
            g = self.params[0]
        # forward's graphs side by side in a list (several_graphs.py): the rows are their nodes,
        # which the first one has
        rows_of = f"{g}[0]" if self.items and not self.program.graph_params else g
        lines += row_range_checks(self.program.output, rows_of)
        lines += squeeze_checks(self.program.ops, {n: i.rows for n, i in self.attrs.info}, rows_of)  # squeezed_rows.py
        for table, rows in self.attrs.node_tables:  # forward indexes it by node ID (node_count.py)
            lines += [f"if {g}.num_nodes() > {rows}:",
                      f"    raise ValueError(\"forward indexes self.{table} ({rows} rows) by node ID: {g} must \"",
                      f"                     f\"have at most {rows} nodes, one per row, not {{{g}.num_nodes()}}\")"]
        for name in self.program.inputs:
            read = self.from_graph.get(self.program.op(name).target)
            table = self.from_model.get(self.program.op(name).target)
            if read and read[0] in _BLOCK_IDS:
                count, spelled = _BLOCK_IDS[read[0]]
                lines.append(f"# forward's blocks' {spelled}: their IDs in {g}, where inference runs")
                lines.append(f"{self.buffer[name]} = torch.arange({g}.{count}(), device={g}.device)")
            elif read and read[0] == MADE:  # node_counts.py
                lines.append(f"# a row per node of {g}, as forward makes it from {g}'s node count")
                lines.append(f"{self.buffer[name]} = {read[1].replace(GRAPH, g)}")
            elif read:
                lines.append(f"{self.buffer[name]} = {g}.{read[0]}[{_spell_key(*read)}]  # as forward reads it")
            elif table and name in self.plan.outputs:
                # returned as it is: its values, never the parameter itself (which would carry
                # requires_grad to the caller and change with the model)
                lines.append(f"{self.buffer[name]} = {table}.detach()  # a row per node of {g}, as forward reads it")
            elif table and name in self.optional:  # `if h is None: h = self.node_emb.weight`
                given = self.optional[name]
                lines.append(f"{self.buffer[name]} = {table} if {given} is None else {given}  # as forward reads it")
            elif table:
                lines.append(f"{self.buffer[name]} = {table}  # a row per node of {g}, as forward reads it")
        # forward's `if x.size(1) != self.hidden:` (static_decisions.py), with the data read from g
        lines += entry_checks(self.program.static_decisions,
                              {self.program.op(n).target: self.buffer[n] for n in self.program.inputs})
        specs = {spec.name: spec for spec in self.attrs.inputs}
        # an input nothing reads (edge features a layer hands through unused) has the rows the
        # caller gives forward, which accepts any: checking the ones gnn-codegen assumed would
        # refuse forward's own call
        checked = [n for n in self.program.inputs if n not in self.program.unread_inputs()]
        nodes = [f'"{self.buffer[n]}": {self.buffer[n]}' for n in checked if specs[n].rows == "node"]
        edges = [f'"{self.buffer[n]}": {self.buffer[n]}' for n in checked if specs[n].rows == "edge"]
        checks = ([f"nodes={{{', '.join(nodes)}}}"] if nodes else []) + ([f"edges={{{', '.join(edges)}}}"] if edges else [])
        if checks:
            lines.append(f"{self.batches}.check_rows({', '.join(checks)})")
        if not self.over_metapaths:
            lines += self._derived_graphs()
        for graph in self.program.in_degree_checks:  # DGL's own test in a module traced into
            spelled = self.graph_name.get(graph) or self._graph_expression(self.program.op(graph))
            lines += [f"if ({spelled}.in_degrees() == 0).any():  # as forward's own check",
                      f"    raise dgl.DGLError(\"There are 0-in-degree nodes in {_plain(spelled)}, which forward "
                      "refuses: add self-loops\")"]
        for op in self.graph_values:
            receiver = self.graph_name[op.args[0].name] if op.args and isinstance(op.args[0], Ref) else g
            if op.target == EDGE_WEIGHT_NORM:  # sums over every edge of a node (edge_weight_norm.py)
                weights = ", ".join(self.buffer[r] for r in iter_refs(op.args[1:]))
                lines.append("# normalised by sums over every edge of a node: on the whole graph, once")
                lines.append(f"{self.buffer[op.name]} = {op.accessor}({receiver}, {weights})")
            else:
                lines.append(f"{self.buffer[op.name]} = {receiver}.{op.target}()  # of the whole graph, once")
        return lines + self._needed_nodes()

    def _derived_graphs(self) -> list[str]:
        """The graphs forward derives from its graph, each with its batches."""
        lines = []
        for op in self.derived:
            name = self.graph_name[op.name]
            if op.target == GRAPH_ITEM and not self.program.graph_params:
                lines.append(f"# forward's graph {op.args[1]} of {self.params[0]}, with batches of its own")
                lines.append(f"{name} = {self._graph_expression(op)}")
            elif op.target != GRAPH_ITEM:
                lines.append("# as forward derives it from its graph, once for the whole graph")
                lines.append(f"{name} = {self._graph_expression(op)}")
            if op.name in self.runtimes:
                lines.append(f"{self.runtimes[op.name]} = {self.runtime}(self, {name}, {self.batch_size}, "
                             f"{self.device}, {self.max_memory}, {self.progress}, {self.storage}" + (
                                 incremental.runtime_arguments(self.changed, self.keep_layers, derived=True)
                                 if self.runtimes[op.name] == self.batches else "") + ")")
        if self.items and self.over_metapaths:
            gs, first = self.params[0], self.graph_name[self.items[0].name]
            count = self.program.graphs
            lines += comment(f"forward uses {count} graphs side by side, each over the same nodes: forward's rows")
            if self.program.graph_params:
                gs = f"({', '.join(self.params[:count])})"
            else:
                lines += [f"if len({gs}) != {count}:",
                          f"    raise ValueError(f\"generated for forward over {count} graphs side by side; "
                          f"{gs} holds {{len({gs})}}\")"]
            lines += [f"if any(graph.num_nodes() != {first}.num_nodes() for graph in {gs}):",
                      "    raise ValueError(\"the graphs side by side must have the same nodes: \"",
                      f"                     f\"{{[graph.num_nodes() for graph in {gs}]}} nodes\")"]
        elif self.over_metapaths and metapath_of(self.metapaths[0]):
            graphs = [self.graph_name[op.name] for op in self.metapaths]
            spelled = f"({graphs[0]},)" if len(graphs) == 1 else f"({', '.join(graphs)})"
            lines += comment("forward's rows are the nodes of the type where its metapaths start and end")
            lines += [f"if {{t for mg in {spelled} for t in mg.ntypes}} != {{{graphs[0]}.ntypes[0]}}:",
                      "    raise ValueError(\"the metapaths must start and end at one node type, the same for all\")"]
            named = rows_type_of(self.program.dict_inputs)  # forward keyed its features by it (metapath_types.py)
            lines += [f"if {graphs[0]}.ntypes != [{named!r}]:",
                      f"    raise ValueError(\"generated for metapaths of the node type {named}, the key of forward's \"",
                      f"                     f\"features: they start and end at {{{graphs[0]}.ntypes[0]}}\")"] if named else []
        return lines

    def _needed_nodes(self) -> list[str]:
        """The line that works out which nodes each layer computes for `nodes`."""
        lines = []
        if any(self.attrs[n].rows == "edge" for n in self._output_names()):
            lines += [f"if {self.nodes} is not None:",
                      f"    raise ValueError(\"forward returns values per edge: {self.nodes}= selects nodes\")"]
        layers = [next(self.runtimes.get(s.graph, self.batches) for s in self.plan.stages
                       if not s.node_pass and s.layer == k) for k in range(1, self.plan.num_layers + 1)]
        spelled = f"{len(layers)}" if set(layers) <= {self.batches} else f"[{', '.join(layers)}]"
        lines += comment(f"the nodes whose rows each layer computes: all of them; for {self.nodes}= those, and "
                         "before each layer the in-neighbours of the nodes the layer computes; for "
                         f"{self.changed}= those, and after each layer their out-neighbours")
        lines.append(f"{self.needed} = {self.batches}.needed({self.nodes}, layers={spelled})")
        return lines

    def _output_names(self) -> list[str]:
        """forward's results, in the order it returns them."""
        return list(iter_refs(self.program.output))

    def _graph_expression(self, op: Op) -> str:
        """`dgl.add_self_loop(g)`: a derived graph's call, on its receiver's name or call."""
        receiver = self.program.op(op.args[0].name)
        spelled = self._graph_expression(receiver) if receiver.name in self.nested_graphs else self.graph_name[receiver.name]
        if op.target == GRAPH_ITEM:  # gs[0], one of forward's graphs side by side
            return f"{spelled}[{op.args[1]}]"
        if op.target == RELATION_GRAPH:
            return relation_spelled(spelled, op.args[1])
        extra = graph_arguments(op, self.buffer.__getitem__)  # on the inputs' names here
        return f"{op.target}({', '.join([spelled, *extra])})"

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
            where = self.plan.stage_name(stage)  # layer 2, the pass after the last layer
            where = where if where.startswith("layer ") else f"the {where}"
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

    def _callers_tensors(self) -> set[str]:
        """forward's inputs and results: the caller's, never deleted."""
        return set(self.params) | {self.buffer[n] for n in (*self.program.inputs, *self.plan.outputs)}

    def _last_uses(self, functions: list[LayerFunction]) -> dict[str, int]:
        """Stored tensors and graph values -> the stage position after which nothing reads
        them (never forward's inputs nor its results, which are the caller's)."""
        keep = self._callers_tensors()
        last: dict[str, int] = {}
        for position, function in enumerate(functions):
            for tensor in (*function.src, *function.dst, *function.edges):
                if tensor not in keep:
                    last[tensor] = position
        return last

    def _returned(self, value: Any) -> str:
        """What inference returns: forward's results, each with a row per node or edge through
        the runtime's `result` (its rows for `nodes`, its file out of core)."""
        with_rows = [n for n in self._output_names() if self.attrs[n].rows in ("node", "edge")]
        files = iter(range(len(with_rows)))  # out of core, each in a file of its own

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
            return f"{self.batches}.result({', '.join(args)})"

        return spell(value)

    def _pass_number(self, stage: Stage, position: int) -> tuple[int, int]:
        """(which, of how many) passes over ranges of nodes in the stage's gap between layers."""
        gap = self.gaps.get(stage.layer, [position])
        return gap.index(position) + 1, len(gap)

    def _function_name(self, stage: Stage, position: int) -> str:
        if stage.node_pass:
            which, _ = self._pass_number(stage, position)
            name = f"before_layer_{stage.layer + 1}" if stage.layer < self.plan.num_layers else "after_last_layer"
            return name if which == 1 else f"{name}_pass_{which}"
        return "prologue" if stage.index == 0 else f"layer_{stage.layer}"

    def _describe(self, stage: Stage, position: int, last: Stage | None = None) -> list[str]:
        ops = [self.program.op(p.name) for p in stage.ops]
        if stage.node_pass:
            which, count = self._pass_number(stage, position)
            if which > 1:
                where = f"layer {stage.layer + 1}" if stage.layer < self.plan.num_layers else "the last layer"
                return comment(f"{'Before' if stage.layer < self.plan.num_layers else 'After'} {where}, pass "
                               f"{which} of {count}, once per node, from what the pass before it stored.")
            if stage.layer < self.plan.num_layers:
                return comment(f"Before layer {stage.layer + 1}, once per node, from what layer {stage.layer} stored.")
            return comment("After the last layer, once per node, from what the layers stored.")
        if stage.index == 0:
            what = ", ".join(f"{op.accessor} ({op.class_name})" for op in ops if op.kind == "module" or op.helper)
            when = "Before the first layer, once" if self.plan.num_layers else "Once"  # none: an MLP's forward
            return comment(f"{when} per node: {what or 'work on the inputs'}.")
        convs = ", ".join(f"{op.accessor} ({op.class_name})" for op in ops if op.kind == "mp")
        # on a graph forward derives (dgl.add_self_loop, an edge subgraph): say which
        on = f", on {self.graph_name[stage.graph]}" if stage.graph and stage.graph != self.program.graph else ""
        if last is not None and last is not stage:  # a loop over identical layers (layer_loops.py)
            return comment(f"Layers {stage.layer} to {last.layer} of {self.plan.num_layers}, each the same function "
                           f"of the layer before: {convs}{on}.")
        return comment(f"Layer {stage.layer} of {self.plan.num_layers}: {convs}{on}.")

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
        second = (
            f"The model must be on `{self.device}` (model.to(device)), where every layer runs; {g} and the "
            f"inputs may be on the host or on `{self.device}`: one batch's block and rows at a time are "
            "moved there (the rows a layer reads only in messages at once, where they take at most half "
            "its free memory). Each layer's result, and the one returned, is kept for every node on the "
            f"host (in pinned memory if `{self.device}` is a GPU). {self.batch_size}=\"auto\": per layer, "
            f"the largest batches whose rows fit in {self.max_memory} bytes on `{self.device}`. "
            f"{self.progress}: a tqdm bar per layer."
        )
        returns = (" with a row per node" if any(self.attrs[n].rows == "node" for n in self._output_names())
                   else "")
        third = (
            f"{self.nodes}: a 1-D tensor of node IDs, for forward's rows of those nodes alone, in that "
            "order: each layer computes only the rows that the layers after it read (all rows, from "
            f"where that is most of the graph). {self.storage}: a directory where the layers' results "
            f"and the ones returned{returns} are kept in .npy files (memory-mapped), not in memory, which "
            "then holds about a batch's rows; the files returned (result.npy) stay there, the others "
            "are deleted once read."
        )
        paragraphs = [first, second, third, incremental.paragraph(self.changed, self.keep_layers, self.storage,
                                                                  self.nodes, g)]
        if not not_distributed(p, self.derived):
            paragraphs.append(paragraph(g, [self.buffer[n] for n in p.inputs], self.nodes, self.storage))
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
        return [line for i, text in enumerate(paragraphs) for line in ([""] if i else []) + textwrap.wrap(text, 88)]

    def default_helper_names(self) -> bool:
        """The runtime and the helpers have the names the templates are formatted for."""
        return (self.runtime == RUNTIME and self.dist_runtime == DIST_RUNTIME and self.block_as_graph == BLOCK_AS_GRAPH
                and all(name == f"_{section}" for section, name in self.helper_names.items()))

    def helpers(self, version: str, runtime_module: str | None = None) -> str:
        block_as_graph = self.block_as_graph if self.uses_block_as_graph else ""
        if runtime_module:  # the runtime is imported: the module's own helpers alone
            return model_helpers(self.sections, self.helper_names, block_as_graph)
        return render_helpers(self.runtime, self.sections, self.helper_names, version, block_as_graph,
                              self.dist_runtime)


def render_helpers(runtime: str, sections: set[str], names: dict[str, str], version: str,
                   block_as_graph: str = "", dist_runtime: str = DIST_RUNTIME) -> str:
    """What the module adds after the class: the helpers its layers call (the written-out
    convolutions' sections, `block_as_graph` where the code calls it: block_as_graph.py), then
    the runtime under its banner (runtime_section.py), one text in every module."""
    return runtime_helpers(model_helpers(sections, names, block_as_graph), version, runtime,
                           render_template("batches.py.j2", runtime=runtime, dist_runtime=dist_runtime))


def _spell_key(view: str, key: str) -> str:
    """A graph data key as the user's code writes it: `dgl.ETYPE` for DGL's reserved names (NID
    and EID are the same string: the view tells which)."""
    import dgl

    for constant in ("ETYPE", "EID") if view == "edata" else ("NTYPE", "NID"):
        if key == getattr(dgl, constant):
            return f"dgl.{constant}"
    return json.dumps(key)


def _plain(spelled: str) -> str:
    """A key written inside a double-quoted message: its quotes single."""
    return spelled.replace('"', "'")


def _globals_read(program: Program) -> set[str]:
    """The module-level names the generated method reads: torch, dgl, self, and the first name
    of every function the user's forward calls (F in F.relu, a helper of the user's file)."""
    names = {"torch", "dgl", "self"}
    for op in program.ops:
        if op.mp is not None and op.mp.inline:
            names.add(op.mp.functions.split(".")[0])
        if op.kind == "function" and not op.helper and op.target != "getattr" and not op.target.startswith("operator."):
            names.add(op.target.split(".")[0])
    return names


def _check_no_capture(method: str, reserved: set[str]) -> None:
    """A safety net for the name allocation: no name the method assigns is a module-level name
    it reads (a local would capture it)."""
    tree = ast.parse(method)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    assigned |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in (*n.args, *n.kwonlyargs)}
    captured = assigned & (reserved - {"self"})
    if captured:
        raise internal(f"generated names {sorted(captured)} would capture module-level names")


def render(program: Program, attrs: Attributes, plan: Plan, module_names: set[str],
           header: dict[str, Any]) -> Rendered:
    r = Renderer(program, attrs, plan, module_names)
    method = r.method()
    _check_no_capture(method, r.reserved)
    imports, check = (imported(header["runtime_module"], RUNTIME, r.runtime, module_names | r.reserved, header["version"])
                      if header.get("runtime_module") else ((), ""))
    return Rendered(
        header=render_template("header.py.j2", **header),
        helpers=r.helpers(header["version"], header.get("runtime_module")),
        method=method,
        buffers=tuple(r.buffer.items()),
        origins=tuple(r.origins),
        helpers_formatted=r.default_helper_names(),
        imports=imports,
        after_imports=check,
    )


"""Stage 6, render: the Plan into Python source through the Jinja templates in templates/. This
module decides the method's names and lines (render_layer.py each stage's function); the
templates only print them. The generated `inference` is a short sequence of layers, each a
function of one batch (the user's forward for that layer) handed to the runtime's `map`, which
owns the mechanism: batches, blocks, moving rows to the device, buffers on the host."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.trace.graph_lineage import DERIVED
from gnn_codegen.lower.edge_masks import is_edge_subgraph, suffix as edge_subgraph_suffix
from gnn_codegen.trace.edge_weight_norm import EDGE_WEIGHT_NORM
from gnn_codegen.ir import Op, Program, Ref, iter_refs
from gnn_codegen.trace.metapaths import metapath_of
from gnn_codegen.trace.dict_inputs import packed_arguments
from gnn_codegen.trace.relation_graphs import RELATION_GRAPH, suffix as relation_suffix
from gnn_codegen.trace.several_graphs import GRAPH_ITEM, in_forwards_order
from gnn_codegen.names import NameAllocator
from gnn_codegen.cut.plan import Plan, Stage, inline_ops
from gnn_codegen.render.in_eval import NEITHER
from gnn_codegen.render.layer import LayerWriter
from gnn_codegen.render import type_offsets as by_type
from gnn_codegen.render.runtime_module import DIST_RUNTIME, RUNTIME, imported
from gnn_codegen.render.helpers_section import model_helpers, render_helpers, under_banner
from gnn_codegen.render.templating import render_template
from gnn_codegen.render.stored_names import source_only
from gnn_codegen.render.user_layers import parts
from gnn_codegen.render.graph_lists import GraphList, graph_lists
from gnn_codegen.render.graph_pass_loops import fold_graph_passes
from gnn_codegen.render.graph_layer_loops import fold_graph_layers
from gnn_codegen.render.graph_rows import grouped, listed_rows, returning_lists
from gnn_codegen.render.buffer_names import BufferNames
from gnn_codegen.trace.write_out import SECTIONS, sections_needed
from gnn_codegen.render.layer_calls import LayerCalls
from gnn_codegen.render.period_calls import period_stages
from gnn_codegen.render.captures import check_no_capture, globals_read
from gnn_codegen.render.method_constants import method_constants
from gnn_codegen.render.normed_twice import said_twice
from gnn_codegen.render.activation_test import unset_said
from gnn_codegen.render.method_doc import MethodDocstring
from gnn_codegen.render.module_functions import fold_module_calls
from gnn_codegen.render.round_loops import fold_rounds
from gnn_codegen.render.state_starts import with_states_started
from gnn_codegen.render.value_names import bound, uncounted
from gnn_codegen.render.preamble import Preamble

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


class Renderer(BufferNames, LayerCalls, Preamble, MethodDocstring):
    def __init__(self, program: Program, attrs: Attributes, plan: Plan, module_names: set[str],
                 runtime_module: str | None = None, built: str | None = None, in_eval: tuple[str, ...] = NEITHER):
        self.program, self.attrs, self.plan = program, attrs, plan
        # how the model traced was built (built.py), what eval() changes in it (in_eval.py), the
        # module the runtime is imported from (--runtime-module)
        self.built, self.in_eval, self.runtime_module = built, in_eval, runtime_module
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
        self.reserved = globals_read(program) | {self.runtime, self.dist_runtime, self.block_as_graph, *self.helper_names.values()}
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
        self.layer_count: str | None = None  # one loop over every layer: its count (layer_calls.py)
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
        batches = self.batches  # each derived graph's batches: `batches_pf_fp`
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
                # where the other graphs have batches of their own, these are named for their
                # graph as those are (`batches_pa_ap` beside `batches_pf_fp`)
                if any(other.name in iterated for other in self.derived if other is not op):
                    self.batches = self.names.take(f"{batches}_{suffix}")
                self.runtimes[op.name] = self.batches
            elif op.name in iterated:
                self.runtimes[op.name] = self.names.take(f"{batches}_{suffix}")
        # graphs forward derives in a loop, one per value of its variable: one list, each with
        # its batches in a list beside it (graph_lists.py); a graph's own name (for the rows
        # sent on it, `feat0_etype_1`) stays its name in plain_graph_name
        self.plain_graph_name = dict(self.graph_name)
        self.graph_lists = [] if self.over_metapaths else graph_lists(program, self.derived, iterated)
        self.listed_graphs: dict[str, tuple[GraphList, str, str]] = {}  # op -> (list, graphs, batches)
        for listed in self.graph_lists:
            # forward's name for its list where it makes one (`subgraphs = [... for r in ...]`)
            own = listed.var if listed.loop.comprehension else ""
            graphs = self.names.take(own or "graphs")
            batches_list = self.names.take(f"{graphs.removesuffix('s') if graphs.endswith('s') else graphs}_batches")
            for j, name in enumerate(listed.ops):
                self.graph_name[name], self.runtimes[name] = f"{graphs}[{j}]", f"{batches_list}[{j}]"
                self.listed_graphs[name] = (listed, graphs, batches_list)
        self.graph_values = [op for op in program.ops if op.kind == "graph_value"]
        for op in self.graph_values:
            receiver = op.args[0].name if op.args and isinstance(op.args[0], Ref) else program.graph
            of = "" if receiver == program.graph else f"{self.plain_graph_name[receiver]}_"  # rg_in_degrees
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
        # layers that are the parts of one user's layer, each on its own graph (user_layers.py)
        self.parts = parts(program, list(plan.stages))
        # ...whose values over all nodes are numbered for that layer, `importance1`, not `_2`
        layer_of: dict[str, int | None] = {}
        for stage in plan.stages:
            for name, value in stage.reductions:
                layer_of[name] = self._users_layer_writing(value)
            for name in stage.once:
                layer_of[name] = next((layer_of[r] for r in program.op(name).refs() if layer_of.get(r) is not None),
                                      None)
        for name in global_values:
            op = program.op(name)
            if op.var and op.var not in unfit:
                layer = layer_of.get(name)
                self.buffer[name] = self.names.take(op.var if layer is None else f"{op.var}{layer}")
        self.sources = source_only(plan)  # stored values sent to neighbours only
        self._name_buffers()
        # rows a pass stores for every graph of a list: one list, `feat1[j]` (graph_rows.py)
        self.row_lists = listed_rows(self)
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
        # constants of numbers alone a library line names (ChebConv's re_norm): once, before
        # their first reader (method_constants.py)
        self.method_constants = method_constants(program, self.inline, plan.stages, self.names.take)
        self.closure_names = frozenset(self.buffer[n] for stage in plan.stages
                                       for n in (*(r for r, _ in stage.reductions), *stage.once)
                                       ) | frozenset(self.method_constants.named.values())

    def note_origins(self, lines: list[str], op: Op | None) -> None:
        """The lines appended to `lines` since the last note came from the op noted then; `op`
        is the op whose lines follow (None: plumbing)."""
        start, previous = self._noted.pop(id(lines), (0, None))
        if previous is not None and previous.location:
            self.origins += [(line, previous.location) for line in lines[start:] if not line.startswith("#")]
        if op is not None:  # None ends the list: its id may be another list's later
            self._noted[id(lines)] = (len(lines), op)

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
        functions = returning_lists(self.row_lists, [stage for stage, _ in runs], functions)
        self.loop_starts = {loop.start for loop in loops}  # for render(): state_starts.py
        # what in_place=True means is said at its first call (layer_calls._in_place_comment)
        self.in_place_said, self.some_in_place = False, any(f.in_place for f in functions)
        loop_at = {loop.start: loop for loop in loops}
        folded = {position for loop in loops for position in range(loop.start + 1, loop.end + 1)}
        last_use = self._last_uses(functions)
        # a constant first read in a loop's layer: computed before the loop
        constants_before: dict[int, list[str]] = {}
        for position, lines in self.method_constants.lines.items():
            start = next((loop.start for loop in (*loops, *self.period_loops) if loop.start <= position <= loop.end),
                         position)
            constants_before.setdefault(start, []).extend(lines)
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
            period = next((loop for loop in self.period_loops if loop.start <= position <= loop.end), None)
            if period is not None:  # user layers of several passes each: one loop (period_loops.py)
                if position == period.start:
                    in_rounds = {name for names in period.frees for name in names}
                    after = [name for name, at in last_use.items()
                             if period.start <= at <= period.end and name not in in_rounds]
                    looped = period_stages(self, period, runs, all_nodes_before, after,
                                           period.end == len(functions) - 1)
                    constants = constants_before.get(position, [])
                    looped[0]["before"] = [*constants, ""] if constants else []  # apart from the loop's comment
                    stages.extend(looped)
                continue
            loop = loop_at.get(position)
            end = loop.end if loop else position
            last = end == len(functions) - 1
            which = None if position < all_nodes_before else f"{self.needed}[{stage.layer}]"
            opening: list[str] = []  # the loop's header, where its function is made in it
            if loop:  # the loop's last layer's function: the first may name its input otherwise
                function, which, opening, lines = self._loop_lines(loop, runs, functions[loop.end], which)
            else:
                call = self._call(function, self.runtimes.get(stage.graph, self.batches), which)
                targets = grouped(stage.stores, self.row_lists.get(stage.index, []), self.buffer)
                lines = [*self._in_place_comment(function), f"{', '.join(targets)} = {call}"]
            if position == all_nodes_before > 0:
                lines = [*self._nodes_from_here(runs[:position + 1]), *lines]
            frees = [name for name, at in last_use.items() if position <= at <= end and not last]
            if frees:
                lines.append(f"del {', '.join(frees)}")
            comment = self._describe(stage, position, runs[end][0], loop.counter if loop and loop.indexed else "")
            before = [*constants_before.get(position, []), *self._before_loop(stage, writer)]
            if position in freed_after_reductions:
                before.append(f"del {', '.join(freed_after_reductions[position])}")
            function = replace(function, body=said_twice(function.body))  # `h * norm` after `h = h * norm`
            if not loop:  # a module's function attribute left None (its activation): said where it ends
                function = replace(function, body=unset_said(function.body, self._finished(stage),
                                                             self.program.unset_functions))
            stages.append({"comment": comment, "function": function, "after": lines, "before": before,
                           "opening": opening, "pad": "    " if opening else "", "position": position})
        stages = fold_module_calls(self, stages, runs, all_nodes_before)  # one local function per module
        # passes over a list's graphs (in a loop over the layers); then rounds of a layer and
        # passes over all nodes: loops (issue 37)
        stages = fold_rounds(self, fold_graph_passes(self, fold_graph_layers(self, stages, runs), runs), runs)
        stored = {self.buffer[v] for stage in self.plan.stages for v in stage.stores}
        # col_mean, not col_mean_2, where it may; a library line's constant keeps a name per value
        constants = {name for lines in self.method_constants.lines.values() for line in lines for name in bound(line)}
        uncounted(stages, stored | self._callers_tensors() | constants)
        preamble = self._preamble()  # before the result, which the names it takes may split by type
        results, spelled = self._returned(self.program.output)
        before_return, returned = by_type.result(self.program, spelled, self.type_counts, self.names.take)
        before_return = results + before_return
        return render_template(
            "inference.py.j2",
            params=[*self.in_forwards_order, self.batch_size, self.device, f"{self.max_memory}=2**30", f"{self.progress}=False",
                    f"{self.nodes}=None", f"{self.storage}=None", f"{self.changed}=None", f"{self.keep_layers}=False",
                    *(f"{p}=None" for p in self.optional.values())],
            docstring=self._docstring(),
            preamble=preamble,
            stages=stages,
            before_return=before_return,
            result=returned, in_eval=self.in_eval,
        )

    def _finished(self, stage: Stage) -> list[str]:
        """The modules whose forward the stage finishes: their last hop's, or their one pass."""
        ops = [self.program.op(placed.name) for placed in stage.ops]
        return [op.mp.within.rpartition(" (")[0] for op in ops
                if op.kind == "mp" and op.mp is not None and op.mp.within and op.mp.hop == op.mp.hops]

    def _output_names(self) -> list[str]:  # forward's results, in the order it returns them
        return list(iter_refs(self.program.output))

    def default_helper_names(self) -> bool:
        """The runtime and the helpers have the names the templates are formatted for."""
        return (self.runtime == RUNTIME and self.dist_runtime == DIST_RUNTIME and self.block_as_graph == BLOCK_AS_GRAPH
                and all(name == f"_{section}" for section, name in self.helper_names.items()))

    def helpers(self, version: str, runtime_module: str | None = None) -> str:
        block_as_graph = self.block_as_graph if self.uses_block_as_graph else ""
        if runtime_module:  # the runtime is imported: the module's helpers alone, under their banner
            return under_banner(model_helpers(self.sections, self.helper_names, block_as_graph), version,
                           runtime_follows=False)
        return render_helpers(self.runtime, self.sections, self.helper_names, version, block_as_graph,
                              self.dist_runtime)


def render(program: Program, attrs: Attributes, plan: Plan, module_names: set[str],
           header: dict[str, Any]) -> Rendered:
    said = (header.get("runtime_module"), header.get("built"), header.get("in_eval", NEITHER))
    r = Renderer(program, attrs, plan, module_names, *said)
    r, method = with_states_started(program, attrs, plan, r, r.method(),
                                    lambda *parts: Renderer(*parts, module_names, *said))  # GeniePath's zeros
    check_no_capture(method, r.reserved)
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

"""Stage 6, render, the preamble of `inference`: the lines before the first layer (the
graphs forward derives, the nodes the layers need, the inputs' rows)."""

from __future__ import annotations

import json

from gnn_codegen.render.distributed import not_distributed, refusal
from gnn_codegen.lower.edge_masks import graph_arguments
from gnn_codegen.trace.edge_weight_norm import EDGE_WEIGHT_NORM
from gnn_codegen.trace.graph_data import BLOCK_EDGE_IDS, BLOCK_NODE_IDS
from gnn_codegen.trace.homogenized import spelled_conversion, subgraph_types
from gnn_codegen.trace.node_counts import GRAPH, MADE
from gnn_codegen.trace.graph_proxy import BATCH_SIZE
from gnn_codegen.ir import Op, Ref, iter_refs
from gnn_codegen.trace.metapaths import metapath_of
from gnn_codegen.trace.dict_inputs import unpacking_lines
from gnn_codegen.trace.metapath_types import rows_type_of
from gnn_codegen.trace.relation_graphs import RELATION_GRAPH
from gnn_codegen.trace.relation_graphs import spelled as relation_spelled
from gnn_codegen.trace.several_graphs import GRAPH_ITEM
from gnn_codegen.render.assumptions import entry_checks
from gnn_codegen.lower.row_ranges import entry_checks as row_range_checks
from gnn_codegen.render.squeezed_rows import homogeneous_checks as squeeze_checks
from gnn_codegen.render.code import comment
from gnn_codegen.render.built import check_line
from gnn_codegen.render.quoted_lines import raised
from gnn_codegen.render import incremental
from gnn_codegen.render import type_offsets as by_type
from gnn_codegen.render.graph_lists import renamed as _renamed, spelled_layers
from gnn_codegen.render.module_index import every_hop, spelled_hops


# a block's IDs (graph_data.BLOCK_NODE_IDS): what counts them in g, and how forward reads them
_BLOCK_IDS = {BLOCK_NODE_IDS: ("num_nodes", "srcdata[dgl.NID]"), BLOCK_EDGE_IDS: ("num_edges", "edata[dgl.EID]")}


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


class Preamble:
    """The lines of `inference` before its first layer (a part of render's Renderer)."""

    def _preamble(self) -> list[str]:
        g = self.params[0]
        lines = check_line(self.runtime, self.built) if self.built else []  # built.py
        reason = not_distributed(self.program, self.derived)  # DistDGL: distributed.py
        lines += refusal(g, reason) if reason else []
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
            lines += [f"{self.batches} = {self._runtime_call(g)}"
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
        written: set[str] = set()
        for graph in self.program.in_degree_checks:  # DGL's own test in a module traced into
            spelled = self.graph_name.get(graph) or self._graph_expression(self.program.op(graph))
            # the in-degrees forward reads anyway, computed before the test and tested: once
            degrees = next((op for op in self.graph_values if op.target == "in_degrees" and op.args
                            and op.args[0] == Ref(graph)), None)
            if degrees is not None:
                lines += self._graph_value(degrees, g)
                written.add(degrees.name)
            tested = self.buffer[degrees.name] if degrees is not None else f"{spelled}.in_degrees()"
            lines += [f"if ({tested} == 0).any():  # as forward's own check",
                      f"    raise dgl.DGLError(\"There are 0-in-degree nodes in {_plain(spelled)}, which forward "
                      "refuses: add self-loops\")"]
        for op in self.graph_values:
            if op.name not in written:
                lines += self._graph_value(op, g)
        return lines + self._needed_nodes()

    def _graph_value(self, op: Op, g: str) -> list[str]:
        """The line that computes a value of a whole graph (`in_degrees = g.in_degrees()`)."""
        receiver = self.graph_name[op.args[0].name] if op.args and isinstance(op.args[0], Ref) else g
        if op.target == EDGE_WEIGHT_NORM:  # sums over every edge of a node (edge_weight_norm.py)
            weights = ", ".join(self.buffer[r] for r in iter_refs(op.args[1:]))
            return ["# normalised by sums over every edge of a node: on the whole graph, once",
                    f"{self.buffer[op.name]} = {op.accessor}({receiver}, {weights})"]
        return [f"{self.buffer[op.name]} = {receiver}.{op.target}()  # of the whole graph, once"]

    def _runtime_call(self, g: str) -> str:
        return incremental.runtime_call(self.runtime, g, self.batch_size, self.device, self.max_memory,
                                        self.progress, self.storage)

    def _derived_graphs(self) -> list[str]:
        """The graphs forward derives from its graph, each with its batches."""
        lines = []
        for op in self.derived:
            if op.name in self.listed_graphs:  # made in forward's loop: all of them at its first
                lines += self._graph_list(op.name)
                continue
            name = self.graph_name[op.name]
            if op.target == GRAPH_ITEM and not self.program.graph_params:
                lines.append(f"# forward's graph {op.args[1]} of {self.params[0]}, with batches of its own")
                lines.append(f"{name} = {self._graph_expression(op)}")
            elif op.target != GRAPH_ITEM:
                lines.append("# as forward derives it from its graph, once for the whole graph")
                lines.append(f"{name} = {self._graph_expression(op)}")
            if op.name in self.runtimes and self.runtimes[op.name] == self.batches:  # forward's rows' graph
                lines.append(f"{self.batches} = {self._runtime_call(name)}"
                             f"{incremental.runtime_arguments(self.changed, self.keep_layers, derived=True)})")
            elif op.name in self.runtimes:  # with the method's batches' parameters, from them
                lines.append(f"{self.runtimes[op.name]} = {self.batches}.over({name})")
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

    def _graph_list(self, name: str) -> list[str]:
        """The graphs forward derives in its loop, as it does, and their batches, at the first
        of them (graph_lists.py)."""
        listed, graphs, batches_list = self.listed_graphs[name]
        if name != listed.ops[0]:
            return []
        loop = listed.loop
        var, each = self.names.take(loop.var), self.names.take(graphs.removesuffix("s") if graphs.endswith("s") else "graph")
        template = listed.template if var == loop.var else _renamed(listed.template, loop.var, var)
        how = "in its comprehension" if loop.comprehension else "in its loop"
        return [*comment(f"as forward derives them from its graph {how} over {loop.var}, once for the "
                         "whole graph, each with its batches"),
                f"{graphs} = [{self._graph_expression(template)} for {var} in range({loop.spelled})]",
                f"{batches_list} = [{self.batches}.over({each}) for {each} in {graphs}]"]

    def _needed_nodes(self) -> list[str]:
        """The line that works out which nodes each layer computes for `nodes`."""
        lines = []
        refused = any(self.attrs[n].rows == "edge" for n in self._output_names())
        if refused:
            message = (f"{self.nodes}= is not taken: it selects nodes, and forward also returns values per "
                       f"edge; call it without {self.nodes}= and index the result")
            lines += raised(f"{self.nodes} is not None", message)
        layers = [next(self.runtimes.get(s.graph, self.batches) for s in self.plan.stages
                       if not s.node_pass and s.layer == k) for k in range(1, self.plan.num_layers + 1)]
        lengths = {batches_list: len(listed.ops) for listed, _, batches_list in self.listed_graphs.values()}
        spelled = f"{len(layers)}" if set(layers) <= {self.batches} else spelled_layers(layers, lengths)
        # a loop over the user's layers around one over a list's graphs (graph_layer_loops.py)
        spelled = getattr(self, "rounds_spelled", {}).get(spelled, spelled)
        # every layer a hop of one module: as many as it holds (`self.propagate._k`), not `10`
        passes = [s for s in self.plan.stages if not s.node_pass and s.layer >= 1]
        if set(layers) <= {self.batches} and passes and every_hop(self.program, passes):
            spelled = spelled_hops(self.program, passes, len(passes)) or spelled
        elif set(layers) <= {self.batches} and self.layer_count:  # one loop over them: `len(self.layers)`
            spelled = self.layer_count
        # nodes= refused just above: the comment says only what runs
        subset = "" if refused else (f"; for {self.nodes}= those, and before each layer the in-neighbours of the "
                                     "nodes the layer computes")
        lines += comment(f"the nodes whose rows each layer computes: all of them{subset}; for {self.changed}= "
                         "those, and after each layer their out-neighbours")
        lines.append(f"{self.needed} = {self.batches}.needed({self.nodes}, layers={spelled})")
        return lines

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

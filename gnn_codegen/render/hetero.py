"""Write a HeteroPlan out as the `inference` method: the values of the weights alone first,
then per stage one function of a batch of one destination type, and a loop over the types that
runs it. Where the function is the same for every type but for the type's name, it is written
once with `ntype` for the name (the usual case: forward's dict comprehensions apply the same
ops to every type); otherwise once per type."""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

import torch.fx as fx

from gnn_codegen.render.type_index import shared_by_index
from gnn_codegen.render.dict_comprehension import comprehension, whole_mapping
from gnn_codegen.render.distributed import refusal
from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.render.hetero_distributed import hetero_not_distributed
from gnn_codegen.render.hetero_expressions import ExpressionWriter, accessor
from gnn_codegen.cut.hetero import HeteroPlan, nodes_in, result_type
from gnn_codegen.trace.hetero import calls_own_layer
from gnn_codegen.trace.hetero_tracer import hetero_conv
from gnn_codegen.lower.spelling import locations
from gnn_codegen.render.map_bindings import map_bindings
from gnn_codegen.render.built import check_line
from gnn_codegen.render.runtime_module import HETERO_RUNTIME as RUNTIME
from gnn_codegen.render.squeezed_rows import hetero_checks as squeeze_checks, squeezes_every_axis, squeezes_first_axis
from gnn_codegen.render.hetero_docstring import _and, _describe_conv, _docstring
from gnn_codegen.render.hetero_loops import fold_layers
from gnn_codegen.render.hetero_loop_types import spelled_as_forward
from gnn_codegen.render import forward_args, hetero_incremental as incremental
from gnn_codegen.render.per_layer_values import values_of_weights
from gnn_codegen.render.hetero_layer import HeteroLayerFunction, _reads_full_degrees, without_unused_type
from gnn_codegen.render.incremental import runtime_arguments, runtime_call

_MOD_KWARGS = re.compile(r"mod_kwargs\s*=\s*([A-Za-z_]\w*)")
_MOD_ARGS = re.compile(r"mod_args\s*=\s*([A-Za-z_]\w*)")


class HeteroRenderer(HeteroLayerFunction, ExpressionWriter):
    def __init__(self, plan: HeteroPlan, namespace: dict[str, Any], reserved: set[str]):
        super().__init__(plan, namespace, reserved)
        # (HeteroGraphConv, 4 or 5 for mod_args or mod_kwargs, the dict's code) -> its name
        self.arguments: dict[tuple[Any, int, str], str] = {}
        self.group_names: set[str] = set()  # the dicts of stored values, by node type
        self.literals: dict[str, str] = {}  # a dict of features forward builds -> its name
        self.emitted: set[str] = set()  # the literals written out so far
        # a table in such a dict -> (the dict's name, its type): its destination rows' name
        self.table_rows: dict[fx.Node, tuple[str, str]] = {}
        self.once_lines: list[str] = []
        self.table_names: set[str] = set()  # once_lines' dicts of a row per node, by type
        self.count_lines: list[str] = []  # the full graph's counts forward reads, once
        # the runtime's optional sections the method calls (hetero/generate.py)
        self.sections: set[str] = set()
        # each relation's work on its source rows, once per node before a layer's loop
        # (map_sources): (stage, HeteroGraphConv's path, its input dict) -> the dict's name
        self.relation_sources: dict[tuple[int, str, str], str] = {}
        # such a key -> the name of the weights per relation its call is given (mod_kwargs=wdict)
        self.relation_weights: dict[tuple[int, str, str], str] = {}
        self.conv_dst: dict[fx.Node, str] = {}  # such a call -> its destination rows' parameter
        # what --explain tells of each stage: (stage, what it runs, [(type, the dicts of
        # stored rows it writes, whether its relations' rows are made once per node first)])
        self.layout: list[tuple[int, str, list[tuple[str, list[str], bool]]]] = []
        self.outputs: dict[int, list[str]] = {}  # the dicts of rows each stage stores
        # the dicts read from the graph keep their names
        self.names.taken.update(name for name, _ in plan.traced.graph_data)
        self.names.taken.update(name for name, _, _ in plan.traced.edge_data)

    def method(self, header: dict[str, Any]) -> str:
        plan, traced = self.plan, self.traced
        self.schema_relations = [tuple(r) for r in header["relations"]]
        graph = traced.graph_arg
        from_graph = dict(traced.graph_data)
        features = [p for p, _ in traced.inputs if p not in from_graph]
        if traced.blocks:  # forward(blocks, x) on the whole graph: inference(g, x)
            graph = "g"
        self.result_kind = result_type(plan)
        self.subsets = self.result_kind is not None
        params = [graph, *features, "batch_size", "device", "max_memory=2**30", "progress=False",
                  *(["nodes=None"] if self.subsets else []), "storage=None", "changed=None",
                  "keep_layers=False", *forward_args.parameters(traced.forward_args)]
        schema_relations = ", ".join(self.expr(r, {}) for r in header["relations"])
        reason = hetero_not_distributed(self)  # DistDGL: hetero/distributed.py
        lines = [
            *(check_line(RUNTIME, header["built"]) if header.get("built") else []),  # built.py
            *forward_args.check_lines(traced.forward_args),
            *(refusal(graph, reason) if reason else []),
            f"batches = {runtime_call(RUNTIME, graph, 'batch_size', 'device', 'max_memory', 'progress', 'storage')}"
            f"{runtime_arguments('changed', 'keep_layers')})",
            "# the relations forward was traced for",
            f"batches.check_graph([{schema_relations}])",
        ]
        for name in traced.tensor_inputs:  # forward(g, x) with {"paper": x}
            (ntype,) = dict(traced.inputs)[name]
            lines += [f"# {name}: the {ntype} features alone, a dict of them as the layers read it",
                      f'{name} = {{"{ntype}": {name}}}']
        if from_graph:
            lines.append("# the features forward reads from its graph")
        for name, types in traced.inputs:
            if name in from_graph:
                lines.append(f"{name} = {{ntype: {graph}.nodes[ntype].data[{json.dumps(from_graph[name])}] "
                             f"for ntype in {self.expr(tuple(types), {})}}}")
        if traced.edge_data:
            lines.append("# the edge data forward reads from its graph, by relation")
        for name, key, relations in traced.edge_data:
            keys = tuple(self.relation_key(rel) for rel in relations)
            lines.append(f"{name} = {{etype: {graph}.edges[etype].data[{json.dumps(key)}] "
                         f"for etype in {self.expr(keys, {})}}}")
        checks = [f"{p}=({p}, {self.expr(tuple(types), {})})" for p, types in traced.inputs]
        lines += [f"batches.check_rows({', '.join(checks)})"] if checks else []
        lines += squeeze_checks([(plan.ntype[n], locations(n, traced.path)[0], squeezes_first_axis(n))
                                 for n in plan.nodes if n in plan.ntype  # a type's rows, not a weight's
                                 and (squeezes_every_axis(n) or squeezes_first_axis(n))], graph)
        self._name_constants()
        lines += incremental.refusal_lines(self.subsets, self.count_lines)
        if self.count_lines:
            lines += ["# the full graph's counts forward reads", *self.count_lines]
        once_at = len(lines)  # where the values of the weights alone go, once the layers are written
        if self.subsets:
            result = self.result_kind
            lines += [
                "# the nodes of each type whose rows each layer computes: all of them, or for nodes=",
                "# those, and before each layer the in-neighbours of the nodes the layer computes",
                f"needed = batches.needed(nodes, layers={plan.num_stages}"
                + (f', result="{result}")' if result else ")"),
            ]
        if self._needs_out_degrees():
            lines += ["# GraphConv's norm by source out-degrees reads the full graph's, per relation",
                      "out_degrees = batches.out_degrees()"]
        body = ["@torch.no_grad()", f"def inference(self, {', '.join(params)}):",
                *_docstring(self.model, traced, self.result_kind,
                            any(self.on_subgraphs(k) for k in range(1, plan.num_stages + 1)), RUNTIME,
                            header.get("runtime_module"),
                            incremental.paragraph(self.subsets, self.count_lines)),
                *(f"    {line}" for line in header["in_eval"])]
        stages = [self._stage(stage) for stage in range(plan.num_stages + 1)]
        result = self._result()
        # computed in every layer alike by forward: one loop over the layers (per_layer_values.py)
        once, lines, stages, result = values_of_weights(self.once_lines, self.model, lines, stages, result,
                                                        self.names.new)
        lines[once_at:once_at] = once
        # layers forward runs from one line of its loop, alike but for the index: one loop
        per_layer = tuple(m.group(1) for line in once if (m := re.match(r"(\w+) = \[\]$", line)))
        calls = {k: [n for t in self.traced_types() for n in plan.at(k, t) if n.target is hetero_conv]
                 for k in range(len(stages))}
        folded = fold_layers(stages, self.outputs, calls, self.path, self.model, ("needed", *per_layer), result,
                             self.names.new)
        lines, stages, result = spelled_as_forward(lines, folded, calls, self.schema_relations, graph, self.names.new)
        self.group_names |= set(folded.aliases)
        body += [f"    {line}" for line in lines]
        for stage, lines_of_stage in zip(range(len(stages)), stages):
            freed = self._freed_after(stage, stages, result)  # what the stage read last
            freed += [folded.aliases[name] for name in freed if name in folded.aliases]
            if freed:  # a layer's results for every node, nothing reads them any more
                last = lines_of_stage[-1] if lines_of_stage[-1].startswith("del ") else ""  # one del
                lines_of_stage = [*lines_of_stage[:-1 if last else None], f"{last + ',' if last else 'del'} {', '.join(freed)}"]
            body += [f"    {line}" if line else "" for line in lines_of_stage]
        body.append(f"    return batches.result({result}, nodes=nodes)" if self.subsets else f"    return {result}")
        return "\n".join(body) + "\n"

    def _freed_after(self, stage: int, stages: list[list[str]], result: str) -> list[str]:
        """The dicts of stored rows (or of features forward builds, or of tables computed once
        from the weights: a row per node) that stage `stage` reads last: deleted after it, as
        DGL's hand-written loops drop a layer's input (a table kept to the end was as large
        as a layer's results, alive beside the last layer's: rgcn-hetero's self-loop term)."""
        def reads(lines: list[str], name: str) -> bool:
            return any(re.search(rf"\b{re.escape(name)}\b", line) for line in lines if not line.startswith("#"))

        names = sorted(self.group_names | self.table_names, key=lambda n: (len(n), n))
        return [n for n in names if reads(stages[stage], n) and not reads([result], n)
                and not any(reads(later, n) for later in stages[stage + 1:])
                and not any(line.startswith(f"{n} = ") or line.startswith(f"{n}[") for line in stages[stage])]

    def _needs_out_degrees(self) -> bool:
        return any(n.target is hetero_conv and _reads_full_degrees(self.model.get_submodule(str(n.args[0])))
                   for n in self.plan.nodes)

    def _name_constants(self) -> None:
        """Constants read in more than one place, and tables computed once (a product of an
        embedding with a weight), get a statement of their own; the rest are written inline.
        Arguments a HeteroGraphConv is given (mod_kwargs=wdict) are named as forward names them."""
        plan = self.plan
        read: dict[str, str] = {}  # each count's call -> its name
        for node in plan.nodes:  # the full graph's counts forward reads (`g.num_nodes("paper")`)
            if node not in plan.counts:
                continue
            if node.op == "call_method":
                graph = "g" if self.traced.blocks else self.traced.graph_arg
                arguments = ", ".join([*(self.expr(a, {}) for a in node.args[1:]),
                                       *(f"{k}={self.expr(v, {})}" for k, v in node.kwargs.items())])
                call = f"{graph}.{node.target}({arguments})"
                if call not in read:
                    read[call] = self.names.new(re.sub(r"\W+", "_", f"{node.target} {arguments}").strip("_"))
                    self.count_lines.append(f"{read[call]} = {call}")
                self.once[node] = read[call]
            else:  # arithmetic on them: where it is read
                self.once[node] = self.call_code(node, {}).operand()
        uses: dict[fx.Node, set[Any]] = {}
        for node in plan.nodes:
            for arg in nodes_in((node.args, node.kwargs)):
                arg = self.res(arg)
                # the calls for each type share one dict of arguments: one use
                key = (node.args[0], "arguments") if node.target is hetero_conv and arg not in nodes_in(node.args[2]) else node
                uses.setdefault(arg, set()).add(key)
        by_line: dict[tuple[str, str], list[fx.Node]] = {}
        for node in plan.constants:
            if node in plan.tables:
                by_line.setdefault(locations(node, self.path), []).append(node)
            elif len(uses.get(node, ())) > 1:
                name = self.names.new(self.name_for(node))
                self.once_lines.append(f"{name} = {self.call(node, {})}")
                self.once[node] = name
        # a table per type, made by one line: one dict of them (`h["paper"]`)
        for nodes in by_line.values():
            name = self.names.new(self.name_for(nodes[-1]))
            self.table_names.add(name)
            items = ", ".join(f"{self.expr(plan.tables[n], {})}: {self.call(n, {})}" for n in nodes)
            self.once_lines.append(f"{name} = {{{items}}}")
            for n in nodes:
                self.once[n] = f'{name}["{plan.tables[n]}"]'
                self.groups[n] = (name, plan.tables[n])
        # the arguments HeteroGraphConv calls are given
        for node in plan.nodes:
            if node.target is not hetero_conv:
                continue
            for index, pattern in ((4, _MOD_ARGS), (5, _MOD_KWARGS)):
                value = node.args[index]
                if not value or self._edge_inputs_in(value):
                    continue  # none, or per batch: the block's edge rows (_function)
                # the calls for each destination type share the dict: one statement
                key = (node.args[0], index, self.expr(value, {}))
                if key in self.arguments:
                    continue
                match = pattern.search(locations(node, self.path)[1])
                name = self.names.new(match.group(1) if match else ("mod_args", "mod_kwargs")[index - 4])
                # forward's comprehension over the relations, as it wrote it (dict_comprehension.py)
                written = comprehension({k: self.expr(v, {}) for k, v in value.items()}, self.model, str(node.args[0]),
                                        lambda path: accessor(self.model, path)) if isinstance(value, dict) else None
                self.once_lines.append(f"{name} = {written or key[2]}")
                self.arguments[key] = name

    def relation_key(self, rel: tuple[str, str, str]) -> Any:
        """How the generated code names a relation in a dict of edge data: its edge type's
        name where no other relation has it (as HeteroGraphConv's mod_kwargs are keyed), else
        its canonical edge type."""
        return rel[1] if [r[1] for r in self.schema_relations].count(rel[1]) == 1 else rel

    def _edge_inputs_in(self, value: Any) -> list[tuple[str, tuple[str, str, str]]]:
        """The edge data (name, relation) inside a value: a HeteroGraphConv's mod_kwargs."""
        by_node = {node: key for key, node in self.traced.edge_placeholders.items()}
        return [by_node[n] for n in nodes_in(value) if n in by_node]

    def _group_of(self, values: dict[str, Any]) -> str | None:
        """The stored dict that is exactly `values` (its types, in any order), if one is."""
        values = {t: self.res(v) for t, v in values.items()}
        groups = {self.groups.get(v, (None, None))[0] if isinstance(v, fx.Node) else None for v in values.values()}
        if len(groups) != 1 or None in groups:
            return None
        group = groups.pop()
        members = [t for v, (g, t) in self.groups.items() if g == group]
        same = all(self.groups[v] == (group, t) for t, v in values.items())
        return group if same and sorted(members) == sorted(values) else None

    def _source_dict(self, inputs: dict[str, Any]) -> str:
        """A HeteroGraphConv's input dict, as the runtime is given it: a stored dict when it is
        one, else a literal."""
        group = self._group_of(inputs)
        if group is not None:
            return group
        return "{" + ", ".join(f'"{t}": {self._stored(self.res(v))}' for t, v in inputs.items()) + "}"

    def _stored(self, node: fx.Node) -> str:
        if node in self.groups:
            group, ntype = self.groups[node]
            return f'{group}["{ntype}"]'
        return self.expr(node, {})

    def _stage(self, stage: int) -> list[str]:
        plan = self.plan
        types = [t for t in self.traced_types() if plan.at(stage, t) and any(n in plan.stored for n in plan.at(stage, t))]
        if not types:
            return []
        per_type = {t: self._function(stage, t) for t in types}
        texts = {t: f[0] for t, f in per_type.items()}
        # alike but for the type's name, or for a module's index a dict of the model's maps it to
        shared = (_shared(texts) or shared_by_index(texts, self.model)) if len(types) > 1 else None
        group_names = self._output_groups(stage, per_type)
        convs = sorted({str(n.args[0]) for t in types for n in plan.at(stage, t) if n.target is hetero_conv})
        described = ", ".join(f"{accessor(self.model, c)} ({_describe_conv(self.model.get_submodule(c))})"
                              for c in convs)
        what = f"Layer {stage} of {plan.num_stages}: {described}" if stage else "Before layer 1: each node's own features"
        lines = ["", *textwrap.wrap(f"{what}, into {_and(types)}.", 90, initial_indent="# ", subsequent_indent="# ",
                                    break_on_hyphens=False, break_long_words=False)]
        sourced = {source for (at, _, source) in self.relation_sources if at == stage}
        for literal, name in self.literals.items():
            read = name in sourced or any(name in f[1] for f in per_type.values())
            if read and name not in self.emitted:
                lines += ["# the first layer's input, as forward builds it", f"{name} = {whole_mapping(self.model, literal)}"]
                self.emitted.add(name)
        # each type's relations' source rows, made right before its batches and dropped after
        # them: one type's at a time (all types' at once took 1.3x the hand-written loop's peak)
        made_here = {name: (path, source) for (at, path, source), name in self.relation_sources.items()
                     if at == stage}

        def with_sources(into: str | None, t: str, call: str) -> list[str]:
            names = [name for name in made_here if name in per_type[t][1]]
            made = [line for name in names for line in self._map_sources(*made_here[name], name, into, stage)]
            return [*made, call, *([f"del {', '.join(names)}"] if names else [])]

        calls = {}
        for t in types:
            text, src, dst, outs, edges, params = per_type[t]
            base = f"layer_{stage}" if stage else "prologue"  # as the homogeneous method names it
            name = base if shared is not None or len(types) == 1 else f"{base}_{t}"
            if shared is None or t == types[0]:
                text = without_unused_type(text if shared is None else shared)
                lines += [*text.replace("def layer(", f"def {name}(", 1).splitlines(), ""]
            targets = ", ".join(f'{group_names[i]}["{t}"]' for i in range(len(outs)))
            method = "map" if stage else "map_rows"
            arguments = [f'"{t}"']
            if stage:  # each parameter after the block, by name (map_bindings.py)
                names = iter(params[1:])
                arguments += map_bindings((keyword, [(next(names), x) for x in tensors]) for keyword, tensors in
                                          (("source_rows", src), ("destination_rows", dst), ("edge_rows", edges)))
            elif dst:
                arguments.append(f"rows=[{', '.join(dst)}]")
            if self.subsets:
                arguments.append(f'nodes=needed[{stage}]["{t}"]')
            if stage and self.on_subgraphs(stage):
                arguments.append("subgraph=True")
            calls[t] = f"{targets} = batches.{method}({name}, {', '.join(arguments)})"
        self.layout.append((stage, what, [(t, group_names[:len(per_type[t][3])],
                                           any(name in per_type[t][1] for name in made_here)) for t in types]))
        lines += [f"{g} = {{}}" for g in group_names]
        unified = _shared(calls) if shared is not None else None
        if unified is not None:
            lines += [f"for ntype in {self.expr(tuple(types), {})}:",
                      *(f"    {line}" for line in with_sources(None, types[0], unified))]
        else:
            lines += [line for t in types for line in with_sources(t, t, calls[t])]
        return lines

    def on_subgraphs(self, stage: int) -> bool:
        """Whether the stage runs a layer of the user's: on each batch's graph of its in-edges,
        an ordinary heterograph, whose node data reads as forward's graph's does (on a block,
        `G.nodes[t].data` is the source nodes'), the batch's nodes first of their type."""
        calls = [n for t in self.traced_types() for n in self.plan.at(stage, t) if n.target is hetero_conv]
        own = [n for n in calls if calls_own_layer(n, self.model)]
        if own and len(own) != len(calls):
            raise UnsupportedOperationError(
                f"layer {stage} runs a HeteroGraphConv and a heterogeneous layer of your own "
                f"({type(self.model.get_submodule(str(own[0].args[0]))).__name__}) at one depth; gnn-codegen "
                "runs a layer's modules on one kind of graph per batch. Make them layers of their own."
            )
        return bool(own)

    def traced_types(self) -> list[str]:
        return sorted({t for t in self.plan.ntype.values() if t})

    def _output_groups(self, stage: int, per_type: dict[str, Any]) -> list[str]:
        count = max(len(f[3]) for f in per_type.values())
        names = [self.names.new(f"h{stage}" if i == 0 else f"h{stage}_{i}") for i in range(count)]
        self.outputs[stage] = names
        self.group_names.update(names)
        for t, (_, _, _, outs, _, _) in per_type.items():
            for i, node in enumerate(outs):
                self.groups[node] = (names[i], t)
        return names

    def _result(self) -> str:
        output = self.plan.output

        def one(value: Any) -> str:
            if isinstance(value, fx.Node):
                return self._stored(value)
            if isinstance(value, dict):
                group = self._group_of(value)
                # the stored dict itself, when it holds these types in this order
                if group is not None and [t for _, (g, t) in self.groups.items() if g == group] == list(value):
                    return group
                return "{" + ", ".join(f"{self.expr(k, {})}: {one(v)}" for k, v in value.items()) + "}"
            if isinstance(value, (tuple, list)):
                inner = ", ".join(one(v) for v in value)
                return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
                    f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
            return self.expr(value, {})

        return one(output)


def _shared(texts: dict[str, str]) -> str | None:
    """One text for every type, `ntype` for the type's name, when the texts differ in nothing
    else; None otherwise."""
    unified = {t: text.replace(f'"{t}"', "ntype") for t, text in texts.items()}
    values = set(unified.values())
    return values.pop() if len(values) == 1 else None



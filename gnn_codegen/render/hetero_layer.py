"""Stage 6, render (heterogeneous): the function of one stage for a batch of one
destination type (the HeteroGraphConv call, its sources, the work done once per relation)."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.render.hetero_added_terms import AddedTerms, added_terms
from gnn_codegen.render.hetero_expressions import Names, accessor, base_name
from gnn_codegen.render.hetero_term_tests import term_test
from gnn_codegen.cut.hetero import nodes_in
from gnn_codegen.trace.hetero_tracer import hetero_conv


HETERO_CONV = "_hetero_conv"


HETERO_CONV_SOURCES = "_hetero_conv_sources"


RELATION_SOURCE = "_relation_source"  # a relation's work on its source rows (map_sources)


def _relation_work_once(module: torch.nn.Module) -> bool:
    """A HeteroGraphConv whose every relation's module works on its source rows in a way the
    runtime runs once per node (map_sources): GATConv; GraphConv with a norm by out-degrees, or
    a weight it applies first because it narrows; or none, a GraphConv (norm "right" or "none"
    that does not narrow) whose rows are then read in place rather than gathered per batch."""
    if not isinstance(module, dglnn.HeteroGraphConv) or not module.mods:
        return False
    return all(type(m) in (dglnn.GATConv, dglnn.GraphConv) for m in module.mods.values())


def _reads_destination_rows(module: torch.nn.Module) -> bool:
    """A HeteroGraphConv with a GATConv, whose attention and residual read the layer input's
    destination rows (GraphConv's rest reads only the sum over in-edges)."""
    return any(isinstance(m, dglnn.GATConv) for m in module.mods.values())


def _reads_full_degrees(module: torch.nn.Module) -> bool:
    """A HeteroGraphConv with a GraphConv whose norm reads source out-degrees."""
    return isinstance(module, dglnn.HeteroGraphConv) and any(
        isinstance(m, dglnn.GraphConv) and m._norm in ("both", "left") for m in module.mods.values())


def _without_last_assignment(body: list[str], returned: list[str]) -> list[str]:
    """`return F.relu(h)` rather than `h_1 = F.relu(h)` then `return h_1`."""
    if len(returned) == 1 and body and body[-1].startswith(f"{returned[0]} = "):
        return [*body[:-1], "return " + body[-1][len(returned[0]) + 3:]]
    return [*body, "return " + ", ".join(returned)]


class HeteroLayerFunction:
    """The function of one stage per destination type (a part of HeteroRenderer)."""

    def _map_sources(self, path: str, source: str, name: str, into: str | None, stage: int) -> list[str]:
        """`x_src = batches.map_sources(self.layers[0], x, into=(ntype,))`: the work on their
        source rows of a HeteroGraphConv's relations into the type `into` (None: the loop's
        `ntype`), once per node, before that type's batches."""
        module = self.model.get_submodule(path)
        mods = list(module.mods.values())
        work = []
        if any(isinstance(m, dglnn.GATConv) for m in mods):
            work.append("GATConv's fc and attention term")
        if _reads_full_degrees(module):
            work.append("GraphConv's norm by the full graph's out-degrees")
        weights = self.relation_weights.get((stage, path, source))
        if any(isinstance(m, dglnn.GraphConv) and m._in_feats > m._out_feats for m in mods):
            # DGL multiplies by W before the sum where the layer narrows (in_feats > out_feats)
            work.append(f"times {'the relation' if weights else 'GraphConv'}'s weight{' (mod_kwargs)' if weights else ''} "
                        "before the sum, as GraphConv does where a layer narrows")
        into_expr = "(ntype,)" if into is None else self.expr((into,), {})
        arguments = [accessor(self.model, path), source, f"work={RELATION_SOURCE}", f"into={into_expr}"]
        if _reads_full_degrees(module):
            arguments.append("out_degrees=out_degrees")
        if weights:
            arguments.append(f"mod_kwargs={weights}")
        if self.subsets:
            arguments.append(f"nodes=needed[{stage - 1}]")
        said = (f"source rows of each relation into {into or 'ntype'}: {'; '.join(work)}, once per node" if work
                else f"source rows of each relation into {into or 'ntype'}: read where they are, not gathered per batch")
        return [*(f"# {line}" for line in textwrap.wrap(said, 84, break_on_hyphens=False)),  # not out-/degrees
                f"{name} = batches.map_sources({', '.join(arguments)})"]

    def _sources_once(self, node: fx.Node) -> bool:
        """A HeteroGraphConv call whose relations' work on source rows runs once per node:
        its modules allow it, and it is given no arguments beyond the features but GraphConv's
        weight per relation (_fixed_weights)."""
        module = self.model.get_submodule(str(node.args[0]))
        return not node.args[4] and self._fixed_weights(node.args[5], module) and _relation_work_once(module)

    def _fixed_weights(self, mod_kwargs: Any, module: torch.nn.Module) -> bool:
        """mod_kwargs is none, or gives GraphConvs without weights of their own only a weight
        each, of the model's weights alone (DGL's rgcn-hetero: `{rel: {"weight": w}}`, a basis or
        block-diagonal decomposition's product): the same for every batch, so a GraphConv
        that narrows applies it once per source node, as it would its own (its forward picks
        the side by its in and out widths, not the weight's)."""
        if not mod_kwargs:
            return True
        if not isinstance(mod_kwargs, dict) or self._edge_inputs_in(mod_kwargs):
            return False
        for etype, kwargs in mod_kwargs.items():
            # as DGL picks a relation's module: by its canonical edge type, else its name
            mods = [module.mod_dict.get(rel, module.mod_dict.get(etype)) for rel in self.schema_relations
                    if rel[1] == etype]
            if not isinstance(kwargs, dict) or set(kwargs) - {"weight"} or not mods:
                return False
            if any(type(m) is not dglnn.GraphConv or m.weight is not None for m in mods):
                return False
            if not all(self.res(n).name in self.traced.constant_names for n in nodes_in(kwargs)):
                return False
        return True

    def _function(self, stage: int, ntype: str) -> tuple[str, list[str], list[str], list[fx.Node], list[str], list[str]]:
        """The stage's function for one type (named `layer`), the tensors it reads on source and
        destination rows, the stored values it returns, those it reads on edges, and its
        parameters."""
        plan = self.plan
        nodes = plan.at(stage, ntype)
        # a function's names may be those of the stored dicts (it reads none of them), never those
        # of the values it reads from the method (constants, out_degrees)
        subgraph = self.on_subgraphs(stage)
        local = Names((set(self.names.taken) - self.group_names) | {"block", "graph", "ntype", "num_dst"})
        env: dict[fx.Node, str] = {}
        params = [("graph" if subgraph else "block")] if stage else []
        src_exprs: list[str] = []  # the dicts of source rows, each a parameter of that name
        dst_exprs: list[str] = []
        body: list[str] = []
        # the inputs: dicts of source rows for each HeteroGraphConv, destination rows of values
        # made by earlier stages
        sources: dict[fx.Node, str] = {}  # each HeteroGraphConv's input dict, by its name
        conv_dst: dict[str, str] = {}  # an input dict's destination rows -> their parameter
        for node in nodes:
            if node.target is hetero_conv:
                source = self._source_dict(node.args[2])
                if not source.isidentifier():  # a dict forward builds: named before the loop
                    if source not in self.literals:
                        self.literals[source] = self.names.new(f"h{stage - 1}")
                        self.group_names.add(self.literals[source])
                        # its tables' rows, read on destination rows too, as the dict's
                        for t, value in node.args[2].items():
                            if self.res(value) in plan.tables:
                                self.table_rows.setdefault(self.res(value), (self.literals[source], t))
                    source = self.literals[source]
                if self._sources_once(node):
                    key = (stage, str(node.args[0]), source)
                    if key not in self.relation_sources:
                        self.relation_sources[key] = self.names.new(f"{source}_src")
                    if node.args[5]:  # the same dict for every type's call (_name_constants)
                        self.relation_weights[key] = self.arguments[(node.args[0], 5, self.expr(node.args[5], {}))]
                    if _reads_destination_rows(self.model.get_submodule(str(node.args[0]))):
                        if source not in conv_dst:
                            conv_dst[source] = local.new(f"{source}_dst")
                        self.conv_dst[node] = conv_dst[source]
                    else:
                        self.conv_dst[node] = ""
                    source = self.relation_sources[key]
                sources[node] = source
                if source not in src_exprs:
                    # the parameter takes the name of what the call passes: the same dict
                    local.taken.add(source)
                    params.append(source)
                    src_exprs.append(source)
        for source, param in conv_dst.items():  # after every dict of source rows
            params.append(param)
            dst_exprs.append(f'{source}["{ntype}"]')
        edge_exprs: list[str] = []  # the dicts of edge data by relation a HeteroGraphConv is given
        for node in nodes:
            if node.target is hetero_conv:
                continue
            for arg in nodes_in((node.args, node.kwargs)):
                arg = self.res(arg)
                if arg in env or arg in nodes or plan.ntype.get(arg) != ntype:
                    continue
                if arg in self.groups or arg in plan.tables or arg.op == "placeholder":
                    stored = self._stored(arg) if arg not in plan.tables else self.expr(arg, {})
                    base = self.groups[arg][0] if arg in self.groups else base_name(arg)
                    if arg in self.table_rows:  # a table of the features dict forward gives a layer
                        base, t = self.table_rows[arg]
                        stored = f'{base}["{t}"]'
                    env[arg] = local.new(f"{base}_dst" if stage else base)
                    params.append(env[arg])
                    dst_exprs.append(stored)
        for node in nodes:  # the block's rows of each, a parameter named as the dict
            if node.target is not hetero_conv:
                continue
            for name, rel in self._edge_inputs_in(node.args[4:6]):
                if name not in edge_exprs:
                    local.taken.add(name)
                    params.append(name)
                    edge_exprs.append(name)
                env[self.traced.edge_placeholders[(name, rel)]] = f"{name}[{self.expr(self.relation_key(rel), {})}]"
        outs = [n for n in nodes if n in plan.stored]
        added = self._added_terms(nodes, env)
        folded = {n for terms in added.values() for n in terms.folded}  # written by the call
        holder: dict[str, fx.Node] = {}  # local name -> the value it holds now
        for position, node in enumerate(nodes):
            if node in folded:
                continue
            if node.target is hetero_conv:
                code = self._conv_call(node, sources[node], env, added.get(node))
            else:
                code = self.call(node, env)
            if node in plan.sizes:  # written where it is read: `h.view(h.shape[0], -1)`
                env[node] = code
                continue
            if node in added:  # the call gives the value of the last op it stands for
                position, node = nodes.index(added[node].last), added[node].last
            base = self.name_for(node)
            held = holder.get(base)
            # `h = h + self.h_bias` as the user wrote it: a name whose value nothing reads later
            # (and that is not returned) is given the new value
            if held is not None and held not in outs and all(
                    u in nodes[:position + 1] for u in plan.users[held]):
                name = base
            else:
                name = local.new(base)
            holder[name] = node
            body.append(f"{name} = {code}")
            env[node] = name
            for other in (added[conv].folded for conv in added if added[conv].last is node):
                env.update(dict.fromkeys(other, name))
        body = _without_last_assignment(body, [env[n] for n in outs])
        params += ["num_dst", "ntype"] if subgraph else ["ntype"]
        text = "\n".join([f"def layer({', '.join(params)}):", *(f"    {line}" for line in body)])
        return text, src_exprs, dst_exprs, outs, edge_exprs, params

    def _added_terms(self, nodes: list[fx.Node], env: dict[fx.Node, str]) -> dict[fx.Node, AddedTerms]:
        """The terms forward adds to the result of each HeteroGraphConv of GraphConvs whose
        relations' work on source rows runs once per node (hetero_added_terms.py): its helper
        takes them into the relations' one product."""
        def constant(node: fx.Node) -> bool:
            return node.op == "get_attr" or node.name in self.traced.constant_names or node in self.once

        found = {}
        for node in nodes:
            module = self.model.get_submodule(str(node.args[0])) if node in self.conv_dst else None
            if not isinstance(module, dglnn.HeteroGraphConv):
                continue
            if not all(type(m) is dglnn.GraphConv for m in module.mods.values()):
                continue
            terms = added_terms(node, nodes, self.plan.users, set(self.plan.stored), self.res,
                                lambda n: n in env, constant)
            if terms is not None:
                found[node] = terms
        return found

    def _conv_call(self, node: fx.Node, source: str, env: dict[fx.Node, str],
                   added: AddedTerms | None = None) -> str:
        path = str(node.args[0])
        module = self.model.get_submodule(path)
        extra = []
        for index, keyword in ((4, "mod_args"), (5, "mod_kwargs")):
            value = node.args[index]
            if value and self._edge_inputs_in(value):  # the block's edge rows: written here
                extra.append(f"{keyword}={self.expr(value, env)}")
            elif value:
                extra.append(f"{keyword}={self.arguments[(node.args[0], index, self.expr(value, {}))]}")
        if not isinstance(module, dglnn.HeteroGraphConv):  # a layer of the user's, on a graph
            return f"{accessor(self.model, path)}(graph, {source})[ntype][:num_dst]"
        if node in self.conv_dst:  # its relations' work on source rows done once per node
            self.sections.add("relation_sources")
            dst = f", {self.conv_dst[node]}" if self.conv_dst[node] else ""
            if added is not None:  # forward's terms added to the result (hetero_added_terms.py)
                linear = f"({self.expr(added.rows, env)}, {self.expr(added.weight, env)})"
                test = term_test(added.folded[0], self.model)  # forward's `if self.self_loop:`
                extra.append(f"linear={linear} if {test} else None" if test else f"linear={linear}")
                extra += [f"bias={self.expr(added.bias, env)}"] if added.bias is not None else []
            weights = "".join(f", {e}" for e in extra)  # mod_kwargs: GraphConv's weights (_fixed_weights)
            return f"{HETERO_CONV_SOURCES}({accessor(self.model, path)}, block, {source}{dst}{weights})"
        if _reads_full_degrees(module):
            self.sections.add("hetero_conv")
            return f"{HETERO_CONV}({accessor(self.model, path)}, block, {source}, out_degrees{''.join(', ' + e for e in extra)})"
        return f"{accessor(self.model, path)}(block, {source}{''.join(', ' + e for e in extra)})[ntype]"


def without_unused_type(text: str) -> str:
    """A layer function's text without its `ntype` parameter where its body reads no type's
    name (the runtime passes ntype= only to a function that takes it, _typed)."""
    header, _, body = text.partition("\n")
    if header.endswith(", ntype):") and "num_dst" not in header and not re.search(r"\bntype\b", body):
        return header[: -len(", ntype):")] + "):\n" + body
    return text

"""Lower: the traced fx GraphModule into the torch-free Program (ir.py), resolving how each
function is spelled in the user's file and which module calls are message passing."""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.trace.graph_lineage import derived_name, is_graph_node
from gnn_codegen.lower.accessors import accessor
from gnn_codegen.lower.module_constants import spell_module_constants
from gnn_codegen.lower.module_callables import held_by_module
from gnn_codegen.lower.hops import with_hops
from gnn_codegen.lower.module_calls import with_module_calls
from gnn_codegen.lower.dgl_names import with_callers_names, with_readable_names
from gnn_codegen.trace.edge_weight_norm import EDGE_WEIGHT_NORM, MODULE_PATH, normalized_edge_weight
from gnn_codegen.errors import GraphValueError, UnsupportedModuleError, internal
from gnn_codegen.analysis.graph_fields import data_roles
from gnn_codegen.trace.inline_mp import APPLY_EDGES, ROLE, message_fields, update_all
from gnn_codegen.ir import MessagePassing, Op, Program, Ref
from gnn_codegen.analysis.known_modules import (
    MULTI_HOP,
    facts_for,
    is_dgl_module,
    is_message_passing,
    refusal_reason,
)
from gnn_codegen.analysis.rowwise import qualified_name
from gnn_codegen.trace.relation_graphs import RELATION_GRAPH, is_relation_graph
from gnn_codegen.trace.several_graphs import GRAPH_ITEM, is_graph_item
from gnn_codegen.trace.traced import Traced
from gnn_codegen.trace.write_out import MESSAGE_PASSING, PROVEN_ON_BLOCKS, helper_name
from gnn_codegen.lower.effects import (
    _function_in_place,
    _method_in_place,
    _refuse_random,
    activation_in_place,
    changes_its_input,
)
from gnn_codegen.lower.spelling import (
    _spelled,
    _traced_constant,
    _with_user_variables,
    function_expression,
    locations,
)

# Graph methods whose result, for a graph, is a tensor of the graph alone: computed once on the
# whole graph and read per batch like an input (ir.OpKind "graph_value").
GRAPH_VALUES = frozenset({"in_degrees", "out_degrees"})
def _without_defaults(fn: Any, kwargs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """fx records `F.relu(h)` as `F.relu(h, inplace=False)`; drop what equals the default."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return kwargs
    return tuple(
        (k, v) for k, v in kwargs
        if not (k in params and type(v) is type(params[k].default) and v == params[k].default)
    )


def _convert(value: Any) -> Any:
    if isinstance(value, fx.Node):
        return Ref(value.name)
    if isinstance(value, (tuple, list)):
        return type(value)(_convert(v) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_convert(value.start), _convert(value.stop), _convert(value.step))
    return value


def _concatenates_columns(fn: Any, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]) -> bool:
    """torch.cat(tensors, dim=1) or dim=-1 (columns, for 2-D rows; render checks the rows)."""
    if fn not in (torch.cat, torch.concat, torch.concatenate) or not args:
        return False
    options = dict(kwargs)
    dim = args[1] if len(args) > 1 else options.get("dim", options.get("axis", 0))
    return isinstance(args[0], (list, tuple)) and dim in (1, -1)


def _note(traced: Traced, module: str, what: str) -> str:
    """`self.layers[2]'s fc_neigh on each source row, once per node` (write_out.py)."""
    return f"{accessor(traced.model, module)}'s {what}" if module else ""


def _is_graph_value(node: fx.Node, traced: Traced) -> bool:
    """`g.out_degrees()`: a graph method of GRAPH_VALUES called on forward's graph (or one derived
    from it) alone."""
    receiver = node.args[0] if node.args else None
    return (node.target in GRAPH_VALUES and len(node.args) == 1 and not node.kwargs
            and is_graph_node(receiver, traced.graph_arg))


def _edge_weight_norm(node: fx.Node, traced: Traced, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...],
                      location: str) -> Op:
    """EdgeWeightNorm on forward's graph (edge_weight_norm.py): a graph value of one number per
    edge, computed once on the full graph from weights that forward is given or reads from it."""
    graph, weight = node.args[0], node.args[1]
    if not is_graph_node(graph, traced.graph_arg):
        raise GraphValueError(
            f"{location or 'forward'}: EdgeWeightNorm is called on a graph forward makes, which "
            "gnn-codegen cannot rebuild on the full graph: call it on forward's graph (or one "
            "derived from it by dgl.add_self_loop and the like).")
    if not (isinstance(weight, fx.Node) and weight.op == "placeholder" and weight.target in traced.inputs):
        raise GraphValueError(
            f"{location or 'forward'}: EdgeWeightNorm divides each edge's weight by sums over the edges "
            "of its endpoints in the whole graph, so inference computes it once on the full graph "
            "before the first batch, from weights it is given; these are computed in forward. Compute "
            "them before calling the model and pass them to forward as an input (or in g.edata), or "
            "evaluate this model with its full-graph forward.")
    path = node.meta.get(MODULE_PATH)
    if path:
        spelled = accessor(traced.model, path)
    else:
        options = dict(kwargs)
        spelled = f"dgl.nn.EdgeWeightNorm(norm={options['norm']!r}" + (
            f", eps={options['eps']!r})" if options["eps"] else ")")
    return Op(node.name, "graph_value", EDGE_WEIGHT_NORM, args, kwargs, location, accessor=spelled)


def _written_out(node: fx.Node, modules: dict[str, torch.nn.Module], traced: Traced, args: tuple[Any, ...],
                 kwargs: tuple[tuple[str, Any], ...], location: str) -> Op:
    """A call of a write_out.py helper: a message-passing op (the part on each block) or a
    function (the part on each source row), both keeping the module's name for comments."""
    section = helper_name(node.target) or ""
    module_node = node.args[0]
    target = str(module_node.target) if isinstance(module_node, fx.Node) else ""
    cls = type(modules[target]).__name__ if target in modules else ""
    where = accessor(traced.model, target) if target else ""
    if section in PROVEN_ON_BLOCKS:  # the user's module inside reads its source rows as it likes
        roles = MESSAGE_PASSING.get(section) or data_roles(node.args[3], len(node.args) - 4 - len(node.args[3]))
        mp = MessagePassing(cls, verified=False, helper=section, roles=roles)
        return Op(node.name, "mp", section, args, kwargs, location, mp, cls, where, helper=section)
    if section in MESSAGE_PASSING:
        # RelGraphConv's presorted=True: the check's edge types sorted, as forward's graph has them
        presorted = dict(kwargs).get("presorted") is True
        mp = MessagePassing(cls, sources_in_place=True, helper=section, roles=MESSAGE_PASSING[section],
                            sorted_types=presorted)
        return Op(node.name, "mp", section, args, kwargs, location, mp, cls, where, helper=section)
    return Op(node.name, "function", section, args, kwargs, location, class_name=cls, accessor=where,
              helper=section)


def _inline_update_all(node: fx.Node, args: tuple[Any, ...], location: str, namespace: dict[str, Any]) -> Op:
    """`g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))` written in forward (inline_mp.py)."""
    import dgl
    import dgl.function

    graph, message, reduce = node.args[0], node.args[1], node.args[2]
    roles = (None, None, *(ROLE[target] for target, _ in message_fields(message)))
    functions = next((name for name, value in namespace.items() if value is dgl.function and not name.startswith("_")), "")
    if not functions:
        dgl_name = next((name for name, value in namespace.items() if value is dgl and not name.startswith("_")), "dgl")
        functions = f"{dgl_name}.function"
    mp = MessagePassing("update_all", sources_in_place=True, roles=roles, inline=True, functions=functions)
    # a graph forward derives (dgl.add_self_loop(g)) has a function as its node's target
    graph_name = str(graph.target) if isinstance(graph, fx.Node) and isinstance(graph.target, str) else "g"
    if reduce[0] == APPLY_EDGES:  # g.apply_edges(message): a value per edge (edge_functions.py)
        return Op(node.name, "mp", "update_all", args, (), location, mp, message[0], f"{graph_name}.apply_edges")
    return Op(node.name, "mp", "update_all", args, (), location, mp, f"{message[0]}, {reduce[0]}",
              f"{graph_name}.update_all")


def lower(traced: Traced, namespace: dict[str, Any], path: Path,
          forced_mp: frozenset[str] = frozenset()) -> Program:
    gm = traced.graph_module
    modules = dict(gm.named_modules())
    ops: list[Op] = []
    output: Any = None
    lines: dict[str, str] = {}  # node -> the library line that made it, when not the user's
    for node in gm.graph.nodes:
        location, naming = locations(node, path)
        if naming != location:
            lines[node.name] = naming
        args, kwargs = _convert(node.args), tuple((k, _convert(v)) for k, v in node.kwargs.items())
        if node.op == "placeholder":
            if node.target == traced.graph_arg:
                ops.append(Op(node.name, "graph", target=str(node.target)))
            elif node.target in traced.inputs:
                ops.append(Op(node.name, "input", target=str(node.target)))
            # other placeholders are parameters traced at their default value: nothing uses them
        elif node.op == "output":
            output = args[0]
        elif node.op == "get_attr" and _traced_constant(traced, str(node.target)) is not None:
            # a tensor library code made from numbers while traced (ChebConv's th.Tensor([2.0]))
            value = _traced_constant(traced, str(node.target))
            ops.append(Op(node.name, "function", "torch.tensor", (value.tolist(),), (("dtype", value.dtype),),
                          location))
        elif node.op == "get_attr":
            ops.append(Op(node.name, "attr", target=str(node.target), location=location,
                          accessor=accessor(traced.model, str(node.target))))
        elif node.op == "call_module":
            module = modules[str(node.target)]
            cls = type(module).__name__
            if is_message_passing(module, forced_mp):
                refusal = refusal_reason(module)
                if refusal:
                    reason, way_out = refusal
                    error = UnsupportedModuleError(
                        f"{location or 'forward'}: self.{node.target} ({cls}) {reason}, so it cannot "
                        f"run on the 1-hop blocks of layer-wise inference. {way_out}"
                    )
                    if type(module) in MULTI_HOP:  # its rounds may be followed one by one (pipeline.py)
                        error.module_class = type(module)  # type: ignore[attr-defined]
                    raise error
                facts = facts_for(module)
                kwargs, note = _unsorted_on_blocks(module, kwargs)
                # a user's module given the graph's node data (`layer(g, h, g.ndata[dgl.NTYPE])`): per
                # node, as source rows, and proven so (probe.py) where it is per edge elsewhere
                node_data = {name for name, view, _ in traced.graph_data if view == "ndata"}
                node_args = facts.node_args or (() if is_dgl_module(module) else tuple(
                    i for i, a in enumerate(node.args) if i >= 2 and getattr(a, "name", None) in node_data))
                mp = MessagePassing(cls, facts.source_out_degree_power, facts.verified, facts.needs_pair,
                                    facts.pair_collapses, facts.sources_in_place, node_args=node_args,
                                    sorted_types=bool(note))
                ops.append(Op(node.name, "mp", str(node.target), args, kwargs, location, mp, cls,
                              accessor(traced.model, str(node.target)),
                              module_class=qualified_name(type(module)), note=note))
            else:
                ops.append(Op(node.name, "module", str(node.target), args, kwargs, location, None, cls,
                              accessor(traced.model, str(node.target)),
                              module_class=qualified_name(type(module)),
                              linear=type(module) is torch.nn.Linear,
                              in_place="input" if changes_its_input(module) else ""))
        elif node.op == "call_function" and getattr(node.target, "__module__", "").startswith("torch.fx"):
            continue  # fx's own guards for arguments traced at their default value
        elif node.op == "call_function" and is_graph_node(node, traced.graph_arg):  # dgl.add_self_loop(g)
            spelled = GRAPH_ITEM if is_graph_item(node) else RELATION_GRAPH if is_relation_graph(node) else (
                _spelled(node.target, namespace) or f"dgl.{derived_name(node.target)}")  # g.add_self_loop()
            ops.append(Op(node.name, "graph", spelled, args, kwargs, location))
        elif node.op == "call_function" and node.target is normalized_edge_weight:
            ops.append(_edge_weight_norm(node, traced, args, kwargs, location))
        elif node.op == "call_function" and node.target is update_all:
            ops.append(_inline_update_all(node, args, location, namespace))
        elif node.op == "call_function" and helper_name(node.target):
            ops.append(_written_out(node, modules, traced, args, kwargs, location))
        elif node.op == "call_function":
            _refuse_random(node, location, namespace)
            args, kwargs = spell_module_constants(node, args, kwargs, traced.model)
            expr = function_expression(node.target, namespace)  # type: ignore[arg-type]
            kwargs = _without_defaults(node.target, kwargs)
            in_place, twin = _function_in_place(node.target, kwargs, namespace)
            plain = tuple((k, v) for k, v in kwargs if k != "inplace")
            held_as = held_by_module(node, traced.model)
            # called through a module's attribute (`self.activation(h)`), it is written so, and
            # `inplace=True` would read as a keyword the attribute may not take (the build check
            # pins the function, but a reviewer sees an attribute): a new tensor instead
            ops.append(Op(node.name, "function", expr, args, kwargs, location,
                          activation_in_place=activation_in_place(node.target, plain) and not held_as,
                          concatenates_columns=_concatenates_columns(node.target, args, kwargs),
                          in_place=in_place, out_of_place=twin, held_as=held_as))
        elif node.op == "call_method" and _is_graph_value(node, traced):
            ops.append(Op(node.name, "graph_value", str(node.target), args, kwargs, location))
        elif node.op == "call_method":
            _refuse_random(node, location, namespace)
            args, kwargs = spell_module_constants(node, args, kwargs, traced.model)
            in_place, twin = _method_in_place(str(node.target))
            ops.append(Op(node.name, "method", str(node.target), args, kwargs, location,
                          in_place=in_place, out_of_place=twin))
        else:
            raise internal(f"unexpected fx node kind {node.op}")
    ops = [replace(op, library_line=lines[op.name]) if op.name in lines else op for op in ops]
    ops = _with_user_variables(ops, lines)
    ops = with_hops(ops, {n.name: n for n in gm.graph.nodes}, traced.model)  # whose hop each is
    ops = with_readable_names(ops, {n.name: n for n in gm.graph.nodes}, traced.model)  # t1, hop2
    ops = with_callers_names(ops, {n.name: n for n in gm.graph.nodes}, traced.model)  # h, not rst
    ops = with_module_calls(ops, {n.name: n for n in gm.graph.nodes}, traced.model)  # self.norm's
    # what write_out.py calls the values it made (`feat`, `el`), and why it made them
    made = {n.name: n.meta["gnn_codegen"] for n in gm.graph.nodes if "gnn_codegen" in n.meta}
    ops = [replace(op, var=made[op.name][0], line_var="", note=_note(traced, *made[op.name][1:]),
                   once_per_node=bool(made[op.name][1]) and op.kind != "graph_value")
           if op.name in made else op for op in ops]
    # an inline update_all's value is the field it reduces into (`h` of fn.sum("m", "h"))
    ops = [replace(op, var=op.var or op.line_var or op.args[2][-1]) if op.mp is not None and op.mp.inline
           and op.args[2][-1].isidentifier() else op for op in ops]
    graph_names = [op.name for op in ops if op.kind == "graph" and not op.args]
    if not graph_names:
        raise internal("graph placeholder lost while lowering")
    return Program(
        ops=tuple(ops),
        graph=graph_names[0],
        inputs=tuple(op.name for op in ops if op.kind == "input"),
        output=output,
        blocks_style=traced.blocks_style,
        num_blocks=traced.num_blocks,
        signature=traced.signature,
        kept_graph=traced.kept_graph,
        graph_data=traced.graph_data,
        tables=tuple((name, path, accessor(traced.model, path)) for name, path in traced.tables),
        decisions=traced.decisions,
        in_degree_checks=traced.in_degree_checks,
        static_decisions=traced.static_decisions,
        flags=traced.flags,
        converts_blocks=traced.converts_blocks,
        homogenized=traced.homogenized,
        type_offsets=traced.type_offsets,
        graphs=traced.graphs,
        graph_params=traced.graph_params,
        optional=traced.optional,
    )


def _unsorted_on_blocks(module: torch.nn.Module, kwargs: tuple[tuple[str, Any], ...]) -> tuple[tuple[tuple[str, Any], ...], str]:
    """`presorted=True` (HGTConv, RelGraphConv): forward's graph has its nodes and edges sorted by
    type (dgl.to_homogeneous makes them so), a block's source nodes are not, and the sorted fast
    path is wrong on them. The result is the same either way on a sorted graph, so the block's call
    passes presorted=False; the check before writing runs on sorted types (input_specs.py)."""
    if dict(kwargs).get("presorted") is not True or not is_dgl_module(module):
        return kwargs, ""
    unsorted = tuple((k, False if k == "presorted" else v) for k, v in kwargs)
    return unsorted, "presorted=False: a block's nodes and edges are not sorted by type (forward's graph is, and gives the same result)"

"""Trace a heterogeneous model's forward into one torch.fx value per node type.

forward's feature dicts are traced as one placeholder per node type (fx's concrete_args with
PH), so `{k: F.relu(v) for k, v in h.items()}` becomes a ReLU per type. A HeteroGraphConv call
becomes one `hetero_conv` node per destination type that a relation reaches, as DGL computes
it: a relation counts when its source type is among the inputs (DGL skips it otherwise). The
graph is a proxy whose type lists are the schema's. Values of the weights alone (DGL's
rgcn-hetero splits a weight per relation) are also computed while tracing, so that forward
may loop over them; they stay ops of the traced graph, computed once by the generated code."""

from __future__ import annotations

import contextlib
import inspect
import json
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dgl.nn as dglnn
import torch
import torch.fx as fx
from torch.fx._symbolic_trace import _assert_is_none
from torch.utils import _pytree as pytree

from gnn_codegen.errors import GraphUseError, OptionsError, SignatureError, TraceFailedError
from gnn_codegen.load.hetero_schema import Schema, hetero_convs, hetero_layers
from gnn_codegen.trace.hetero_type_subgraphs import followed_type_subgraphs
from gnn_codegen.trace.kept_graph import forward_taking_the_graph, graphs_on_the_model, kept_graph
from gnn_codegen.trace.parameters import _graph_parameter
from gnn_codegen.trace.fx_tracer import _user_location
from gnn_codegen.trace.hetero_proxies import _BLOCKS_NAMES, _GraphProxy
from gnn_codegen.trace.hetero_tracer import _HeteroTracer, hetero_conv


def calls_own_layer(node: fx.Node, model: torch.nn.Module) -> bool:
    """Whether a traced node is a `hetero_conv` of a heterogeneous layer of the user's own (run
    per batch on the graph of its in-edges), not of a HeteroGraphConv."""
    return node.target is hetero_conv and not isinstance(model.get_submodule(str(node.args[0])), dglnn.HeteroGraphConv)


@dataclass(frozen=True)
class HeteroTraced:
    model: torch.nn.Module
    graph_module: fx.GraphModule
    graph_arg: str
    # forward's feature dicts: parameter -> its node types, each a placeholder named param_ntype
    inputs: tuple[tuple[str, tuple[str, ...]], ...]
    placeholders: dict[tuple[str, str], fx.Node]
    output: Any  # forward's result, its tensors as fx nodes (a dict per type, one node, a tuple)
    # values of the weights alone: their names, and those computed while tracing (name -> value)
    constant_names: frozenset[str]
    constants: dict[str, Any]
    path: Path  # the model's file, as the user named it (for messages)
    blocks: int = 0  # forward takes a list of this many blocks, each the whole graph (0: a graph)
    # inputs forward reads from its graph (`G.nodes[ntype].data["inp"]`, `g.ndata["feat"]`): (the
    # input's name among `inputs`, the data's key); inference reads them from the graph it is given
    graph_data: tuple[tuple[str, str], ...] = ()
    # forward's parameters traced at a value --forward-args gives (`out_key="paper"`)
    forward_args: tuple[tuple[str, Any], ...] = ()
    # where the model keeps its graph when forward takes none (`self.g`: forward(self, feats)),
    # kept_graph.py; graph_arg is then inference's name for it
    kept: tuple[str, ...] = ()
    # edge data forward reads from its graph (`g.edges[etype].data["w"]`, given a HeteroGraphConv
    # as mod_kwargs' edge weights): (its name, the key, its relations), and each relation's
    # placeholder by (name, relation)
    edge_data: tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], ...] = ()
    edge_placeholders: dict[tuple[str, tuple[str, str, str]], fx.Node] = field(default_factory=dict)
    # forward's feature parameters taken as one tensor of the one type --feat-dims names, not a
    # dict (forward(g, x) with `{"paper": x}`)
    tensor_inputs: tuple[str, ...] = ()


def _nested_features(graph: fx.Graph) -> bool:
    """Whether a HeteroGraphConv is given a dict of features per type inside its own dict of
    features: forward used a parameter, traced as such a dict, as one tensor."""
    return any(node.target is hetero_conv and isinstance(node.args[2], dict)
               and any(isinstance(v, dict) for v in node.args[2].values()) for node in graph.nodes)


# what fx checks a concrete argument with
_GUARDS = (operator.eq, torch._assert, _assert_is_none)


def blocks_style(model: torch.nn.Module, graph_arg: str) -> int:
    """How many blocks forward takes, when it takes a list of them (as DGL's sampled-training
    examples write it): one per HeteroGraphConv module; 0 when it takes the graph."""
    named = re.fullmatch(r"|".join(_BLOCKS_NAMES), graph_arg) is not None
    return len(hetero_convs(model)) + len(hetero_layers(model)) if named else 0


def _and_names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def parse_forward_args(model: torch.nn.Module, text: str | None) -> dict[str, Any]:
    """--forward-args: a JSON object of values for forward's parameters."""
    if text is None:
        return {}
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        values = exc
    names = list(inspect.signature(type(model).forward).parameters)[1:]
    example = "--forward-args '{\"out_key\": \"paper\"}'"
    if not isinstance(values, dict):
        raise OptionsError(f"--forward-args must be a JSON object of values for forward's parameters, e.g. "
                           f"{example}; got {text!r}.")
    unknown = [name for name in values if name not in names]
    if unknown:
        raise OptionsError(f"--forward-args gives {unknown[0]}, which is not a parameter of "
                           f"{type(model).__name__}.forward ({', '.join(names)}).")
    return values


def _signature(model: torch.nn.Module, given: dict[str, Any],
               as_features: frozenset[str] = frozenset()) -> tuple[str, list[str], tuple[str, ...]]:
    """forward's graph parameter (named like one, else the first), its feature parameters
    (those without a default), and where the model keeps its graph when forward takes none
    (inference's name for it is then the attribute's: `g` for self.g). A graph parameter with a
    default (DGL's rgcn-hetero example: `forward(self, h=None, blocks=None)`, the kept graph
    when no blocks are given) is traced as given, the others at their defaults."""
    params = list(inspect.signature(type(model).forward).parameters.values())[1:]
    name = type(model).__name__
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    graph = _graph_parameter(model, positional) if positional else None
    kept: tuple[str, ...] = ()
    if graph is None and graphs_on_the_model(model):  # forward(self, feats) on self.g
        graph_name, kept = kept_graph(model, {p.name for p in params})
    elif graph is None:
        raise SignatureError(
            f"{name}.forward must take the heterogeneous graph (or its list of blocks) (def "
            "forward(self, g, inputs)), or the model keep it (self.g)."
        )
    else:
        graph_name = graph.name
    if graph_name in given:
        raise OptionsError(f"--forward-args gives {graph_name}, forward's graph: give values only for "
                           "parameters that are not the graph or features, such as out_key.")
    features = [p.name for p in params if p.name != graph_name and p.name not in given
                and (p.default is inspect.Parameter.empty or p.name in as_features)
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return graph_name, features, kept


def trace_hetero(model: torch.nn.Module, schema: Schema, feature_types: tuple[str, ...], path: Path,
                 forward_args: dict[str, Any] | None = None, as_features: frozenset[str] = frozenset(),
                 ) -> HeteroTraced:
    """feature_types: the node types forward's feature dicts hold (every type unless --feat-dims
    names some); forward_args: values of forward's parameters it is traced for (--forward-args);
    as_features: parameters with a None default traced as feature inputs."""
    model.eval()
    given = dict(forward_args or {})
    graph_arg, features, kept = _signature(model, given, as_features)
    blocks = blocks_style(model, graph_arg)
    taken = set(inspect.signature(type(model).forward).parameters) | {graph_arg}

    def attempt(as_tensors: bool) -> tuple[_HeteroTracer, fx.Graph]:
        """forward traced with its feature parameters as dicts per node type, or as_tensors as
        one tensor each (of the one type --feat-dims names)."""
        tracer = _HeteroTracer(schema, graph_arg, blocks, feature_types, taken)
        concrete: dict[str, Any] = {p: fx.PH if as_tensors else {t: fx.PH for t in feature_types} for p in features}
        # parameters with defaults are traced at their default, as Python would call forward(g, x)
        for p in list(inspect.signature(type(model).forward).parameters.values())[1:]:
            if p.default is not inspect.Parameter.empty and p.name != graph_arg and p.name not in as_features:
                concrete[p.name] = p.default
            elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):  # as forward is called: without more
                concrete[("*" if p.kind == p.VAR_POSITIONAL else "**") + p.name] = () if p.kind == p.VAR_POSITIONAL else {}
        concrete.update(given)
        # a kept graph: forward, while traced, takes it first and sets it where the model keeps it
        with forward_taking_the_graph(model, graph_arg, kept) if kept else contextlib.nullcontext(), \
                followed_type_subgraphs(tracer, type(model).forward.__globals__, _GraphProxy):  # type_subgraphs.py
            return tracer, tracer.trace(model, concrete_args=concrete)

    as_tensors = False
    try:
        try:
            tracer, graph = attempt(False)
            nested = _nested_features(graph)
        except (GraphUseError, SignatureError):
            raise
        except Exception:
            if not (features and len(feature_types) == 1):
                raise
            nested = True  # perhaps forward takes one type's features as a tensor: tried below
        if nested and features and len(feature_types) == 1:
            # forward(g, x) with {"paper": x}: x is the one type's features, a tensor
            try:
                tracer, graph = attempt(True)
                as_tensors = True
            except Exception:
                tracer, graph = attempt(False)  # the first way's failure is the one to report
        elif nested:
            raise GraphUseError(
                f"forward uses {_and_names(features)} as one tensor, not a dict of features per node type "
                "(as gnn-codegen takes a parameter unless told): give its node type and width with "
                "--feat-dims TYPE=WIDTH (e.g. --feat-dims paper=128)"
            )
    except (GraphUseError, SignatureError) as exc:
        where = _user_location(exc.__traceback__, path) or f"{type(model).__name__}.forward"
        raise type(exc)(f"{where}: {exc}") from None
    except Exception as exc:
        where = _user_location(exc.__traceback__, path) or f"{type(model).__name__}.forward"
        hint = ""
        key = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
        if key is not None and (key in schema.relations or key in [r[1] for r in schema.relations]):
            # forward(g, x, edge_weight) with edge_weight[etype]: a dict by relation
            hint = (f" It traced {_and_names(features)} as a dict of features per node type, and forward reads "
                    f"one by the relation {key!r}: give edge data by relation on the graph instead "
                    "(g.edges[etype].data[\"w\"]), where gnn-codegen follows it into mod_kwargs.")
        elif isinstance(exc, (TypeError, KeyError)) and features:
            # forward(G, out_key) traced with out_key a dict of features: the way out is a value
            hint = (f" It traced {_and_names(features)} as a dict of features per node type; give the "
                    f"value of a parameter that is not (the type to return, say) with --forward-args "
                    f"'{{\"{features[-1]}\": ...}}'.")
        raise TraceFailedError(
            f"{where}: tracing forward with torch.fx failed with {type(exc).__name__}: {exc}. On a "
            "heterogeneous graph gnn-codegen follows HeteroGraphConv calls on forward's graph and "
            f"operations on each node type's features.{hint}"
        ) from None
    defaults = {p.name for p in list(inspect.signature(type(model).forward).parameters.values())[1:]
                if (p.default is not inspect.Parameter.empty or p.name in given) and p.name != graph_arg
                and p.name not in as_features}
    # (fx names a flattened argument's placeholder after it: out_key_1)
    for node in [n for n in graph.nodes if re.sub(r"_\d+$", "", str(n.target)) in as_features]:
        node.args = ()  # an input: its None default is not what inference is called with
    for node in [n for n in graph.nodes if n.op == "placeholder" and re.sub(r"_\d+$", "", str(n.target)) in defaults]:
        # a parameter traced at its default (`out_key="paper"`): its value is in the graph, and
        # fx writes the placeholder of a str default as a syntax error; its only readers are
        # fx's guards that the value is the one traced (`_assert(out_key == "paper")`)
        guards = [node]
        for guard in guards:
            guards += [u for u in guard.users if u not in guards]
        if all(g.op == "call_function" and g.target in _GUARDS for g in guards[1:]):
            for guard in reversed(guards):
                graph.erase_node(guard)
    from_graph = {proxy.node: (name, ntype) for name, proxies in tracer.graph_inputs.values()
                  for ntype, proxy in proxies.items()}
    from_graph.update({proxy.node: (name, rel) for name, proxies in tracer.edge_inputs.values()  # type: ignore[misc]
                       for rel, proxy in proxies.items()})
    placeholders = [n for n in graph.nodes if n.op == "placeholder" and n.target != graph_arg
                    and n not in from_graph]
    flat = [(p, t) for p in features for t in feature_types]
    by_input = dict(zip(flat, placeholders))
    last = placeholders[-1] if placeholders else next(n for n in graph.nodes if n.op == "placeholder")
    inputs = [(p, feature_types) for p in features]
    for name, proxies in tracer.graph_inputs.values():  # after forward's own, types in schema order
        types = tuple(t for t in schema.ntypes if t in proxies)
        inputs.append((name, types))
        for ntype in types:
            node = proxies[ntype].node
            last.append(node)  # fx writes placeholders where they stand: with the others
            last = node
            by_input[(name, ntype)] = node
    edge_data, edge_placeholders = [], {}
    for key, (name, proxies) in tracer.edge_inputs.items():
        relations = tuple(r for r in schema.relations if r in proxies)
        edge_data.append((name, key, relations))
        for rel in relations:
            node = proxies[rel].node
            last.append(node)
            last = node
            edge_placeholders[(name, rel)] = node
    output_node = next(n for n in graph.nodes if n.op == "output")
    info = getattr(graph._codegen, "pytree_info", None)  # with feature dicts, fx flattens the result
    output = output_node.args[0] if info is None else pytree.tree_unflatten(list(output_node.args[0]), info.out_spec)
    for (param, ntype), node in by_input.items():  # readable placeholder names: inputs_paper
        node.name = f"{param}_{ntype}"
    gm = fx.GraphModule(model, graph, type(model).__name__)
    graph_data = tuple((name, key) for key, (name, _) in tracer.graph_inputs.items())
    tensor_inputs = tuple(features) if as_tensors else ()
    return HeteroTraced(model, gm, graph_arg, tuple(inputs), by_input, output, frozenset(tracer.constant_names),
                        dict(tracer.values), path, blocks, graph_data, tuple(given.items()), kept,
                        tuple(edge_data), edge_placeholders, tensor_inputs)


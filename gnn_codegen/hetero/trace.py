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

import dgl
import dgl.nn as dglnn
import torch
import torch.fx as fx
from torch.fx._symbolic_trace import _assert_is_none
from torch.utils import _pytree as pytree

from gnn_codegen.errors import GraphUseError, OptionsError, SignatureError, TraceFailedError
from gnn_codegen.hetero.schema import (TYPE_SUBGRAPH_REFUSAL, TYPE_SUBGRAPHS, Schema, hetero_convs, hetero_layers,
                                       is_hetero_layer)
from gnn_codegen.hetero.type_subgraphs import (SUBGRAPH_FUNCTIONS, check_same_relations, followed_type_subgraphs,
                                               order_free)
from gnn_codegen.kept_graph import forward_taking_the_graph, graphs_on_the_model, kept_graph
from gnn_codegen.trace import _graph_parameter, _Tracer, _user_location


def hetero_conv(module: str, graph: Any, inputs: dict[str, Any], ntype: str,
                mod_args: Any = None, mod_kwargs: Any = None) -> Any:
    """Marks, in a traced graph, the result for destination type `ntype` of the HeteroGraphConv
    at path `module` called on (graph, inputs): never run."""
    raise NotImplementedError("a marker of traced graphs")


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


class _GraphProxy(fx.Proxy):
    """A heterogeneous graph while tracing: its type lists are the schema's, `is_block` is
    False (forward gets the full graph), local_var() and local_scope() are itself."""

    schema: Schema

    def __getattr__(self, name: str) -> Any:
        relations = self.schema.relations
        known = {
            "ntypes": list(self.schema.ntypes), "srctypes": list(self.schema.ntypes),
            "dsttypes": list(self.schema.ntypes), "canonical_etypes": list(relations),
            "etypes": [r[1] for r in relations], "is_block": False,
        }
        if name in known:
            return known[name]
        if name in _SIZES:  # forward's graph is whole: a block's destination rows are all rows
            return lambda *args, **kwargs: None
        if name in GRAPH_COUNTS:  # g.num_nodes("paper"): a number of the full graph's, read once
            return lambda *args, **kwargs: self.tracer.create_proxy("call_method", name, (self, *args), kwargs)
        if name == "local_var":
            return lambda: self
        if name == "local_scope":
            return lambda: _Scope(self)
        if name in _TYPE_VIEWS:  # G.nodes["paper"].data["feat"]
            return _TypeViews(self, name)
        if name in _DATA_VIEWS:  # g.ndata["feat"], blocks[0].srcdata["feat"]
            return _Data(self, name, None)
        if name == "edges":  # g.edges["follows"].data["w"]
            return _EdgeViews(self)
        if name == "edata":  # g.edata["w"]: a dict by canonical edge type
            return _EdgeData(self, "edata", None)
        if name in SUBGRAPH_FUNCTIONS:  # g.edge_type_subgraph([...]): as dgl's (type_subgraphs.py)
            return lambda *args, **kwargs: getattr(dgl, name)(self, *args, **kwargs)
        if name in TYPE_SUBGRAPHS:  # also DGL's own reads of the graph in dgl.edge_type_subgraph(g, ...)
            raise GraphUseError(TYPE_SUBGRAPH_REFUSAL)
        raise GraphUseError(
            f"forward reads graph.{name} of a heterogeneous graph, which gnn-codegen does not follow "
            "yet: it follows HeteroGraphConv calls on the graph, its type lists, features read from "
            "it (G.nodes[ntype].data[key], g.ndata[key]), local_var() and local_scope(). Compute "
            "what needs the graph inside a HeteroGraphConv module."
        )


# a graph's data views, all of them rows of the full graph's nodes on forward's whole graph (a
# block's source and destination nodes are the graph's nodes when forward runs on it)
_DATA_VIEWS = frozenset({"ndata", "srcdata", "dstdata"})
_TYPE_VIEWS = {"nodes": "ndata", "srcnodes": "srcdata", "dstnodes": "dstdata"}


class _TypeViews:
    """`G.nodes` while tracing: G.nodes[ntype].data is the type's features."""

    def __init__(self, graph: _GraphProxy, view: str):
        self.graph, self.view = graph, view

    def __getitem__(self, ntype: Any) -> Any:
        if ntype not in self.graph.schema.ntypes:
            raise GraphUseError(f"forward reads graph.{self.view}[{ntype!r}], which is not a node type of "
                                f"the graph ({', '.join(self.graph.schema.ntypes)})")
        return _TypeView(_Data(self.graph, f"{self.view}[{ntype!r}].data", ntype))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GraphUseError(f"forward calls graph.{self.view}(), which gnn-codegen does not follow yet; "
                            f"it follows features read as graph.{self.view}[ntype].data[key]")


class _TypeView:
    def __init__(self, data: Any):
        self.data = data


class _EdgeViews:
    """`g.edges` while tracing: g.edges[etype].data is the relation's edge data (an edge type's
    name or its canonical triple, as DGL takes either)."""

    def __init__(self, graph: _GraphProxy):
        self.graph = graph

    def __getitem__(self, etype: Any) -> Any:
        relations = self.graph.schema.relations
        found = [r for r in relations if r == etype or (isinstance(etype, str) and r[1] == etype)]
        if len(found) != 1:
            raise GraphUseError(f"forward reads graph.edges[{etype!r}], which is "
                                f"{'not a relation' if not found else 'the name of several relations'} of the "
                                "graph: give its canonical edge type (src, etype, dst)")
        return _TypeView(_EdgeData(self.graph, f"edges[{etype!r}].data", found[0]))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GraphUseError("forward calls graph.edges(), which gnn-codegen does not follow; it follows edge "
                            "weights read as graph.edges[etype].data[key] and given to a HeteroGraphConv")


class _EdgeData:
    """A graph's edge data while tracing, each relation's an input of forward (edge rows of
    the relation): `g.edata[key]` is a dict of them by canonical edge type."""

    def __init__(self, graph: _GraphProxy, view: str, relation: tuple[str, str, str] | None):
        self.graph, self.view, self.relation = graph, view, relation

    def __getitem__(self, key: Any) -> Any:
        tracer = self.graph.tracer
        if not isinstance(key, str) or key.startswith("_"):
            raise GraphUseError(f"forward reads graph.{self.view}[{key!r}]; gnn-codegen follows a heterogeneous "
                                "graph's edge data read by a key of your own, not DGL's reserved ones")
        if self.relation is not None:
            return tracer.graph_edge_input(key, self.relation)  # type: ignore[attr-defined]
        relations = self.graph.schema.relations
        if len(relations) == 1:
            return tracer.graph_edge_input(key, relations[0])  # type: ignore[attr-defined]
        return {r: tracer.graph_edge_input(key, r) for r in relations}  # type: ignore[attr-defined]

    def __setitem__(self, key: Any, value: Any) -> None:
        raise GraphUseError(f"forward writes graph.{self.view}[{key!r}] of a heterogeneous graph, which "
                            "gnn-codegen does not follow yet")


class _Data:
    """A graph's features while tracing, read as inputs of forward: `g.ndata[key]` is a dict
    of one input per node type with features (a tensor where the graph has one node type, as
    DGL gives it); `G.nodes[ntype].data[key]` is the one of that type. Writes are refused."""

    def __init__(self, graph: _GraphProxy, view: str, ntype: str | None):
        self.graph, self.view, self.ntype = graph, view, ntype

    def __getitem__(self, key: Any) -> Any:
        tracer = self.graph.tracer
        if not isinstance(key, str) or key.startswith("_"):
            raise GraphUseError(
                f"forward reads graph.{self.view}[{key!r}]; gnn-codegen follows a heterogeneous graph's "
                "features read by a key of your own (G.nodes[ntype].data[\"feat\"]), not DGL's "
                "reserved ones (dgl.NID: give the node IDs' embeddings as an input)")
        if self.ntype is not None:
            return tracer.graph_input(key, self.ntype)  # type: ignore[attr-defined]
        types = tracer.feature_types  # type: ignore[attr-defined]
        if len(self.graph.schema.ntypes) == 1:
            return tracer.graph_input(key, types[0])  # type: ignore[attr-defined]
        return {t: tracer.graph_input(key, t) for t in types}  # type: ignore[attr-defined]

    def __setitem__(self, key: Any, value: Any) -> None:
        raise GraphUseError(
            f"forward writes graph.{self.view}[{key!r}] of a heterogeneous graph, which gnn-codegen "
            "does not follow yet: write the message passing inside a heterogeneous layer of your "
            "own (a module whose forward takes the graph) or a HeteroGraphConv"
        )

    def __contains__(self, key: Any) -> bool:
        raise GraphUseError(f"forward asks whether graph.{self.view} has {key!r}, which depends on the "
                            "graph it is given; gnn-codegen generates inference for one set of inputs")


# a block's node counts, which forward uses to take destination rows (`h[:block.num_dst_nodes(t)]`)
_SIZES = frozenset({"num_dst_nodes", "number_of_dst_nodes", "num_src_nodes", "number_of_src_nodes"})
# the full graph's node and edge counts, which inference reads from its graph once (graph_count)
GRAPH_COUNTS = frozenset({"num_nodes", "number_of_nodes", "num_edges", "number_of_edges"})
# what people call forward's list of blocks
_BLOCKS_NAMES = frozenset({"blocks", "mfgs", "block_list", "subgraphs"})


class _BlocksProxy(fx.Proxy):
    """forward's list of blocks, each the whole graph: `zip(self.layers, blocks)`,
    `blocks[i]` and `len(blocks)` work, with as many blocks as the model has HeteroGraphConv
    modules."""

    graph: _GraphProxy
    count: int

    def __iter__(self) -> Any:
        return iter([self.graph] * self.count)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, int):
            return self.graph
        if isinstance(index, slice):
            return [self.graph] * len(range(*index.indices(self.count)))
        return super().__getitem__(index)

    def __len__(self) -> int:
        return self.count


class _Scope:
    def __init__(self, graph: _GraphProxy):
        self.graph = graph

    def __enter__(self) -> _GraphProxy:
        return self.graph

    def __exit__(self, *exc: Any) -> None:
        return None


class _ConstantProxy(fx.Proxy):
    """A value of the weights alone: its value is known while tracing, so forward may loop over
    it (`for w in torch.split(self.weight, 1)`) and take its len()."""

    value: Any

    def __iter__(self) -> Any:
        if isinstance(self.value, (tuple, list, torch.Tensor)):
            return iter([self[i] for i in range(len(self.value))])
        return super().__iter__()

    def __len__(self) -> int:
        return len(self.value)


class _HeteroTracer(_Tracer):
    def __init__(self, schema: Schema, graph_arg: str, blocks: int, feature_types: tuple[str, ...],
                 taken: set[str]):
        super().__init__(graph_arg, frozenset(), frozenset())
        self.schema = schema
        self.blocks = blocks  # forward takes a list of this many blocks (0: a graph)
        self.feature_types = feature_types  # the types g.ndata[key] has features of
        self.taken = set(taken)  # names an input read from the graph must not take
        # inputs read from the graph: key -> (the input's name, {ntype: its placeholder})
        self.graph_inputs: dict[str, tuple[str, dict[str, fx.Proxy]]] = {}
        # and edge data: key -> (its name, {relation: its placeholder})
        self.edge_inputs: dict[str, tuple[str, dict[tuple[str, str, str], fx.Proxy]]] = {}
        self.values: dict[str, Any] = {}  # constants: fx node name -> value, where computed
        self.constant_names: set[str] = set()  # every value of the weights alone

    def proxy(self, node: fx.Node) -> fx.Proxy:
        if node.op == "placeholder" and node.target == self.graph_arg:
            proxy = _GraphProxy(node, self)
            proxy.schema = self.schema  # type: ignore[misc]
            if not self.blocks:
                return proxy
            blocks = _BlocksProxy(node, self)
            blocks.graph, blocks.count = proxy, self.blocks  # type: ignore[misc]
            return blocks
        if self._is_constant(node):
            self.constant_names.add(node.name)
            value = self._constant_value(node)
            if value is not _UNKNOWN:  # known while tracing: forward may loop over it
                self.values[node.name] = value
                constant = _ConstantProxy(node, self)
                constant.value = value  # type: ignore[misc]
                return constant
        return fx.Proxy(node, self)

    def graph_input(self, key: str, ntype: str) -> fx.Proxy:
        """The placeholder of the graph's feature `key` of type `ntype`, made on first read."""
        return self._lifted(self.graph_inputs, key, ntype, ntype)

    def graph_edge_input(self, key: str, relation: tuple[str, str, str]) -> fx.Proxy:
        """The placeholder of the graph's edge data `key` of a relation, made on first read."""
        return self._lifted(self.edge_inputs, key, relation, relation[1])

    def _lifted(self, store: dict[str, Any], key: str, part: Any, suffix: str) -> fx.Proxy:
        if key not in store:
            store[key] = (self._input_name(key), {})
        name, proxies = store[key]
        if part not in proxies:
            proxies[part] = self.create_proxy("placeholder", f"{name}_{suffix}", (), {})
        return proxies[part]

    def _input_name(self, key: str) -> str:
        """A name of its own for an input read from the graph by key."""
        name = re.sub(r"\W", "_", key)
        name = name if name.isidentifier() else f"data_{name}"
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def _is_constant(self, node: fx.Node) -> bool:
        """Whether the node is computed from the weights alone."""
        if node.op == "get_attr":
            return True
        if node.op not in ("call_function", "call_method", "call_module") or node.target is hetero_conv:
            return False
        inputs = node.all_input_nodes
        return bool(inputs) and all(n.name in self.constant_names for n in inputs)

    def _constant_value(self, node: fx.Node) -> Any:
        """The node's value when it is computed from the weights alone, else _UNKNOWN."""
        if node.op == "get_attr":
            return _attribute(self.root, str(node.target))
        if node.op not in ("call_function", "call_method"):
            return _UNKNOWN  # a module's call would be traced again: its value stays unknown
        if any(n.name not in self.values for n in node.all_input_nodes):
            return _UNKNOWN
        args, kwargs = fx.node.map_arg((node.args, node.kwargs), lambda n: self.values[n.name])
        with torch.no_grad():
            if node.op == "call_function":
                return node.target(*args, **kwargs)  # type: ignore[operator]
            return getattr(args[0], str(node.target))(*args[1:], **kwargs)

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if isinstance(m, dglnn.HeteroGraphConv) or (m is not self.root and is_hetero_layer(m)):
            return True
        if isinstance(m, (dglnn.HeteroLinear, dglnn.HeteroEmbedding)):
            return False  # a module per type inside: traced into, one call per type
        return super().is_leaf_module(m, module_qualified_name)

    def call_module(self, m: torch.nn.Module, forward: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if m is not self.root and is_hetero_layer(m):
            return self._hetero_layer(m, args, kwargs)
        if not isinstance(m, dglnn.HeteroGraphConv):
            return super().call_module(m, forward, args, kwargs)
        bound = inspect.signature(m.forward).bind(*args, **kwargs)
        graph, inputs = bound.arguments["g"], bound.arguments["inputs"]
        path = self.path_of_module(m)
        if not isinstance(graph, _GraphProxy):
            raise GraphUseError(f"self.{path} is called on something other than forward's graph")
        if isinstance(inputs, torch.nn.ParameterDict):  # embeddings per type (DGL's RelGraphEmbed)
            inputs = dict(inputs.items())
        pair = isinstance(inputs, tuple) and len(inputs) == 2 and all(isinstance(i, dict) for i in inputs)
        if pair and all(_whole(v.node) is _whole(inputs[0].get(t, v).node)
                        for t, v in inputs[1].items() if isinstance(v, fx.Proxy)):
            # (h, {t: v[:block.num_dst_nodes(t)]}): on the whole graph, the destination rows are h's
            inputs, destinations = {t: inputs[0][t] for t in inputs[0]}, set(inputs[1])
        elif isinstance(inputs, dict):
            destinations = None
        else:
            raise (NoneFeaturesError if inputs is None else GraphUseError)(
                f"self.{path} is called with {type(inputs).__name__} inputs; gnn-codegen follows a "
                "HeteroGraphConv called on the graph with a dict of features per node type (or the "
                "pair of it and its destination rows)"
            )
        mod_args, mod_kwargs = bound.arguments.get("mod_args"), bound.arguments.get("mod_kwargs")
        outputs = {}
        for src_type, _, dst_type in graph.schema.relations:  # a type subgraph's: type_subgraphs.py
            if src_type not in inputs or (destinations is not None and dst_type not in destinations):
                continue  # DGL skips the relation
            if dst_type not in inputs:
                raise GraphUseError(
                    f"self.{path} is given features of {src_type} but not of {dst_type}, which "
                    f"DGL's HeteroGraphConv reads for the relations from {src_type} to {dst_type} "
                    "on a full graph (a KeyError in forward)"
                )
            if dst_type not in outputs:
                outputs[dst_type] = self.create_proxy(
                    "call_function", hetero_conv, (path, graph, inputs, dst_type, mod_args, mod_kwargs), {})
        check_same_relations(graph.schema, self.schema, inputs, outputs, order_free(m))
        # DGL returns the types in the order of g.dsttypes
        return {t: outputs[t] for t in self.schema.ntypes if t in outputs}


    def _hetero_layer(self, m: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A user's own heterogeneous layer called as layer(graph, features per type): its
        result for each type a relation reaches from a type with features, each a `hetero_conv`
        node (the check proves the layer exact on each batch's subgraph, and these types)."""
        path = self.path_of_module(m)
        if kwargs or len(args) != 2 or not isinstance(args[0], _GraphProxy) or not isinstance(args[1], dict):
            raise (NoneFeaturesError if len(args) == 2 and args[1] is None else GraphUseError)(
                f"self.{path} ({type(m).__name__}) is called as other than self.{path}(graph, "
                "features per node type), which is how gnn-codegen follows a heterogeneous layer of "
                "your own"
            )
        graph, inputs = args
        check_same_relations(graph.schema, self.schema, self.schema.ntypes, self.schema.ntypes, False)  # reads all
        destinations = [t for t in self.schema.ntypes if any(s in inputs and d == t for s, _, d in self.schema.relations)]
        return {t: self.create_proxy("call_function", hetero_conv, (path, graph, inputs, t, None, None), {})
                for t in destinations}


def _nested_features(graph: fx.Graph) -> bool:
    """Whether a HeteroGraphConv is given a dict of features per type inside its own dict of
    features: forward used a parameter, traced as such a dict, as one tensor."""
    return any(node.target is hetero_conv and isinstance(node.args[2], dict)
               and any(isinstance(v, dict) for v in node.args[2].values()) for node in graph.nodes)


_UNKNOWN = object()
# what fx checks a concrete argument with
_GUARDS = (operator.eq, torch._assert, _assert_is_none)


def _whole(node: fx.Node) -> fx.Node:
    """The node past `[:None]`, a block's destination rows taken on the whole graph."""
    while (node.op == "call_function" and node.target is operator.getitem and len(node.args) == 2
           and node.args[1] == slice(None, None, None) and isinstance(node.args[0], fx.Node)):
        node = node.args[0]
    return node


def _attribute(root: torch.nn.Module, target: str) -> Any:
    """root's attribute at a dotted path, read past fx's patched Module.__getattr__ (which would
    make a proxy of it again while tracing)."""
    found: Any = root
    for part in target.split("."):
        for store in ("_parameters", "_buffers", "_modules"):
            if part in vars(found).get(store, {}):
                found = vars(found)[store][part]
                break
        else:
            found = vars(found)[part] if part in vars(found) else object.__getattribute__(found, part)
    return found


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


class NoneFeaturesError(GraphUseError):
    """A HeteroGraphConv given None as its features: a None default of forward's traced as it is
    (hetero/forward_defaults.py tries it as an input)."""


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


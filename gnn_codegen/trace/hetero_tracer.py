"""Stage 2, trace (heterogeneous), the tracer: torch.fx's Tracer over a model of
HeteroGraphConv layers, one value per node type, refusing what it cannot follow."""

from __future__ import annotations

import inspect
import operator
import re
from typing import Any

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.errors import GraphUseError
from gnn_codegen.load.hetero_schema import Schema, is_hetero_layer
from gnn_codegen.trace.hetero_type_subgraphs import check_same_relations, order_free
from gnn_codegen.trace.fx_tracer import _Tracer
from gnn_codegen.trace.hetero_proxies import _BlocksProxy, _ConstantProxy, _GraphProxy


def hetero_conv(module: str, graph: Any, inputs: dict[str, Any], ntype: str,
                mod_args: Any = None, mod_kwargs: Any = None) -> Any:
    """Marks, in a traced graph, the result for destination type `ntype` of the HeteroGraphConv
    at path `module` called on (graph, inputs): never run."""
    raise NotImplementedError("a marker of traced graphs")


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


_UNKNOWN = object()


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


class NoneFeaturesError(GraphUseError):
    """A HeteroGraphConv given None as its features: a None default of forward's traced as it is
    (hetero/forward_defaults.py tries it as an input)."""

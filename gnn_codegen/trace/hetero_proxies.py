"""Stage 2, trace (heterogeneous), the stand-ins: forward's heterograph (and its blocks)
while traced, with its per-type data views and counts, and constants traced as proxies."""

from __future__ import annotations

from typing import Any

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import GraphUseError
from gnn_codegen.load.hetero_schema import TYPE_SUBGRAPH_REFUSAL, TYPE_SUBGRAPHS, Schema
from gnn_codegen.trace.hetero_type_subgraphs import SUBGRAPH_FUNCTIONS


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

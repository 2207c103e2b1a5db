"""Stage 2, trace (heterogeneous): `dgl.edge_type_subgraph(block, [etype, reverse])` and
`dgl.node_type_subgraph(g, [...])` of forward's graph, with HeteroGraphConv layers run on the
result (RecHub's HeterogeneousAggregator: a stack of HeteroGraphConv per primary relation, each
on the subgraph of that relation and its reverse, given the features of those two types).

A type subgraph keeps every node of the types it keeps, with their IDs, and drops the other
relations. While traced it is forward's graph with fewer relations (a graph proxy of the
subgraph's schema), so a HeteroGraphConv on it runs the subgraph's relations only. The
heterogeneous runtime runs each HeteroGraphConv on blocks of forward's whole graph, where, as
DGL's HeteroGraphConv on a block, a relation runs when both its types have features: that is
the subgraph's result exactly when every relation of the whole graph between featured types into
a type the layer computes is one of the subgraph's. That is decided here from the schema (which
the generated inference checks where it starts); where it does not hold, the forward is refused,
naming the subgraph and a way out: the same subgraph made before the call, and a model whose
forward runs those layers on the graph it is given, generated with the subgraph's relations as
--metagraph."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator

import dgl
import torch.fx as fx

from gnn_codegen.errors import GraphUseError
from gnn_codegen.load.hetero_schema import Schema
from gnn_codegen.trace.patching import replaced

SUBGRAPH_FUNCTIONS = ("edge_type_subgraph", "node_type_subgraph")


def _names(value: Any) -> list[Any]:
    """Types as the user gives them (a name, a canonical edge type, or a list of them), as a list."""
    if isinstance(value, str) or (isinstance(value, tuple) and all(isinstance(v, str) for v in value)
                                  and len(value) == 3):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return [value]
    return [tuple(v) if isinstance(v, (list, tuple)) else v for v in value]


def refusal(kept: tuple[tuple[str, str, str], ...], extra: tuple[str, str, str]) -> GraphUseError:
    """The refusal of a layer run on a subgraph of the relations `kept` of forward's graph, where
    the whole graph's relation `extra` would add messages on its blocks."""
    metagraph = ",".join(":".join(r) for r in kept)
    return GraphUseError(
        "forward runs a heterogeneous layer (a HeteroGraphConv, or one of yours) on a subgraph of some of "
        f"its graph's types (dgl.edge_type_subgraph, dgl.node_type_subgraph) of the relations {list(kept)!r}, "
        f"where the graph also has {extra} between types with features: gnn-codegen runs each such layer on "
        "blocks of forward's whole graph, where that relation's messages would be added (DGL's "
        "HeteroGraphConv runs every relation between types with features). Make that subgraph before "
        f"calling the model (sub = dgl.edge_type_subgraph(g, {list(kept)!r})), and generate and call a model "
        "whose forward runs those layers on the graph it is given (one model per subgraph) with "
        f"--metagraph {metagraph}, or evaluate this model with its full-graph forward."
    )


def subgraph_schema(name: str, types: Any, schema: Schema) -> Schema:
    """The schema of `dgl.<name>(g, types)` of a graph of `schema`."""
    kept = _names(types)
    if name == "edge_type_subgraph":  # DGL keeps the order the relations are given in
        chosen = list(dict.fromkeys(r for k in kept for r in schema.relations if k in (r, r[1])))
        known = all(k in schema.relations or k in [r[1] for r in schema.relations] for k in kept)
    else:
        chosen = [r for r in schema.relations if r[0] in kept and r[2] in kept]
        known = all(k in schema.ntypes for k in kept)
    if not known or not chosen:
        raise GraphUseError(f"forward makes dgl.{name}(..., {kept!r}), which names types its graph lacks "
                            f"(its relations: {list(schema.relations)})")
    return Schema(tuple(chosen))


# DGL's aggregations across relations that do not depend on the relations' order
_ORDER_FREE = frozenset({"_sum_reduce_func", "_max_reduce_func", "_min_reduce_func", "_mean_reduce_func"})


def order_free(module: Any) -> bool:
    """Whether a HeteroGraphConv's aggregate across relations ignores their order (not "stack",
    nor a function of the user's)."""
    fn = getattr(getattr(module, "agg_fn", None), "keywords", {}).get("fn")
    return getattr(fn, "__name__", "") in _ORDER_FREE


def check_same_relations(sub: Schema, whole: Schema, featured: Any, outputs: Any, free: bool) -> None:
    """Refuses a layer on a subgraph (`sub`) where, on blocks of the whole graph, a relation
    between types with features (`featured`) into a type it computes (`outputs`) is not the
    subgraph's (the runtime would add its messages), or, unless its aggregate is order-free
    (`free`), where the subgraph lists the relations into such a type in another order."""
    extra = [r for r in whole.relations if r not in sub.relations and r[0] in featured and r[2] in featured
             and r[2] in outputs]
    if extra:
        raise refusal(sub.relations, extra[0])
    for ntype in [] if free else outputs:
        mine = [r for r in sub.relations if r[2] == ntype and r[0] in featured]
        ordered = [r for r in whole.relations if r[2] == ntype and r[0] in featured]
        if mine != ordered:
            raise GraphUseError(
                f"forward runs a heterogeneous layer whose results across relations depend on their order "
                f"(HeteroGraphConv's aggregate=\"stack\", or one of yours) on dgl.edge_type_subgraph of the "
                f"relations into {ntype} in the order {mine}: gnn-codegen runs it on blocks of forward's whole "
                f"graph, where they come in the graph's order {ordered}. List the relations in the graph's "
                "order (g.canonical_etypes), or evaluate this model with its full-graph forward.")


@contextlib.contextmanager
def followed_type_subgraphs(tracer: fx.Tracer, user_globals: dict[str, Any], proxy_type: type) -> Iterator[None]:
    """While inside, DGL's type subgraph functions called on a graph of `tracer` return a graph
    proxy (`proxy_type`) of the same graph with the subgraph's schema; on anything else they are
    DGL's own."""
    originals = {name: getattr(dgl, name) for name in SUBGRAPH_FUNCTIONS}

    def wrapped(name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def call(graph: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(graph, fx.Proxy) and graph.tracer is tracer:
                types = args[0] if args else kwargs.get("etypes", kwargs.get("ntypes"))
                sub = proxy_type(graph.node, tracer)
                sub.schema = subgraph_schema(name, types, graph.schema)  # type: ignore[attr-defined]
                return sub
            return fn(graph, *args, **kwargs)
        return call

    wrappers = {name: wrapped(name, fn) for name, fn in originals.items()}
    patches = [(dgl, name, fn, wrappers[name]) for name, fn in originals.items()]
    patches += [(user_globals, key, fn, wrappers[name]) for key, value in user_globals.items()
                for name, fn in originals.items() if value is fn]
    with replaced(patches):
        yield

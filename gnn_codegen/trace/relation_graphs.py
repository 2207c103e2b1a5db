"""Stage 2, trace (and how lower and render spell it): `g[relation]` of forward's heterograph,
the graph of one relation, built in forward (BWGNN's BWGNN_Hetero on a fraud graph of one node
type and several relations: `for relation in g.canonical_etypes: conv(g[relation], h)`).

Where the heterograph has one node type and the relation runs within it, the relation's graph
has the heterograph's nodes, forward's rows, and only that relation's edges: a graph of one node
and one edge type, a function of the graph alone, as the graphs of derived_graphs.py are. While
traced it is one `relation_graph(g, (src, rel, dst))` node of the program; the generated
inference makes it once at its top (`g_rur = g[("review", "rur", "review")]`) and the layers run
on batches of it. The relation comes from forward's Python over the schema (`g.canonical_etypes`,
answered from --metagraph by type_offsets.py) or is written in forward (`g["rur"]`); it is
spelled canonical, and the entry of inference checks the node types the trace assumed."""

from __future__ import annotations

from typing import Any

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import GraphUseError
from gnn_codegen.trace.graph_lineage import relation_graph
from gnn_codegen.random_graphs import random_relations
from gnn_codegen.trace.type_offsets import known_schema, type_list

# how the generated code spells a relation graph's op (lower.py, render.py): `g[relation]`
RELATION_GRAPH = "graph[relation]"


def is_relation_graph(node: Any) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target is relation_graph


def is_relation_key(key: Any) -> bool:
    """An edge type name, or a canonical edge type (three names), as DGL's `g[key]` takes them."""
    return isinstance(key, str) or (isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key))


def traced_relation_graph(g: fx.Proxy, key: Any, proxy_type: type) -> Any:
    """`g[key]` of forward's graph while traced: a relation graph node (`proxy_type` of it), or
    refused where its nodes are not forward's rows or the schema that decides it is unknown."""
    schema = known_schema()
    if schema is None:
        raise GraphUseError(
            f"forward takes the graph of one relation of its heterograph ({g.node.target}[{key!r}]): "
            "gnn-codegen follows it where it knows the graph's relations; give them with --metagraph "
            "SRC:REL:DST,... (a graph of one node type and several relations within it).")
    found = [r for r in schema.relations if key in (r, r[1])]
    if len(found) != 1:
        raise GraphUseError(
            f"forward takes {g.node.target}[{key!r}], which names "
            f"{'no relation' if not found else 'several relations'} of --metagraph's "
            f"{[r for r in schema.relations]}: name a relation by its canonical edge type (SRC, REL, DST) "
            "that --metagraph gives.")
    (relation,) = found
    if len(schema.ntypes) != 1:
        src, _, dst = relation
        way_out = (f"Make the graph of that one type before calling the model (g = dgl.node_type_subgraph(hg, "
                   f"[{src!r}]) keeps its relations) and call the model and its inference on it" if src == dst else
                   "Run the relations between types with HeteroGraphConv layers on the heterograph")
        raise GraphUseError(
            f"forward takes the graph of the relation {relation} of a heterograph of the node types "
            f"{list(schema.ntypes)}: gnn-codegen follows the relation graphs of a heterograph of one "
            f"node type, whose nodes are forward's rows. {way_out}, or evaluate this model with its "
            "full-graph forward.")
    # the one node type the trace assumed, checked where inference starts (render_type_offsets.py)
    type_list(g.tracer, "ntypes")
    node = g.tracer.create_proxy("call_function", relation_graph, (g, relation), {}).node
    return proxy_type(node, g.tracer)


def spelled(graph: str, relation: Any) -> str:
    """`g[("review", "rur", "review")]`."""
    return f"{graph}[{tuple(relation)!r}]"


def suffix(relation: Any) -> str:
    """What the generated code calls a relation's graph, after the graph's own name: its edge type."""
    name = "".join(c if c.isalnum() else "_" for c in str(relation[1]))
    return name if name and not name[0].isdigit() else f"r_{name}"


def uses_relation_graphs(program: Any) -> bool:
    """Whether forward takes relation graphs of its heterograph (so --metagraph served it)."""
    return any(op.kind == "graph" and op.target == RELATION_GRAPH for op in program.ops)


def random_relations_graph(program: Any, num_nodes: int, seed: int = 0, zero_in_degree: bool = True,
                           avg_degree: int = 3) -> Any:
    """For a forward over relation graphs: a random heterograph of --metagraph's relations, its
    one node type with num_nodes nodes (each relation a random graph over them: with
    zero_in_degree one node in ten without in-edges, else a self-loop on every node); else None."""
    typed = program.type_offsets
    if not uses_relation_graphs(program) or typed is None or not typed.relations:
        return None
    return random_relations(typed.relations, num_nodes, seed, zero_in_degree, avg_degree)


def first_relation(program: Any) -> tuple[str, str, str] | None:
    """The relation of the first relation graph forward takes (its nodes are forward's rows)."""
    return next((op.args[1] for op in program.ops if op.kind == "graph" and op.target == RELATION_GRAPH), None)


def probe_heterograph(tracer: Any, num_nodes: int, generator: Any) -> Any:
    """For a forward traced so far over relation graphs: the example heterograph that its static
    decisions (static_decisions.py) run on, --metagraph's relations over num_nodes nodes, each
    with a self-loop on every node; else None."""
    schema = known_schema()
    if schema is None or not any(is_relation_graph(n) for n in tracer.graph.nodes):
        return None
    loops = torch.arange(num_nodes)
    data = {}
    for relation in schema.relations:
        src = torch.randint(0, num_nodes, (3 * num_nodes,), generator=generator)
        dst = torch.randint(0, num_nodes, (3 * num_nodes,), generator=generator)
        data[relation] = (torch.cat([src, loops]), torch.cat([dst, loops]))
    return dgl.heterograph(data, num_nodes_dict={t: num_nodes for t in schema.ntypes})

"""Models over a heterogeneous graph's metapaths (HAN, DGL's han example): forward's graph is a
heterograph that forward only hands to `dgl.metapath_reachable_graph(g, metapath)`, and every
layer runs on those homogeneous graphs (derived_graphs.py), whose nodes are the nodes of the
type where the metapaths start and end: forward's rows.

No schema is needed to generate the code, which only names the metapaths. The graphs the code
is proven on (the probe's, the check's) are heterographs of a schema inferred from the
metapaths alone: each relation's ends are node types, a metapath's consecutive relations meet
at one type, and every metapath starts and ends at the one type of forward's rows. Everything
else is kept apart, the most general graph the metapaths allow."""

from __future__ import annotations

import dgl

from gnn_codegen.trace.homogenized import apply
from gnn_codegen.trace.graph_lineage import METAPATH
from gnn_codegen.ir import Op, Program
from gnn_codegen.trace.relation_graphs import first_relation
from gnn_codegen.trace.metapath_types import named_rows_type
from gnn_codegen.random_graphs import random_relations

Relation = tuple[str, str, str]
# the node type of forward's rows in the inferred schema
ROWS_TYPE = "node"


def metapath_of(op: Op) -> tuple[str, ...] | None:
    """The metapath of a `dgl.metapath_reachable_graph(g, metapath)` op, as a tuple of edge type
    names, else None."""
    if op.kind != "graph" or not op.args or op.target.rsplit(".", 1)[-1] != METAPATH:
        return None
    metapath = op.args[1] if len(op.args) > 1 else dict(op.kwargs).get("metapath")
    if isinstance(metapath, (tuple, list)) and metapath and all(isinstance(e, str) for e in metapath):
        return tuple(metapath)
    return None


def metapaths(program: Program) -> tuple[tuple[str, ...], ...]:
    """The metapaths forward derives graphs for, in the order it does."""
    found = [path for path in map(metapath_of, program.ops) if path is not None]
    return tuple(dict.fromkeys(found))


def metapath_schema(paths: tuple[tuple[str, ...], ...]) -> tuple[Relation, ...]:
    """The canonical edge types of the most general heterograph with these metapaths (see the
    module docstring), its types named ROWS_TYPE and type1, type2, ..."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(end: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(end, end)
        while parent[end] != end:
            parent[end] = parent[parent[end]]
            end = parent[end]
        return end

    def union(a: tuple[str, str], b: tuple[str, str]) -> None:
        parent[find(a)] = find(b)

    rows = ("rows", "")
    for path in paths:
        union(("src", path[0]), rows)
        union(("dst", path[-1]), rows)
        for before, after in zip(path, path[1:]):
            union(("dst", before), ("src", after))
    relations = sorted({rel for path in paths for rel in path})
    names = {find(rows): named_rows_type() or ROWS_TYPE}  # the user's name for it (metapath_types.py)
    for rel in relations:
        for end in (("src", rel), ("dst", rel)):
            names.setdefault(find(end), f"type{len(names)}")
    return tuple((names[find(("src", rel))], rel, names[find(("dst", rel))]) for rel in relations)


def random_metapath_graph(paths: tuple[tuple[str, ...], ...], num_nodes: int, seed: int = 0,
                          zero_in_degree: bool = True, avg_degree: int = 3) -> dgl.DGLHeteroGraph:
    """A random heterograph of metapath_schema(paths), num_nodes nodes of each type. With
    zero_in_degree, one node in ten of each type receives no edge of any relation (so no
    metapath reaches it); otherwise each relation also links every node to its namesake, so
    that every metapath graph has a self-loop on every node."""
    return random_relations(metapath_schema(paths), num_nodes, seed, zero_in_degree, avg_degree)


def rows_graph(program: Program, g: dgl.DGLGraph) -> dgl.DGLGraph:
    """The graph whose nodes are forward's rows: g, or for a model over metapaths the graph of
    its first (all share their nodes), or for one that makes its heterograph homogeneous the
    graph it makes (homogenized.py)."""
    if program.homogenized is not None:
        return apply(program.homogenized, g)
    relation = first_relation(program)  # relation_graphs.py
    if relation is not None:
        return g[relation]
    paths = metapaths(program)
    return dgl.metapath_reachable_graph(g, paths[0]) if paths else g

"""Trace and check: a forward that takes a heterogeneous graph and first makes it a graph of
one node and edge type, and runs homogeneous layers on that: `g = dgl.to_homogeneous(hg,
ndata=["feat"])` (every type's nodes in one graph, by type offsets; RelGraphConv or GAT layers
then read `g.edata[dgl.ETYPE]`, `g.ndata[dgl.NTYPE]`), or the subgraph of one type,
`dgl.node_type_subgraph(hg, ["paper"])`, `hg.edge_type_subgraph(["cites"])`. The result is a
function of the input graph alone: the generated inference takes the heterograph as forward
does, makes the same graph once at its top, and the homogeneous pipeline runs on it, whose nodes
are forward's rows.

While traced, the conversion is the graph itself (forward's graph stands for the converted one,
which is all forward reads after it); the call is kept (Traced.homogenized: the function's name
and its arguments by keyword) to be spelled again in the generated code. The check before
writing builds a heterograph (random_heterograph) whose types carry the fields forward reads."""

from __future__ import annotations

from typing import Any

import dgl
import torch

from gnn_codegen.errors import GraphUseError

CONVERSION = "to_homogeneous"
# the subgraphs of some types, which forward may take of its heterograph instead
SUBGRAPHS = {"node_type_subgraph": "ntypes", "edge_type_subgraph": "etypes"}
CONVERSIONS = (CONVERSION, *SUBGRAPHS)
_KEYWORDS = {CONVERSION: ("ndata", "edata", "store_type", "return_count"),
             "node_type_subgraph": ("ntypes",), "edge_type_subgraph": ("etypes",)}
# the fields the conversion writes on its result, which the heterograph does not carry
MADE_BY_CONVERSION = frozenset({dgl.NTYPE, dgl.ETYPE, dgl.NID, dgl.EID})
# (the function's name, its arguments by keyword): trace.Traced.homogenized
Conversion = tuple[str, tuple[tuple[str, Any], ...]]


def _names(value: Any) -> tuple[Any, ...] | None:
    """A list of field or type names (a canonical edge type is a tuple of three), as a tuple."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return None
    items = tuple(tuple(v) if isinstance(v, (list, tuple)) else v for v in value)
    ok = all(isinstance(v, str) or (isinstance(v, tuple) and all(isinstance(p, str) for p in v)) for v in items)
    return items if ok else None


def conversion_arguments(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Conversion:
    """`dgl.to_homogeneous(hg, ...)` or `dgl.node_type_subgraph(hg, [...])`: its name and its
    arguments by keyword, as constants to spell again; refused where the result is not one
    graph of one node and edge type that gnn-codegen can rebuild."""
    keywords = _KEYWORDS[name]
    options = dict(zip(keywords, args))
    options.update(kwargs)
    unknown = sorted(set(options) - set(keywords))
    refused = ", ".join(unknown) or ("return_count=True" if options.get("return_count") else "")
    for key in ("ndata", "edata", *SUBGRAPHS.values()):
        if options.get(key) is not None:
            options[key] = _names(options[key])  # hashable, as the frozen Program holds it
            refused = refused or ("" if options[key] is not None else f"{key}=<not names>")
    types = options.get(SUBGRAPHS.get(name, ""))
    if name in SUBGRAPHS and not refused and (types is None or len(types) != 1 or (
            isinstance(types[0], tuple) and types[0][0] != types[0][2])):
        refused = f"{SUBGRAPHS[name]}={list(types or ())!r}"
    if refused:
        raise GraphUseError(
            f"forward calls dgl.{name}(..., {refused}): gnn-codegen follows a heterograph made into "
            "one graph of one node type and one edge type (dgl.to_homogeneous, or the subgraph of "
            "one node type or of one relation within a node type) before anything else reads it. "
            "Make that graph before calling the model, or evaluate this model with its full-graph "
            "forward.")
    return name, tuple((k, options[k]) for k in keywords if k in options)


def spelled_conversion(graph: str, conversion: Conversion) -> str:
    """`dgl.to_homogeneous(g, ndata=["feat"])`, `dgl.node_type_subgraph(g, ntypes=["paper"])`."""
    name, arguments = conversion
    spelled = [f"{k}={_spell(v)}" for k, v in arguments]
    return f"dgl.{name}({', '.join([graph, *spelled])})"


def _spell(value: Any) -> str:
    if isinstance(value, tuple):  # names: a list, as the user writes it
        return repr([v for v in value])
    return repr(value)


def apply(conversion: Conversion, g: dgl.DGLHeteroGraph) -> dgl.DGLGraph:
    """The structure of the graph forward makes of g (no fields): forward's rows are its nodes."""
    name, arguments = conversion
    if name == CONVERSION:
        return dgl.to_homogeneous(g)
    return getattr(dgl, name)(g, **{k: list(v) for k, v in arguments})


def kept_fields(conversion: Conversion, view: str) -> list[str]:
    """The fields of `view` ("ndata" or "edata") that dgl.to_homogeneous carries over."""
    return list(dict(conversion[1]).get(view) or [])


def subgraph_types(conversion: Conversion) -> tuple[str, tuple[str, str, str] | str] | None:
    """For a subgraph of one type: (its node type, its relation: canonical, or a name)."""
    name, arguments = conversion
    if name not in SUBGRAPHS:
        return None
    kept = dict(arguments)[SUBGRAPHS[name]][0]
    if name == "node_type_subgraph":
        return kept, (kept, "r0", kept)
    return (kept[0], kept) if isinstance(kept, tuple) else ("t0", kept)


def random_graph_converted(conversion: Conversion, num_nodes: int, num_ntypes: int, num_etypes: int, seed: int,
                           zero_in_degree: bool) -> dgl.DGLHeteroGraph:
    """The check's heterograph for a forward that converts it: for a subgraph of one type, the
    kept type has num_nodes nodes and relations into and out of another type are beside it."""
    subgraph = subgraph_types(conversion)
    if subgraph is None:
        return random_heterograph(num_nodes, num_ntypes, num_etypes, seed, zero_in_degree)
    ntype, relation = subgraph
    other = f"{ntype}_other"
    kept = relation if isinstance(relation, tuple) else (ntype, relation, ntype)
    spare = f"{kept[1]}_other"
    mixed = random_heterograph(0, 2, 4, seed, zero_in_degree, counts=[num_nodes, num_nodes // 2 + 1])
    # t0 -> the kept type; its relation within itself (r0) -> the kept relation
    names = {"t0": ntype, "t1": other}
    relations = {}
    for src, rel, dst in mixed.canonical_etypes:
        renamed = kept if rel == "r0" else (names[src], f"{spare}_{rel}", names[dst])
        relations[renamed] = mixed.edges(etype=(src, rel, dst))
    counts = {names[t]: mixed.num_nodes(t) for t in mixed.ntypes}
    return dgl.heterograph(relations, num_nodes_dict=counts)


def set_on_kept_type(hg: dgl.DGLHeteroGraph, conversion: Conversion, view: str, key: str, value: torch.Tensor) -> None:
    """Node or edge data of a subgraph of one type, set on that type of hg."""
    subgraph = subgraph_types(conversion)
    assert subgraph is not None
    ntype, relation = subgraph
    if view == "ndata":
        hg.nodes[ntype].data[key] = value
    else:
        hg.edges[relation].data[key] = value


def random_heterograph(num_nodes: int, num_ntypes: int, num_etypes: int, seed: int,
                       zero_in_degree: bool, counts: list[int] | None = None) -> dgl.DGLHeteroGraph:
    """A heterograph of num_nodes nodes over num_ntypes node types ("t0", ...) and num_etypes
    relations ("r0", ...) among them, about 5 in-edges a node; relations within a type come
    first. With zero_in_degree, one node in ten of each type receives no edge; otherwise every
    node of a type with a relation into itself also gets a self-loop there."""
    gen = torch.Generator().manual_seed(seed)
    ntypes = [f"t{i}" for i in range(max(num_ntypes, 1))]
    counts = counts or [num_nodes // len(ntypes) + (i < num_nodes % len(ntypes)) for i in range(len(ntypes))]
    pairs = [(a, a) for a in range(len(ntypes))] + [(a, b) for a in range(len(ntypes))
                                                    for b in range(len(ntypes)) if a != b]
    relations: dict[tuple[str, str, str], tuple[torch.Tensor, torch.Tensor]] = {}
    looped: set[int] = set()
    for r in range(max(num_etypes, 1)):
        a, b = pairs[r % len(pairs)]
        edges = 5 * counts[b] // max(num_etypes, 1) + 1
        src = torch.randint(0, max(counts[a], 1), (edges,), generator=gen)
        dst = torch.randint(0, max(counts[b], 1), (edges,), generator=gen)
        if zero_in_degree:
            keep = dst % 10 != 3
            src, dst = src[keep], dst[keep]
        elif a == b and a not in looped:
            looped.add(a)
            loops = torch.arange(counts[a])
            src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
        if not counts[a] or not counts[b]:
            src, dst = src[:0], dst[:0]
        relations[(ntypes[a], f"r{r}", ntypes[b])] = (src, dst)
    return dgl.heterograph(relations, num_nodes_dict=dict(zip(ntypes, counts)))


def set_by_type(hg: dgl.DGLHeteroGraph, view: str, key: str, value: torch.Tensor) -> None:
    """Rows of the homogeneous graph (every type's, by type offsets, in the order of hg.ntypes or
    hg.canonical_etypes) set on each type of hg, as the conversion will put them back."""
    offset = 0
    if view == "ndata":
        for ntype in hg.ntypes:
            count = hg.num_nodes(ntype)
            hg.nodes[ntype].data[key] = value[offset:offset + count]
            offset += count
    else:
        for etype in hg.canonical_etypes:
            count = hg.num_edges(etype)
            hg.edges[etype].data[key] = value[offset:offset + count]
            offset += count

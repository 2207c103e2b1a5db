"""Trace and check: a forward that takes a heterogeneous graph and first makes it homogeneous
(`g = dgl.to_homogeneous(hg, ndata=["feat"])`, then RelGraphConv or GAT layers on g with
`g.edata[dgl.ETYPE]`, `g.ndata[dgl.NTYPE]`). The homogeneous graph is a function of the input
graph alone: the generated inference takes the heterograph as forward does, converts it once at
its top exactly as forward does, and the homogeneous pipeline runs on the result, whose nodes
(every type's, by type offsets) are forward's rows.

While traced, the conversion is the graph itself (forward's graph stands for the converted one,
which is all forward reads after it); the call's keyword arguments are kept (Traced.homogenized)
to be spelled again in the generated code. The check before writing builds a heterograph
(random_heterograph) whose types carry the fields the conversion keeps, split by type."""

from __future__ import annotations

from typing import Any

import dgl
import torch

from gnn_codegen.errors import GraphUseError

CONVERSION = "to_homogeneous"
_KEYWORDS = ("ndata", "edata", "store_type", "return_count")
# the fields the conversion writes on its result, which the heterograph does not carry
MADE_BY_CONVERSION = frozenset({dgl.NTYPE, dgl.ETYPE, dgl.NID, dgl.EID})


def conversion_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The keyword arguments of `dgl.to_homogeneous(hg, ...)`, as constants to spell again;
    refused where the result is not one graph."""
    options = dict(zip(_KEYWORDS, args))
    options.update(kwargs)
    unknown = set(options) - set(_KEYWORDS)
    if unknown or options.get("return_count"):
        raise GraphUseError(
            f"forward calls dgl.to_homogeneous(..., {', '.join(sorted(unknown)) or 'return_count=True'}): "
            "gnn-codegen follows the conversion when it returns the homogeneous graph alone; "
            "compute the type counts from the heterograph outside the model, or evaluate this "
            "model with its full-graph forward.")
    for key in ("ndata", "edata"):
        if options.get(key) is not None:
            options[key] = tuple(options[key])  # hashable, as the frozen Program holds it
            if not all(isinstance(field, str) for field in options[key]):
                raise GraphUseError(f"forward calls dgl.to_homogeneous(..., {key}=...) with fields that are not names")
    return tuple((k, options[k]) for k in _KEYWORDS if k in options)


def spelled_conversion(graph: str, arguments: tuple[tuple[str, Any], ...]) -> str:
    """`dgl.to_homogeneous(g, ndata=["feat"])`."""
    spelled = [f"{k}={list(v)!r}" if isinstance(v, tuple) else f"{k}={v!r}" for k, v in arguments]
    return f"dgl.{CONVERSION}({', '.join([graph, *spelled])})"


def kept_fields(arguments: tuple[tuple[str, Any], ...], view: str) -> list[str]:
    """The fields of `view` ("ndata" or "edata") that the conversion carries over."""
    return list(dict(arguments).get(view) or [])


def random_heterograph(num_nodes: int, num_ntypes: int, num_etypes: int, seed: int,
                       zero_in_degree: bool, idtype: torch.dtype = torch.int64) -> dgl.DGLHeteroGraph:
    """A heterograph of num_nodes nodes over num_ntypes node types ("t0", ...) and num_etypes
    relations ("r0", ...) among them, about 5 in-edges a node; relations within a type come
    first. With zero_in_degree, one node in ten of each type receives no edge; otherwise every
    node of a type with a relation into itself also gets a self-loop there."""
    gen = torch.Generator().manual_seed(seed)
    ntypes = [f"t{i}" for i in range(max(num_ntypes, 1))]
    counts = [num_nodes // len(ntypes) + (i < num_nodes % len(ntypes)) for i in range(len(ntypes))]
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
    return dgl.heterograph(relations, num_nodes_dict=dict(zip(ntypes, counts)), idtype=idtype)


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

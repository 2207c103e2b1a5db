"""Part of stage 2, trace (and what render and the check need of it): a forward that writes
features given *per node type* on its heterograph and makes it homogeneous, as OpenHGNN's
SimpleHGN and HGT do:

    hg.ndata["h"] = h_dict                 # a tensor per node type
    g = dgl.to_homogeneous(hg, ndata="h")  # every type's rows in one tensor, by type offsets
    h = layers(g, g.ndata["h"], g.ndata[dgl.NTYPE], g.edata[dgl.ETYPE])
    return {ntype: h[torch.where(g.ndata[dgl.NTYPE] == i)] for i, ntype in enumerate(hg.ntypes)}

The homogeneous pipeline (homogenized.py) already runs the layers on the converted graph, whose
nodes are forward's rows. Three things stand between it and such a forward, and this module is
each:

- the input: a dict by node type, which the conversion concatenates in the order of hg.ntypes.
  While traced the parameter stands for that concatenation (it is what the frame of written graph
  data hands to `g.ndata["h"]`); the generated inference concatenates it the same way at its top,
  and the check splits its rows by type for forward (`split_by_type`).
- the heterograph's type lists (`hg.ntypes`, `hg.canonical_etypes`) read in Python: fixed for a
  schema, so they are answered from --metagraph while tracing, and checked where inference starts.
- the result: rows of one type picked by a comparison of dgl.NTYPE with a constant (`h[ntype ==
  k]`, `h[torch.where(ntype == k)]`, `h[torch.where(ntype == k)[0]]`). A graph sorted by type
  puts type k's rows at its offset, so the pick is a split of the homogeneous result by type
  counts, done after the last layer (`split_outputs`): the traced program returns the rows of
  every node, and `nodes=` takes IDs of the types returned."""

from __future__ import annotations

import contextlib
import operator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Iterator

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import GraphUseError
from gnn_codegen.trace.graph_data import graph_data_read
from gnn_codegen.load.hetero_schema import Schema, parse_metagraph

# --metagraph, while a homogeneous model is traced: the schema of forward's heterograph
_SCHEMA: ContextVar[Schema | None] = ContextVar("gnn_codegen_type_offsets_schema", default=None)
# the heterograph's type lists forward may read in Python, answered from the schema
TYPE_LISTS = ("ntypes", "canonical_etypes", "etypes")


@dataclass(frozen=True)
class TypeOffsets:
    """What forward does by node type around its dgl.to_homogeneous (trace.Traced.type_offsets)."""

    relations: tuple[tuple[str, str, str], ...] = ()  # --metagraph, sorted as DGL lists them
    read: tuple[str, ...] = ()  # the type lists forward reads (TYPE_LISTS), checked at entry
    inputs: tuple[str, ...] = ()  # forward's parameters written on the heterograph: dicts by type
    fields: tuple[str, ...] = ()  # the node data keys they are written as
    # forward's result picked by node type: ((its key in forward's dict, or None for a bare
    # value), the type's index in ntypes), in forward's order; () where forward returns rows of all
    picked: tuple[tuple[str | None, int], ...] = ()

    @property
    def ntypes(self) -> tuple[str, ...]:
        return Schema(self.relations).ntypes

    def type_list(self, name: str) -> list[Any]:
        if name == "ntypes":
            return list(self.ntypes)
        if name == "canonical_etypes":
            return list(self.relations)
        return [r for _, r, _ in self.relations]


@contextlib.contextmanager
def known_types(metagraph: str | None) -> Iterator[None]:
    """While inside, a forward that converts its heterograph reads its types from `metagraph`."""
    token = _SCHEMA.set(parse_metagraph(metagraph) if metagraph else None)
    try:
        yield
    finally:
        _SCHEMA.reset(token)


def known_schema() -> Schema | None:
    """--metagraph's schema while a homogeneous model is traced, or None."""
    return _SCHEMA.get()


def type_list(tracer: Any, name: str) -> list[Any] | None:
    """`hg.ntypes` (a type list) of forward's heterograph while traced: the schema's, recorded as
    read; None without --metagraph (then refused where forward decides on it)."""
    schema = _SCHEMA.get()
    if schema is None:
        return None
    found: TypeOffsets = getattr(tracer, "type_offsets", None) or TypeOffsets(schema.relations)
    tracer.type_offsets = replace(found, read=tuple(dict.fromkeys((*found.read, name))))
    return found.type_list(name)


def written_inputs(tracer: Any, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """At `dgl.to_homogeneous(hg, ndata=[...])`: the keys of `ndata` that forward wrote itself from
    one of its parameters (`hg.ndata["h"] = h_dict`) are that parameter, a dict by node type,
    concatenated by the conversion; recorded, and left out of the call the generated code makes
    (it concatenates the parameter instead). Returns the options without them, and the fields
    the converted graph carries from forward's parameters (key -> its proxy), which it keeps
    after a `with hg.local_scope():` ends."""
    frames = getattr(tracer, "graph_frames", {}).get("src", {})
    keys = options.get("ndata") or ()
    keys = (keys,) if isinstance(keys, str) else tuple(keys)
    written = {key: frames[key] for key in keys if key in frames}
    if not written:
        return options, {}
    for key, value in written.items():
        node = getattr(value, "node", None)
        if not isinstance(node, fx.Node) or node.op != "placeholder":
            raise GraphUseError(
                f"forward writes a computed value as hg.ndata[{key!r}] before dgl.to_homogeneous: "
                "gnn-codegen follows a heterograph that carries forward's own inputs (a tensor per "
                "node type, `hg.ndata[\"h\"] = h_dict`) into the conversion. Compute that value from "
                "the homogeneous graph's rows after the conversion, or evaluate this model with its "
                "full-graph forward.")
    schema = _SCHEMA.get()
    found: TypeOffsets = getattr(tracer, "type_offsets", None) or TypeOffsets(schema.relations if schema else ())
    tracer.type_offsets = replace(found, inputs=(*found.inputs, *(v.node.target for v in written.values())),
                                  fields=(*found.fields, *written))
    kept = tuple(key for key in keys if key not in written)
    return {k: v for k, v in {**options, "ndata": kept}.items() if k != "ndata" or kept}, written


def _type_index(mask: Any, graph_arg: str) -> int | None:
    """k for `g.ndata[dgl.NTYPE] == k` (either side), None for anything else."""
    if not (isinstance(mask, fx.Node) and mask.op == "call_function" and mask.target is operator.eq):
        return None
    a, b = mask.args
    if isinstance(b, fx.Node):
        a, b = b, a
    read = graph_data_read(a, graph_arg) if isinstance(a, fx.Node) else None
    if read != ("ndata", dgl.NTYPE) or not isinstance(b, int) or isinstance(b, bool):
        return None
    return b


def _picked(node: Any, graph_arg: str) -> tuple[fx.Node, int] | None:
    """(h, k) for `h[mask]`, `h[torch.where(mask)]`, `h[torch.where(mask)[0]]` with mask the
    node type test of _type_index."""
    if not (isinstance(node, fx.Node) and node.op == "call_function" and node.target is operator.getitem):
        return None
    rows, index = node.args
    if not isinstance(rows, fx.Node) or not isinstance(index, fx.Node):
        return None
    if index.op == "call_function" and index.target is operator.getitem and index.args[1] == 0:
        index = index.args[0]  # torch.where(mask)[0]
    if index.op == "call_function" and index.target is torch.where and len(index.args) == 1 and not index.kwargs:
        index = index.args[0]
    k = _type_index(index, graph_arg)
    return None if k is None else (rows, k)


def split_outputs(gm: fx.GraphModule, graph_arg: str, found: TypeOffsets | None,
                  conversion: tuple[str, Any] | None) -> TypeOffsets | None:
    """forward's result picked by node type (a value, or a dict by type of such): the program
    returns the rows of every node instead, and the picks are recorded to be made by the
    generated code after its last layer. Only where forward makes its heterograph homogeneous
    (dgl.to_homogeneous: the graph sorted by type)."""
    if conversion is None or conversion[0] != "to_homogeneous":
        return found
    output = next(n for n in gm.graph.nodes if n.op == "output")
    value = output.args[0]
    items = list(value.items()) if isinstance(value, dict) else [(None, value)]
    picks = [(key, _picked(v, graph_arg)) for key, v in items]
    if not picks or any(p is None for _, p in picks) or not all(isinstance(k, (str, type(None))) for k, _ in picks):
        return found
    rows = {p[0] for _, p in picks if p is not None}
    if len(rows) != 1:  # the picks of one result, each a type of it
        return found
    (whole,) = rows
    output.args = (whole,)
    # the picks' own nodes (the index, torch.where, the test, the read of dgl.NTYPE), now unused
    chain, erased = [v for _, v in items], set()
    while chain:
        node = chain.pop()
        if isinstance(node, fx.Node) and node.op == "call_function" and not node.users and node not in erased:
            erased.add(node)
            chain += [a for a in node.args if isinstance(a, fx.Node)]
            gm.graph.erase_node(node)
    gm.recompile()
    return replace(found or TypeOffsets(), picked=tuple((key, p[1]) for key, p in picks if p is not None))


def split_by_type(hg: dgl.DGLHeteroGraph, value: torch.Tensor) -> dict[str, torch.Tensor]:
    """Rows of every type by type offsets (as dgl.to_homogeneous orders them), as a dict by type:
    the check's input for a forward that takes one (inputs)."""
    return dict(zip(hg.ntypes, torch.split(value, [hg.num_nodes(t) for t in hg.ntypes])))


def random_typed_heterograph(found: TypeOffsets, num_nodes: int, seed: int) -> dgl.DGLHeteroGraph:
    """The check's heterograph: --metagraph's types and relations, num_nodes nodes over its types,
    one destination in ten without in-edges."""
    from gnn_codegen.load.hetero_schema import random_heterograph

    schema = Schema(found.relations)
    counts = {t: num_nodes // len(schema.ntypes) + (i < num_nodes % len(schema.ntypes))
              for i, t in enumerate(schema.ntypes)}
    return random_heterograph(schema, counts, avg_degree=5, seed=seed)



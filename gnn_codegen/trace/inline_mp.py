"""Message passing written inline in forward, as DGL's JKNet example and tutorials write it:

    g.ndata["h"] = h
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
    h = g.ndata.pop("h")

While forward is traced (graph_proxy.py), graph data writes are kept as a symbolic frame of the
graph, and `update_all` with DGL's built-in message and reduce functions becomes one call of
`update_all` below: a message-passing op like a module call, reading the fields its message
reads (source rows for `u`, destination rows for `v`, edges for `e`) and making the reduced
field. Built-in functions read exactly the in-edges of each destination node, so the op is
exact on a 1-hop block. The generated code writes it back as the user did, on the block."""

from __future__ import annotations

from typing import Any

import dgl
import dgl.function

# a built-in message's operand targets, as DGL numbers them
_TARGETS = {0: "u", 1: "v", 2: "e"}
# the rows each target is read at (plan.Space), and the data view of a graph that holds them
ROLE = {"u": "src", "v": "dst", "e": "edge"}
VIEW = {"src": "srcdata", "dst": "dstdata", "edge": "edata"}
REDUCERS = frozenset({"sum", "mean", "max", "min"})

# (name, in-field, ..., out-field): fn.copy_u("h", "m") is ("copy_u", "h", "m")
Spec = tuple[str, ...]


def message_spec(message: Any) -> Spec | None:
    """A built-in message function as plain values (torch.fx keeps them as constants), or None
    for a Python function (a UDF, which may read anything of its edges)."""
    name = getattr(message, "name", None)
    if isinstance(message, dgl.function.message.CopyMessageFunction) and name:
        return (name, message.in_field, message.out_field)
    if isinstance(message, dgl.function.message.BinaryMessageFunction) and name:
        return (name, message.lhs_field, message.rhs_field, message.out_field)
    return None


def reduce_spec(reduce: Any) -> Spec | None:
    if isinstance(reduce, dgl.function.reducer.SimpleReduceFunction) and reduce.name in REDUCERS:
        return (reduce.name, reduce.msg_field, reduce.out_field)
    return None


def message_fields(message: Spec) -> list[tuple[str, str]]:
    """(target "u" / "v" / "e", key) of each field a message reads, in its arguments' order."""
    name = message[0]
    if name.startswith("copy_"):
        return [(name[len("copy_"):], message[1])]
    lhs, _, rhs = name.split("_")
    return [(lhs, message[1]), (rhs, message[2])]


def build(spec: Spec) -> Any:
    return getattr(dgl.function, spec[0])(*spec[1:])


# the reduce spec of `graph.apply_edges(message)`: ("apply_edges", the field it makes), an edge
# field, no reduction (edge_functions.py)
APPLY_EDGES = "apply_edges"
# copy_u / copy_v applied to edges: each edge's source (destination) row, by index, which DGL's
# kernels do only for floats: (its end in graph.edges())
GATHERS = {"copy_u": 0, "copy_v": 1}


def update_all(graph: dgl.DGLGraph, message: Spec, reduce: Spec, *fields: Any) -> Any:
    """`graph.update_all(message, reduce)` with the fields the message reads set to `fields`
    (message_fields order), in a local scope: the reduced field on destination rows; for a
    reduce spec of APPLY_EDGES, `graph.apply_edges(message)`: the message per edge."""
    with graph.local_scope():
        for (target, key), value in zip(message_fields(message), fields):
            getattr(graph, VIEW[ROLE[target]])[key] = value
        if reduce[0] == APPLY_EDGES and message[0] in GATHERS:  # any dtype, as edges.src[k] reads it
            return fields[0][graph.edges()[GATHERS[message[0]]]]
        if reduce[0] == APPLY_EDGES:
            graph.apply_edges(build(message))
            return graph.edata[reduce[-1]]
        graph.update_all(build(message), build(reduce))
        return graph.dstdata[reduce[-1]]


def spell(spec: Spec, functions: str) -> str:
    """`fn.copy_u("h", "m")`: a built-in as the user's file writes it (`functions`: its name for
    dgl.function)."""
    fields = ", ".join(f'"{field}"' for field in spec[1:])
    return f"{functions}.{spec[0]}({fields})"

"""The graph argument while forward is traced (trace.py): one placeholder that also behaves as a
list of blocks. Message passing written inline (`g.ndata["h"] = h`, `g.update_all(fn.copy_u(...),
fn.sum(...))`, `g.ndata.pop("h")`, `with g.local_scope():`) is followed through a symbolic frame
of the graph's data and becomes message-passing ops (inline_mp.py); uses in Python that a
layer-wise loop cannot follow are refused on the spot, naming the construct (`for ntype in
g.ntypes`, `"w" in g.edata`, `g.apply_nodes(...)`) instead of surfacing as torch.fx's own errors.
`g.apply_edges(...)` is followed too: a built-in, or a Python edge function (edge_functions.py)."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import dgl
import torch.fx as fx

from gnn_codegen.trace.derived_graphs import converted
from gnn_codegen.trace.graph_lineage import CONVERTS, DERIVED
from gnn_codegen.errors import GraphUseError
from gnn_codegen.trace.edge_functions import EdgeFieldError, follow, gather_message
from gnn_codegen.trace.metapath_types import type_list as metapath_type_list
from gnn_codegen.trace.inline_mp import (
    APPLY_EDGES,
    ROLE,
    VIEW,
    message_fields,
    message_spec,
    reduce_spec,
    update_all,
)
from gnn_codegen.trace.relation_graphs import is_relation_key, traced_relation_graph
from gnn_codegen.trace.several_graphs import graph_item, is_graph_item
from gnn_codegen.trace.type_offsets import TYPE_LISTS, type_list

_TYPE_LISTS = frozenset({"ntypes", "etypes", "canonical_etypes", "srctypes", "dsttypes"})
_DATA_VIEWS = frozenset({"ndata", "edata", "srcdata", "dstdata", "nodes", "edges", "srcnodes", "dstnodes"})
# Graph methods that are message passing written inline in forward.
_INLINE = frozenset({
    "update_all", "apply_edges", "multi_update_all", "send_and_recv", "pull", "push", "apply_nodes",
    "local_scope", "local_var", "prop_nodes", "prop_edges", "filter_nodes", "filter_edges",
})
_HETERO = (
    "gnn-codegen follows a heterogeneous graph through HeteroGraphConv layers, or through a "
    "forward whose first step makes it homogeneous (g = dgl.to_homogeneous(hg, ndata=[...])) and "
    "that reads nothing else of the heterograph after but its type lists, which it then takes from "
    "--metagraph (give the graph's relations: --metagraph SRC:REL:DST,...). Compute what else "
    "forward reads of the types beforehand (features or embeddings per type, stored as node data "
    "the conversion carries), or evaluate this model with its full-graph forward."
)
_INLINE_WAY_OUT = (
    "gnn-codegen follows message passing written inline in forward only through graph data "
    "writes and reads (g.ndata, srcdata, dstdata, edata), `with g.local_scope():`, "
    "g.update_all with DGL's built-in message and reduce functions (dgl.function), and "
    "g.apply_edges with a built-in or a Python edge function that reads edges.src, edges.dst and "
    "edges.data. Move the rest "
    "into an nn.Module whose forward takes (graph, features) and call that module in forward "
    "(gnn-codegen proves such a module exact on blocks), or evaluate this model with its "
    "full-graph forward."
)
# Where a data view writes and reads in the symbolic frame of the traced graph: forward's graph
# stands for every block, whose source and destination rows are all of the graph's nodes.
_WRITES = {"ndata": ("src", "dst"), "srcdata": ("src",), "dstdata": ("dst",), "edata": ("edge",)}
_READS = {"ndata": ("dst", "src"), "srcdata": ("src",), "dstdata": ("dst",), "edata": ("edge",)}


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _refuse(what: str, why: str) -> NoReturn:
    raise GraphUseError(f"{what}: {why}")


class GraphAttribute(fx.proxy.Attribute):
    """`g.<name>` while tracing: what forward may do with it (call a count, index its data) is
    recorded as usual; deciding in Python on it is refused."""

    def _what(self) -> str:
        return f"{_graph_name(self.root)}.{self.attr}"

    def _decides(self, how: str) -> NoReturn:
        if self.attr in _TYPE_LISTS:
            _refuse(f"forward {how} {self._what()} (the graph's types) in Python", _HETERO)
        if self.attr in _DATA_VIEWS:
            _refuse(
                f"forward {how} {self._what()} (which data the graph carries) in Python",
                "layer-wise inference cannot decide this once for every graph. Pass the data "
                "forward reads as an argument of forward (def forward(self, g, x, w=None)), "
                "or evaluate this model with its full-graph forward.",
            )
        _refuse(f"forward {how} {self._what()} in Python",
                "a layer-wise loop cannot follow a decision on the graph's structure; compute it "
                "outside the model, or evaluate this model with its full-graph forward.")

    def __iter__(self) -> Any:
        self._decides("loops over")

    def __contains__(self, item: Any) -> bool:
        if self.attr in _READS and isinstance(item, str):
            if any(item in self._frames()[rows] for rows in _READS[self.attr]):
                return True  # forward wrote it itself
            # the graph's own data: decided once, for graphs that carry it if --feat-dims names
            # it, and checked when inference is called (render.py)
            view = "edata" if self.attr == "edata" else "ndata"
            present = item in getattr(self.tracer, "declared_data", frozenset())
            decisions = getattr(self.tracer, "graph_decisions", {})
            self.tracer.graph_decisions = {**decisions, (view, item): present}  # type: ignore[attr-defined]
            return present
        self._decides(f"tests {item!r} in" if isinstance(item, str) else "tests membership in")

    def __bool__(self) -> bool:
        if self.attr == "is_homogeneous":  # `assert graph.is_homogeneous` (DGL's TAGConv): the
            return True  # runtime batches homogeneous graphs only
        self._decides("branches on")

    def __len__(self) -> int:
        self._decides("takes the length of")

    def _frames(self) -> dict[str, dict[str, Any]]:
        """The graph data forward has written so far: rows ("src", "dst", "edge") -> key -> value."""
        if not hasattr(self.tracer, "graph_frames"):
            self.tracer.graph_frames = {"src": {}, "dst": {}, "edge": {}}  # type: ignore[attr-defined]
        return self.tracer.graph_frames  # type: ignore[attr-defined]

    def __setitem__(self, key: Any, value: Any) -> None:
        if self.attr not in _WRITES or not isinstance(key, str):
            _refuse(f"forward writes graph data ({self._what()}[{key!r}] = ...)", _INLINE_WAY_OUT)
        for rows in _WRITES[self.attr]:
            self._frames()[rows][key] = value

    def __getitem__(self, key: Any) -> Any:
        if self.attr in _READS and isinstance(key, str):
            for rows in _READS[self.attr]:
                if key in self._frames()[rows]:
                    return self._frames()[rows][key]
        if self.attr in _READS and key in self.root.__dict__.get("fields", {}):  # type_offsets.py
            return self.root.__dict__["fields"][key]  # forward's input, carried by the conversion
        return super().__getitem__(key)  # the graph's own data: an input (graph_data.py)

    def _pop(self, key: Any, *default: Any) -> Any:
        value = self[key]
        for rows in _WRITES.get(self.attr, ()):
            self._frames()[rows].pop(key, None)
        return value

    def _update(self, values: Any) -> None:
        for key, value in dict(values).items():
            self[key] = value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.attr == "local_scope" and not args and not kwargs:
            return _LocalScope(self._frames())
        if self.attr == "update_all":
            return self._update_all(*args, **kwargs)
        if self.attr == "apply_edges":
            return self._apply_edges(*args, **kwargs)
        if self.attr in CONVERTS and self.root.node.op == "placeholder":  # hg.node_type_subgraph([...])
            return converted(self.tracer, self.root, self.attr, args, kwargs, BlockProxy)
        if self.attr in DERIVED and hasattr(dgl, self.attr):  # g.add_self_loop(): as dgl.add_self_loop(g)
            function = getattr(dgl, self.attr)  # DGL's own, also while derived_graphs.py wraps it
            function = getattr(function, "__wrapped__", function)
            node = self.tracer.create_proxy("call_function", function, (self.root, *args), kwargs).node
            return BlockProxy(node, self.tracer)
        if self.attr in _INLINE:
            _refuse(f"forward calls {self._what()}({'...' if args or kwargs else ''})", _INLINE_WAY_OUT)
        return super().__call__(*args, **kwargs)

    def _update_all(self, message_func: Any = None, reduce_func: Any = None, apply_node_func: Any = None,
                    etype: Any = None) -> None:
        message, reduce = message_spec(message_func), reduce_spec(reduce_func)
        if message is None or reduce is None or apply_node_func is not None or etype is not None:
            what = "a Python message function" if message is None else (
                "a Python reduce function" if reduce is None else "apply_node_func or etype")
            _refuse(f"forward calls {self._what()}(...) with {what}", _INLINE_WAY_OUT)
        fields = []
        for target, key in message_fields(message):
            rows = ROLE[target]
            written = self._frames()[rows].get(key)
            fields.append(written if written is not None else GraphAttribute(self.root, VIEW[rows])[key])
        result = self.tracer.create_proxy("call_function", update_all, (self.root, message, reduce, *fields), {})
        # the reduced field is node data of the graph: destination rows, and for the whole
        # graph (which every block stands for here) source rows too
        for rows in ("dst", "src"):
            self._frames()[rows][reduce[-1]] = result

    def _apply_edges(self, func: Any, edges: Any = dgl.base.ALL, etype: Any = None) -> None:
        """`g.apply_edges(fn.u_dot_v(...))`, or with a Python edge function (edge_functions.py):
        its fields become edge data of the frame."""
        if edges is not dgl.base.ALL or etype is not None:
            _refuse(f"forward calls {self._what()}(...) on some edges or an edge type", _INLINE_WAY_OUT)
        message = message_spec(func)
        if message is not None:
            self._frames()["edge"][message[-1]] = self._message(message, (APPLY_EDGES, message[-1]))
            return
        if not callable(func):
            _refuse(f"forward calls {self._what()}({func!r})", _INLINE_WAY_OUT)

        def gathered(end: str, key: str) -> Any:
            message = gather_message(end, key)
            return self._message(message, (APPLY_EDGES, message[-1]))

        def edge_field(key: str) -> Any:
            written = self._frames()["edge"].get(key)
            return written if written is not None else GraphAttribute(self.root, "edata")[key]

        try:
            fields = follow(func, gathered, edge_field)
        except (EdgeFieldError, TypeError) as exc:
            _refuse(f"forward calls {self._what()}(...) with a Python edge function that reads {exc}",
                    "gnn-codegen follows an edge function that reads only edges.src[key], edges.dst[key] and "
                    "edges.data[key] and returns a dict of fields. Compute the rest outside the edge "
                    "function, or evaluate this model with its full-graph forward.")
        self._frames()["edge"].update(fields)

    def _message(self, message: Any, reduce: Any) -> Any:
        """The traced inline call of `message` (and `reduce`) on the fields the frame holds."""
        fields = []
        for target, key in message_fields(message):
            rows = ROLE[target]
            written = self._frames()[rows].get(key)
            fields.append(written if written is not None else GraphAttribute(self.root, VIEW[rows])[key])
        return self.tracer.create_proxy("call_function", update_all, (self.root, message, reduce, *fields), {})

    def __getattr__(self, name: str) -> Any:
        if self.attr in _WRITES and name == "pop":
            return self._pop
        if self.attr in _WRITES and name == "update":
            return self._update
        if self.attr in _DATA_VIEWS and name in ("clear", "setdefault"):
            _refuse(f"forward changes graph data ({self._what()}.{name}(...))", _INLINE_WAY_OUT)
        return super().__getattr__(name)


# the decision (view, key) that forward's graph is one graph, not a batch of several
BATCH_SIZE = "batch_size"


class _LocalScope:
    """`with g.local_scope():` while tracing: the graph data written inside is forgotten after."""

    def __init__(self, frames: dict[str, dict[str, Any]]):
        self.frames = frames
        self.saved: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> None:
        self.saved = {rows: dict(values) for rows, values in self.frames.items()}

    def __exit__(self, *exc: Any) -> None:
        for rows, values in self.saved.items():
            self.frames[rows].clear()
            self.frames[rows].update(values)


def _attribute_of(graph: fx.Proxy, name: str) -> Any:
    """`graph.<name>` of the graph placeholder or a block of it: watched (GraphAttribute), but
    `graph.batch_size` (ChebConv without lambda_max: `[2] * graph.batch_size`) is decided as one
    graph, which layer-wise inference runs over (a batch of graphs is one graph to its blocks),
    and checked when inference is called (a decision, as for `"w" in g.edata`)."""
    if name in TYPE_LISTS and not graph.__dict__.get("converted"):  # hg.ntypes, from --metagraph
        types = type_list(graph.tracer, name)
        if types is not None:
            return types
    known = metapath_type_list(graph, name)  # a metapath graph's types: fixed by the schema (metapath_types.py)
    if known is not None:
        return known
    if name != "batch_size":
        return GraphAttribute(graph, name)
    decisions = getattr(graph.tracer, "graph_decisions", {})
    graph.tracer.graph_decisions = {**decisions, (BATCH_SIZE, "1"): True}  # type: ignore[attr-defined]
    return 1


def _graph_name(proxy: fx.Proxy) -> str:
    if is_graph_item(proxy.node):  # gs[1]
        return f"{proxy.node.args[0].target}[{proxy.node.args[1]}]"  # type: ignore[union-attr]
    return str(proxy.node.target) if proxy.node.op == "placeholder" else proxy.node.name


class BlockListProxy(fx.Proxy):
    """The graph placeholder, which also behaves as a list of `num_blocks` blocks, so
    `zip(self.layers, blocks)`, `blocks[i]`, `blocks[-1]` and `len(blocks)` trace to the one graph.
    Each position is its own proxy object, so `block is blocks[-1]` stays true only for the last."""

    num_blocks = 1
    used_as_list = False
    # where forward measured the list (`len(blocks)`, `for block in blocks`, `enumerate(blocks)`,
    # `zip(..., blocks)`): (file, line) of the calling frame, to name it when the depth of
    # message passing follows the count (block_count.py)
    measures: tuple[tuple[str, int], ...] = ()

    def _measured(self) -> None:
        # the caller of __len__/__iter__: the user's frame (len, zip and enumerate are C code; the
        # len of traced_len.py is ours)
        frame = sys._getframe(2)
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            frame = frame.f_back
        type(self).measures = (*type(self).measures, (frame.f_code.co_filename, frame.f_lineno))
    # each item a graph of its own (several_graphs.py), to tell blocks from graphs side by side
    distinct_items = False

    def _as_list(self) -> list[fx.Proxy]:
        type(self).used_as_list = True
        if "_items" not in self.__dict__:
            self.__dict__["_items"] = [
                BlockProxy(self.tracer.create_node("call_function", graph_item, (self.node, i), {}), self.tracer)
                if type(self).distinct_items else BlockProxy(self.node, self.tracer)
                for i in range(type(self).num_blocks)
            ]
        return list(self.__dict__["_items"])

    def __iter__(self) -> Any:
        self._measured()
        return iter(self._as_list())

    def __len__(self) -> int:
        self._measured()
        return len(self._as_list())

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, slice)):
            return self._as_list()[index]
        if is_relation_key(index):  # hg[relation]: the graph of one relation (relation_graphs.py)
            return traced_relation_graph(self, index, BlockProxy)
        return super().__getitem__(index)

    def __getattr__(self, name: str) -> Any:
        return _attribute_of(self, name)

    def __setitem__(self, key: Any, value: Any) -> None:
        _refuse(f"forward assigns {_graph_name(self)}[{key!r}]", _INLINE_WAY_OUT)


class BlockProxy(fx.Proxy):
    """One block of the list: the same placeholder, its attributes watched the same way."""

    def __getattr__(self, name: str) -> Any:
        return _attribute_of(self, name)

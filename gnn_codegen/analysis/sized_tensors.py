"""Constant tensors made with a row count: `torch.ones(graph.num_edges(), 1)` (DGL's APPNPConv:
an edge weight of one per edge), `feat.new_zeros((feat.shape[0], d))` (GatedGraphConv's padding),
`torch.zeros(x.shape[0], d)`; and `dgl.broadcast_nodes(graph, x)` of a one-row x (ChebConv's
`lambda_max` of a single graph), which is x itself wherever it is read: a row broadcasts.

Every row of such a tensor is the same constant, so it is row-wise: made on a batch's rows
with the batch's count, it holds exactly the rows the full graph's would. The generated code
makes it where it is used, from the count as forward spells it (`block.num_edges()`,
`feat.shape[0]`), never as a stored tensor. A constant broadcast over a different number of
rows still gives the same values, and a count that disagrees with its readers' rows is a shape
error, never a different number.

torch.fx records `torch.ones(proxy, 1)` only when torch dispatches on the proxy, which its
argument parser does not do for sizes: while forward is traced, the factories below are wrapped
(as torch.fx's autowrap wraps a module's globals) so that a call with a traced size becomes a
node of the program."""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any, Iterator

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.ir import Op, Program, Ref
from gnn_codegen.trace.patching import replaced
from gnn_codegen.trace.static_shapes import static_shape

# torch functions that make a tensor of one constant from a size (torch.empty: of no value, so
# whatever is written into it later decides)
FACTORIES = ("ones", "zeros", "full", "empty")
# Tensor methods that do the same, on the dtype and device of the tensor they are called on
FACTORY_METHODS = frozenset({"new_ones", "new_zeros", "new_full", "new_empty"})
# graph methods whose count is a block's own on a batch: one per in-edge of its destinations
EDGE_COUNTS = frozenset({"num_edges", "number_of_edges"})


def _has_proxy(value: Any) -> bool:
    if isinstance(value, fx.Proxy):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_proxy(v) for v in value)
    return False


@contextlib.contextmanager
def traced_factories(tracer: fx.Tracer, user_globals: dict[str, Any]) -> Iterator[None]:
    """While inside, torch's constant factories called with a traced size record a call (also
    where the user's file imported them by name: `from torch import zeros`)."""
    originals = {name: getattr(torch, name) for name in FACTORIES}
    imported = {key: name for key, value in user_globals.items() for name, fn in originals.items() if value is fn}

    def wrapped(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if _has_proxy(args) or _has_proxy(tuple(kwargs.values())):
                return tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)

        return call

    wrappers = {name: wrapped(fn) for name, fn in originals.items()}
    broadcast = dgl.broadcast_nodes
    # DGL's modules import it by name (`from .... import broadcast_nodes` in ChebConv's)
    holders = [m for name, m in list(sys.modules.items())
               if (name == "dgl" or name.startswith("dgl.")) and getattr(m, "broadcast_nodes", None) is broadcast]
    holders += [user_globals] if user_globals.get("broadcast_nodes") is broadcast else []

    @functools.wraps(broadcast)
    def broadcast_one_row(graph: Any, graph_feat: Any, *, ntype: Any = None) -> Any:
        if not (isinstance(graph, fx.Proxy) and graph.tracer is tracer):
            return broadcast(graph, graph_feat, ntype=ntype)
        if isinstance(graph_feat, fx.Proxy):
            shape = static_shape(graph_feat.node, tracer.root)
        else:
            shape = tuple(graph_feat.shape) if isinstance(graph_feat, torch.Tensor) else None
        if ntype is not None or not shape or shape[0] != 1:
            raise UnsupportedOperationError(
                "dgl.broadcast_nodes spreads per-graph values over the nodes of a batched graph, "
                "and layer-wise inference runs over one graph's nodes, whatever their graph: give "
                "one value for the whole graph (a tensor of one row), or evaluate this model with "
                "its full-graph forward"
            )
        return graph_feat  # the same row for every node, read where it broadcasts

    # (a module or a dict of globals, the name, DGL's or torch's function, its wrapper)
    patches: list[tuple[Any, str, Any, Any]] = [(torch, name, fn, wrappers[name]) for name, fn in originals.items()]
    patches += [(user_globals, key, originals[name], wrappers[name]) for key, name in imported.items()]
    patches += [(holder, "broadcast_nodes", broadcast, broadcast_one_row) for holder in holders]
    with replaced(patches):
        yield


def is_factory(op: Op) -> bool:
    if op.kind == "function":  # spelled as the user's file does: torch.ones, th.ones
        return op.target.rsplit(".", 1)[-1] in FACTORIES
    return op.kind == "method" and op.target in FACTORY_METHODS


def _sizes(op: Op) -> tuple[Any, ...]:
    """The size a factory is given: `torch.ones(n, 1)`, `torch.ones((n, 1))`, `size=(n, 1)`,
    `x.new_zeros((n, d))`."""
    args = op.args[1:] if op.kind == "method" else op.args
    if op.target.rsplit(".", 1)[-1] in ("full", "new_full"):
        args = args[:1]  # the fill value follows the size
    kwargs = dict(op.kwargs)
    if "size" in kwargs:
        args = (kwargs["size"],)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(args)


def row_count_of(op: Op, program: Program) -> tuple[str, str] | None:
    """What a factory's first size counts (count_of), or None."""
    sizes = _sizes(op)
    return count_of(sizes[0], program) if sizes else None


def count_of(value: Any, program: Program) -> tuple[str, str] | None:
    """What a number forward computed counts: ("tensor", name) for a tensor's rows
    (`x.shape[0]`, `x.size(0)`, `len(x)`), ("edges", graph) for a graph's edges
    (`g.num_edges()`); None for anything else (a fixed number, a width)."""
    if not isinstance(value, Ref):
        return None
    count = program.op(value.name)
    if count.kind == "method" and count.target in EDGE_COUNTS and len(count.args) == 1 and not count.kwargs:
        graph = count.args[0]
        if isinstance(graph, Ref) and program.op(graph.name).kind == "graph":
            return ("edges", graph.name)
        return None
    if count.kind == "method" and count.target == "size" and count.args[1:] == (0,) and not count.kwargs:
        counted = count.args[0]
    elif count.kind == "function" and count.target == "len" and len(count.args) == 1:
        counted = count.args[0]
    elif count.kind == "function" and count.target == "operator.getitem" and count.args[1:] == (0,):
        shape = count.args[0]
        if not isinstance(shape, Ref):
            return None
        read = program.op(shape.name)
        if read.kind == "function" and read.target == "getattr" and read.args[1:] == ("shape",):
            counted = read.args[0]
        elif read.kind == "method" and read.target == "size" and len(read.args) == 1 and not read.kwargs:
            counted = read.args[0]
        else:
            return None
    else:
        return None
    return ("tensor", counted.name) if isinstance(counted, Ref) else None


def prefix_count(op: Op) -> Any:
    """`h[: x.size(0)]` (GCN2Conv's `feat_0[: feat.size(0)]`, also `[0:n]`, `[:n, ...]`): the
    count n a prefix of rows is sliced to, or None."""
    if op.kind != "function" or op.target != "operator.getitem" or len(op.args) != 2:
        return None
    index = op.args[1]
    if isinstance(index, tuple) and index and all(i == slice(None) or i is Ellipsis for i in index[1:]):
        index = index[0]
    if not isinstance(index, slice) or index.start not in (None, 0) or index.step not in (None, 1):
        return None
    return index.stop

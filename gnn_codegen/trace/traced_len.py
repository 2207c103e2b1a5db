"""`len(x)` of a traced tensor while forward is traced (BWGNN's `torch.zeros([len(in_feat), 0])`):
the tensor's first dimension, its rows, recorded as `x.shape[0]`, which the program then follows
like any count of rows (sized_tensors.py: made per batch with the batch's count). torch.fx refuses
`len` on a proxy unless the user's file calls torch.fx.wrap('len'); the user's files get a `len` of
their own for the time of the trace instead, which is the builtin for everything but a tensor."""

from __future__ import annotations

import builtins
import contextlib
import operator
from typing import Any, Iterator

import torch.fx as fx

from gnn_codegen.trace.graph_proxy import BlockListProxy, BlockProxy


def _len(obj: Any) -> int | fx.Proxy:
    # a list of blocks has its own length; a graph has none (len(g) fails as in Python); a
    # shape's length (`len(h.shape)`) is its tensor's dimensions, which the trace decides
    # (static_decisions.MetadataProxy)
    if isinstance(obj, fx.Proxy) and not isinstance(obj, (BlockListProxy, BlockProxy)) \
            and not _is_shape(obj.node):
        return obj.shape[0]
    return builtins.len(obj)


def _is_shape(node: fx.Node) -> bool:
    """`h.shape`, `h.size()`, or a slice of either (`h.shape[1:]`)."""
    if node.op == "call_function" and node.target is getattr and node.args[1:] == ("shape",):
        return True
    if node.op == "call_method" and node.target == "size" and len(node.args) == 1 and not node.kwargs:
        return True
    if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[1], slice):
        return isinstance(node.args[0], fx.Node) and _is_shape(node.args[0])
    return False


@contextlib.contextmanager
def traced_len(user_globals: list[dict[str, Any]]) -> Iterator[None]:
    """While inside, `len` in each of these globals (the files of forward and of the user's
    modules it calls) is _len; after, those globals are as before."""
    added = []
    try:
        for namespace in user_globals:
            if "len" not in namespace and not any(namespace is a for a in added):
                namespace["len"] = _len
                added.append(namespace)
        yield
    finally:
        for namespace in added:
            if namespace.get("len") is _len:
                del namespace["len"]

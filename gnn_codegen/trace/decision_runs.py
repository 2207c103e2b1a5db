"""Part of stage 2, trace: running forward's code on example values to take a static
decision, and the user's line each decision was taken on."""

from __future__ import annotations

import contextlib
import linecache
import operator
import os
import sys
from typing import Any, Callable, Iterator, Mapping

import dgl
import torch
import torch.fx as fx
import torch.fx._symbolic_trace as symbolic_trace

from gnn_codegen.random_graphs import random_edges
from gnn_codegen.trace.several_graphs import graph_item


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _probe_graph(num_nodes: int, generator: torch.Generator) -> dgl.DGLGraph:
    """A small random graph with a self-loop on every node (modules that refuse nodes without
    in-edges run on it)."""
    return dgl.graph(random_edges(num_nodes, 3 * num_nodes, generator, zero_in_degree=False), num_nodes=num_nodes)


@contextlib.contextmanager
def _untraced_modules() -> Iterator[None]:
    """Modules called as themselves, not recorded: fx replaces Module.__call__ and __getattr__
    while it traces, and the test is met in the middle of that."""
    patched = torch.nn.Module.__call__, torch.nn.Module.__getattr__
    torch.nn.Module.__call__ = symbolic_trace._orig_module_call  # type: ignore[method-assign]
    torch.nn.Module.__getattr__ = symbolic_trace._orig_module_getattr  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.__call__, torch.nn.Module.__getattr__ = patched  # type: ignore[method-assign]


@contextlib.contextmanager
def _zero_in_degree_allowed(root: torch.nn.Module) -> Iterator[None]:
    """DGL's modules refuse nodes without in-edges for the values they would compute there; only
    shapes and dtypes are asked here, and a subgraph of one edge type has such nodes."""
    refusing = [m for m in root.modules() if vars(m).get("_allow_zero_in_degree") is False]
    for module in refusing:
        vars(module)["_allow_zero_in_degree"] = True
    try:
        yield
    finally:
        for module in refusing:
            vars(module)["_allow_zero_in_degree"] = False


def _get_attr(node: fx.Node, root: torch.nn.Module) -> Any:
    found: Any = root
    for part in str(node.target).split("."):
        found = getattr(found, part, None)
    return found


def _run(node: fx.Node, values: Mapping[fx.Node, Any], root: torch.nn.Module, graph: Any,
         examples: Mapping[str, torch.Tensor], constants: Mapping[str, Any]) -> Any:
    load: Callable[[Any], Any] = lambda a: fx.node.map_arg(a, lambda n: values[n])  # noqa: E731
    args, kwargs = load(node.args), load(node.kwargs)
    if node.op == "placeholder":  # the graph: the inputs are examples already
        indices = [user.args[1] for user in node.users  # gs[1], or its item node (several_graphs.py)
                   if user.target in (operator.getitem, graph_item) and isinstance(user.args[1], int)]
        if indices:  # a list of blocks, or of graphs side by side: the probe graph at each place
            return [graph] * (max(indices) + 1)
        return graph
    if node.op == "get_attr":
        return constants[str(node.target)] if node.target in constants else _get_attr(node, root)
    if node.op == "call_function":
        return node.target(*args, **kwargs)  # type: ignore[operator]
    if node.op == "call_method":
        return getattr(args[0], str(node.target))(*args[1:], **kwargs)
    if node.op == "call_module":
        return root.get_submodule(str(node.target))(*args, **kwargs)
    raise ValueError(f"cannot run {node.op} {node.target} on example values")


def _relative(where: str) -> str:
    """A place in the user's file as the other refusals name it: from the working directory."""
    path, _, line = where.rpartition(":")
    relative = os.path.relpath(path) if path else ""
    return f"{relative}:{line}" if relative and not relative.startswith("..") else where


def _user_line() -> tuple[str, str]:
    """Where in the user's code the test is: `file.py:LINE` and the line's text."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_TORCH_DIR) and not os.path.abspath(filename).startswith(_OWN_DIR):
            return f"{filename}:{frame.f_lineno}", linecache.getline(filename, frame.f_lineno).strip()
        frame = frame.f_back  # type: ignore[assignment]
    return "forward", ""

"""Part of stage 2, trace: which Python decisions of forward are queries on what a traced
value *is* (its shape, dtype, dimension), read off the traced code."""

from __future__ import annotations

from dataclasses import dataclass

import torch.fx as fx


# questions about a tensor that its values cannot change, by what they read
_ATTRIBUTES = {"shape": "shape", "ndim": "ndim", "dtype": "dtype"}


_METHODS = {"size": "shape", "dim": "ndim", "ndimension": "ndim", "is_floating_point": "dtype",
            "is_complex": "dtype"}


# what Python computes from such answers: comparisons, arithmetic, indexing a shape, `and`/`not`
_PYTHON = (len, isinstance)


@dataclass(frozen=True)
class _Query:
    """One question the condition asks about a tensor's metadata."""

    subject: fx.Node  # the tensor asked about
    reads: str  # "shape", "ndim" or "dtype"


def _queries(condition: fx.Node) -> list[_Query]:
    """The metadata questions the condition is made of; [] when it reads anything else (a
    tensor's values, a module's output, the graph, a weight)."""
    queries: list[_Query] = []
    stack, seen = [condition], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        query = _as_query(node)
        if query is not None:
            queries.append(query)
            continue
        if node.op == "call_function" and (getattr(node.target, "__module__", None) in ("_operator", "operator")
                                           or node.target in _PYTHON):
            stack.extend(node.all_input_nodes)
            continue
        return []
    return queries


def _as_query(node: fx.Node) -> _Query | None:
    if not node.args or not isinstance(node.args[0], fx.Node):
        return None
    if node.op == "call_function" and node.target is getattr and node.args[1] in _ATTRIBUTES:
        return _Query(node.args[0], _ATTRIBUTES[str(node.args[1])])
    if node.op == "call_method" and node.target in _METHODS:
        return _Query(node.args[0], _METHODS[str(node.target)])
    return None

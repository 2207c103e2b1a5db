"""Shapes known while forward is traced, for the Python decisions library code makes on them.

DGL's ChebConv turns its `lambda_max=[2]` into a tensor and tests `if lambda_max.dim() == 1:`;
torch.fx cannot decide that on a proxy. A tensor made from a constant (`th.Tensor([2.0])`, kept
by fx as an attribute of the module) and passed through ops that keep or add known dimensions
(`.to(feat)`, `.unsqueeze(-1)`) has a shape known before any graph is seen, so the test is
decided while tracing, the same for every graph."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

# methods that keep their receiver's shape
_SAME_SHAPE = frozenset({"to", "float", "double", "half", "type", "type_as", "contiguous", "clone", "detach"})
_COMPARISONS = {operator.eq: operator.eq, operator.ne: operator.ne, operator.lt: operator.lt,
                operator.le: operator.le, operator.gt: operator.gt, operator.ge: operator.ge}


def static_shape(value: Any, root: torch.nn.Module) -> tuple[int, ...] | None:
    """The shape of a traced value when it is known while tracing, else None."""
    if not isinstance(value, fx.Node):
        return None
    if value.op == "get_attr":
        found: Any = root
        for part in str(value.target).split("."):
            found = getattr(found, part, None)
        return tuple(found.shape) if isinstance(found, torch.Tensor) else None
    if value.op == "call_method" and value.args:
        shape = static_shape(value.args[0], root)
        if shape is None:
            return None
        if value.target in _SAME_SHAPE:
            return shape
        if value.target == "unsqueeze":
            dim = value.args[1] if len(value.args) > 1 else value.kwargs.get("dim")
            if isinstance(dim, int) and -len(shape) - 1 <= dim <= len(shape):
                dim = dim % (len(shape) + 1)
                return shape[:dim] + (1,) + shape[dim:]
    return None


def _static_number(value: Any, root: torch.nn.Module) -> int | None:
    """`x.dim()`, `x.ndim`, `x.shape[i]`, `x.size(i)` of a tensor of known shape, or a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, fx.Node) or not value.args:
        return None
    if value.op == "call_method" and value.target in ("dim", "ndimension") and len(value.args) == 1:
        shape = static_shape(value.args[0], root)
        return None if shape is None else len(shape)
    if value.op == "call_function" and value.target is getattr and value.args[1:] == ("ndim",):
        shape = static_shape(value.args[0], root)
        return None if shape is None else len(shape)
    if value.op == "call_method" and value.target == "size" and len(value.args) == 2:
        shape = static_shape(value.args[0], root)
        return shape[value.args[1]] if shape is not None and isinstance(value.args[1], int) else None
    return None


def decided(condition: fx.Node, root: torch.nn.Module) -> bool | None:
    """A comparison of numbers known while tracing (`lambda_max.dim() == 1`), decided; None for
    anything else."""
    compare = _COMPARISONS.get(condition.target) if condition.op == "call_function" else None
    if compare is None or len(condition.args) != 2:
        return None
    a, b = (_static_number(v, root) for v in condition.args)
    return None if a is None or b is None else bool(compare(a, b))

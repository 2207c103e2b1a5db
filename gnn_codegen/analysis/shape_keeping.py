"""What keeps a row's width: the ops and modules past which a width found is the input's. One
list for the three places that follow an input's width to what declares it: the tracer (the
width a module traced into declares, trace.py), the static decisions' examples
(static_decisions.py) and the inputs' specs (input_specs.py). A width found past one of these
that broadcasts wider is shown wrong by the example run or the check before writing, which then
refuse: never a wrong number."""

from __future__ import annotations

import torch
import torch.fx as fx

# functions and methods of one tensor, elementwise (`F.relu(x)`, `x.float()`)
ELEMENTWISE = frozenset({
    "relu", "elu", "leaky_relu", "gelu", "silu", "selu", "celu", "tanh", "sigmoid", "softplus", "dropout", "float",
    "contiguous", "neg", "abs", "pow", "exp", "sqrt", "clamp",
})
# `x * norm`, `x / deg`, `x + b`: the rows keep their width where the other operand is a column
# or a number (a hand-written degree norm)
SCALED = frozenset({"mul", "truediv", "div", "add", "sub"})
SHAPE_KEEPING = ELEMENTWISE | SCALED
SHAPE_KEEPING_MODULES = (torch.nn.Dropout, torch.nn.Identity, torch.nn.ReLU, torch.nn.ELU, torch.nn.LeakyReLU,
                         torch.nn.GELU, torch.nn.SiLU, torch.nn.SELU, torch.nn.CELU, torch.nn.Tanh,
                         torch.nn.Sigmoid, torch.nn.PReLU, torch.nn.BatchNorm1d, torch.nn.LayerNorm)


def keeps_width(node: fx.Node, root: torch.nn.Module) -> bool:
    """Whether the node's result is as wide as its first argument's."""
    if node.op == "call_module":
        return isinstance(root.get_submodule(str(node.target)), SHAPE_KEEPING_MODULES)
    if node.op in ("call_function", "call_method"):
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        return _out_of_place(name) in SHAPE_KEEPING
    return False


def _out_of_place(name: str) -> str:
    """An in-place op's name as its out-of-place one: `x.mul_(2)` and `h += b` (operator.iadd)
    keep the width as `x * 2` and `h + b` do; they write into their first argument."""
    if name.endswith("_") and not name.startswith("_"):
        return name[:-1]
    if name in ("iadd", "isub", "imul", "itruediv"):
        return name[1:]
    return name


def through_shape_keeping(node: fx.Node, root: torch.nn.Module) -> fx.Node:
    """The node whose value reaches `node` as its first argument through width-keeping ops."""
    while node.args and isinstance(node.args[0], fx.Node) and keeps_width(node, root):
        node = node.args[0]
    return node

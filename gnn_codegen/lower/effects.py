"""Stage 3, lower, effects: operations that change their input in place, and randomness
refused in eval mode (what cannot be lowered to a value)."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.analysis.rowwise import EVAL_IDENTITY_MODULES, qualified_name
from gnn_codegen.lower.spelling import _spelled, function_expression


# torch.nn.functional's elementwise activations with an `inplace` parameter (not the dropouts,
# nor rrelu, which are random when training)
_IN_PLACE_ACTIVATIONS = frozenset({
    "celu", "elu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "mish", "relu", "relu6",
    "selu", "silu", "threshold",
})


def activation_in_place(fn: Any, kwargs: tuple[tuple[str, Any], ...] = ()) -> bool:
    """Whether `fn(x, ...)` can be written `fn(x, ..., inplace=True)`: the same numbers, in x."""
    return (getattr(fn, "__module__", "") == "torch.nn.functional"
            and getattr(fn, "__name__", "") in _IN_PLACE_ACTIVATIONS
            and "inplace" not in dict(kwargs))


# Methods that change their tensor in place and have no effect on values in inference.
_NO_EFFECT_METHODS = frozenset({"requires_grad_", "retain_grad", "share_memory_"})


_RANDOM_METHODS = frozenset({
    "uniform_", "normal_", "bernoulli_", "bernoulli", "random_", "exponential_", "geometric_",
    "cauchy_", "log_normal_", "multinomial",
})


_RANDOM_FUNCTIONS = frozenset({
    torch.rand, torch.randn, torch.randint, torch.randperm, torch.rand_like, torch.randn_like,
    torch.randint_like, torch.normal, torch.bernoulli, torch.multinomial, torch.poisson,
})


def _refuse_random(node: fx.Node, location: str, namespace: dict[str, Any]) -> None:
    """Random numbers in forward: a result that changes from run to run cannot be checked
    against forward, and layer-wise loops draw them in another order anyway."""
    random = node.target in _RANDOM_FUNCTIONS if node.op == "call_function" else node.target in _RANDOM_METHODS
    dropout = node.op == "call_function" and node.target in (torch.nn.functional.dropout, torch.dropout) and (
        node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True) is True
    )
    if not (random or dropout):
        return
    if node.op == "call_method":
        name = f".{node.target}"
    else:
        name = _spelled(node.target, namespace) or getattr(node.target, "__name__", str(node.target))
    where = location or "forward"
    if dropout:
        raise UnsupportedOperationError(
            f"{where}: {name}(...) is called with training=True (F.dropout's default), so it drops "
            "features at random in eval mode too, and forward's result changes from run to run. "
            "Pass training=self.training, or use an nn.Dropout module."
        )
    raise UnsupportedOperationError(
        f"{where}: forward draws random numbers ({name}), so its result changes from run to run "
        "and cannot be reproduced layer-wise. Draw them only when self.training is True (e.g. "
        "`if self.training:` around the noise), or pass the random tensor to forward as an input."
    )


def _method_in_place(name: str) -> tuple[str, str]:
    """(Op.in_place, Op.out_of_place) for a tensor method: `add_` changes its tensor, and
    `add` is its twin that makes a new one."""
    if not name.endswith("_") or name.startswith("_") or name in _NO_EFFECT_METHODS:
        return "", ""
    twin = name[:-1]
    return "input", twin if hasattr(torch.Tensor, twin) else ""


def _function_in_place(fn: Any, kwargs: tuple[tuple[str, Any], ...], namespace: dict[str, Any]) -> tuple[str, str]:
    """(Op.in_place, Op.out_of_place) for a function: `F.relu(h, inplace=True)`, `torch.add(a,
    b, out=c)`, or a torch function whose name ends with `_` (`torch.relu_`, twin `torch.relu`)."""
    options = dict(kwargs)
    if options.get("inplace") is True:
        return "inplace", ""
    if options.get("out") is not None:
        return "out", ""
    name = getattr(fn, "__name__", "")
    if not name.endswith("_") or name.startswith("_"):
        return "", ""
    for module in (torch.nn.functional, torch):
        if getattr(module, name, None) is fn and callable(getattr(module, name[:-1], None)):
            return "input", function_expression(getattr(module, name[:-1]), namespace)
    if getattr(operator, name, None) is fn:  # operator.iadd and the like
        return "", ""
    return "input", ""


def changes_its_input(module: torch.nn.Module) -> bool:
    """An nn module built with inplace=True (nn.ReLU(inplace=True)), or an nn.Sequential whose
    first such step changes the Sequential's input."""
    if type(module) is torch.nn.Sequential:
        for child in module.children():
            if changes_its_input(child):
                return True
            if qualified_name(type(child)) not in EVAL_IDENTITY_MODULES:
                return False  # a step that makes a new tensor: later ones change that one
        return False
    return getattr(module, "inplace", False) is True

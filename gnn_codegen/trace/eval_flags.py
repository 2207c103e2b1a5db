"""forward's flags that say whether it trains (`def forward(self, g, x, training=True)`, passed on
to F.dropout, as some papers' reference code does instead of reading self.training): traced,
checked and documented at the value eval needs, never at their default."""

from __future__ import annotations

import inspect
import re
from typing import Any

import torch
import torch.fx as fx

# the parameter names read as a training flag, when their default is a bool
EVAL_FLAGS = frozenset({"training", "is_training", "train", "is_train"})


def eval_flags(model: torch.nn.Module) -> dict[str, bool]:
    """forward's training flags with a bool default, each with the value eval mode needs."""
    return {p.name: False for p in inspect.signature(type(model).forward).parameters.values()
            if p.name in EVAL_FLAGS and isinstance(p.default, bool)}


def defaults_as_traced(graph: fx.Graph, defaults: dict[str, Any]) -> None:
    """A placeholder traced at a value other than its default (training=False) takes that value
    as its default, which fx's guard on it asserts when the program runs. fx names it after the
    parameter, with a suffix where the name is taken (`training_1`: nn.Module's attribute)."""
    for node in graph.nodes:
        if node.op == "placeholder" and node.args:
            name = node.target if node.target in defaults else re.sub(r"_\d+$", "", str(node.target))
            if name in defaults and defaults[name] is not node.args[0]:
                node.args = (defaults[name],)

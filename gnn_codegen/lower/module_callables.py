"""Stage 3, lower, functions read from the module: a function that a module holds as an attribute
(`self.activation = activation`, DGL's `self._activation`) and forward calls through it
(`self.activation(h)`) is traced as the function it holds, `F.relu`; the generated code calls it
as the attribute, `self.activation(h)`, `self.layers[0]._activation(rst)`, so the reviewer sees
the user's line, not a function from nowhere (module_constants.py does the same for numbers).

Only where it is certain: the attribute is named on the very line that made the op (its stack
trace, the innermost frame: the user's line, or DGL's own forward for a DGL module's
`_activation`) and holds that very object (`is`, not an equal one). The generated inference
checks the model's build digest first (built.py.j2: a callable setting counts by its qualified
name), so a model whose attribute holds another function is refused there, never run with the
other function in place of the traced one."""

from __future__ import annotations

import re
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.lower.accessors import accessor
from gnn_codegen.lower.module_constants import _innermost_line

# `self.activation` and `self._activation`, called or tested on the line
_NAMED = re.compile(r"\bself\.(\w+)\b")


def held_by_module(node: fx.Node, model: torch.nn.Module) -> str:
    """How the generated code reaches the function node calls, where the module the op ran in
    holds it in an attribute its line names (`self.layers[0].activation`); else ""."""
    if node.op != "call_function":
        return ""
    stack = node.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else ""  # the innermost module the op ran in
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return ""
    held: list[str] = []
    for name in dict.fromkeys(_NAMED.findall(_innermost_line(node))):
        value: Any = vars(module).get(name)  # a plain attribute, not a submodule or parameter
        if value is not None and value is node.target and not isinstance(value, torch.nn.Module):
            held.append(name)
    if len(held) != 1:  # none, or two attributes holding it: which one the line called is unclear
        return ""
    return f"{accessor(model, path) if path else 'self'}.{held[0]}"

"""Stage 3, lower, the lengths of the model's module lists: `self.convs` -> 8 for every
nn.ModuleList and nn.Sequential, named as the generated code reaches it, so that a loop over
a run of them can print its count as `len(self.convs) - 1` (render/layer_calls.py) where a
number would hide where it came from; and likewise the hop count of each module that holds
one (APPNPConv's `self.propagate._k`, a user's `self.k`), for a loop over its hops; and the
function attributes a module sets to None where others of its class hold a function (a last
ChebConv's `activation`), for a loop's test of it as the module's forward tests it. The
generated inference checks first that the model is built as the one traced (render/built.py),
so the value read at run time is this one."""

from __future__ import annotations

import inspect
import re
from functools import lru_cache

import torch.nn as nn

from gnn_codegen.lower.accessors import accessor

# the attributes that hold a module's number of hops: DGL's (APPNPConv, SGConv, TAGConv) and
# the name users give it
_HOP_COUNTS = ("_k", "k")


def module_lengths(model: nn.Module) -> tuple[tuple[str, int], ...]:
    """(path, length) of each list of modules reachable by attributes alone (`self.convs`,
    `self.block.layers`; not one inside a list, which the code reaches by an index)."""
    return tuple((f"self.{name}", len(module)) for name, module in model.named_modules()
                 if name and isinstance(module, (nn.ModuleList, nn.Sequential))
                 and all(part.isidentifier() for part in name.split(".")))


def hop_counts(model: nn.Module) -> tuple[tuple[str, int], ...]:
    """(`self.propagate._k`, 10) for each submodule holding its hop count as an int attribute
    (a loop over its hops may read it: render/layer_calls.py spells it only where its hops are
    the loop's)."""
    counts = []
    for name, module in model.named_modules():
        for attribute in _HOP_COUNTS:
            value = vars(module).get(attribute)
            if name and type(value) is int and value > 0:
                counts.append((f"{accessor(model, name)}.{attribute}", value))
                break
    return tuple(counts)


def unset_functions(model: nn.Module) -> tuple[str, ...]:
    """`self.layers[2].activation` for each attribute a submodule holds as None where another
    module of its class holds a function under that name (a stack's last layer without its
    activation: render/activation_test.py tests it as DGL's forward does)."""
    held: dict[type, set[str]] = {}
    for _, module in model.named_modules():
        held.setdefault(type(module), set()).update(
            name for name, value in vars(module).items() if callable(value) and not isinstance(value, nn.Module))
    return tuple(f"{accessor(model, path)}.{name}" for path, module in model.named_modules() if path
                 for name, value in vars(module).items() if value is None and name in held[type(module)])


def tested_functions(model: nn.Module) -> tuple[str, ...]:
    """`self.layers[0].activation` for each function a submodule holds under a name its class's
    forward tests before calling (`if self.activation:`, `if self._activation is not None:`,
    as DGL's ChebConv and TAGConv do): a loop calls it under the same test
    (render/activation_test.py), which reads as the module's forward."""
    return tuple(f"{accessor(model, path)}.{name}" for path, module in model.named_modules() if path
                 for name, value in vars(module).items()
                 if value is not None and callable(value) and not isinstance(value, nn.Module)
                 and name in _tested_in_forward(type(module)))


@lru_cache(maxsize=None)
def _tested_in_forward(cls: type) -> frozenset[str]:
    try:
        source = inspect.getsource(cls.forward)
    except (OSError, TypeError):  # no source: nothing said of it
        return frozenset()
    return frozenset(re.findall(r"\bif\s+self\.(\w+)\s*(?::|is not None\s*:)", source))

"""Stage 3, lower, the lengths of the model's module lists: `self.convs` -> 8 for every
nn.ModuleList and nn.Sequential, named as the generated code reaches it, so that a loop over
a run of them can print its count as `len(self.convs) - 1` (render/layer_calls.py) where a
number would hide where it came from. The generated inference checks first that the model
is built as the one traced (render/built.py), so the length read at run time is this one."""

from __future__ import annotations

import torch.nn as nn


def module_lengths(model: nn.Module) -> tuple[tuple[str, int], ...]:
    """(path, length) of each list of modules reachable by attributes alone (`self.convs`,
    `self.block.layers`; not one inside a list, which the code reaches by an index)."""
    return tuple((f"self.{name}", len(module)) for name, module in model.named_modules()
                 if name and isinstance(module, (nn.ModuleList, nn.Sequential))
                 and all(part.isidentifier() for part in name.split(".")))

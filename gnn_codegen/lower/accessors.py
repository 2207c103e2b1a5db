"""How the user's code reaches a submodule or attribute of the model (`self.layers[0]`), for
the generated code and for messages; asked while tracing, lowering and rendering alike."""

from __future__ import annotations

import torch


def accessor(root: torch.nn.Module, target: str) -> str:
    """How the user's code reaches a submodule or attribute: `self.layers[0]`,
    `self.convs["in"]` (a ModuleDict key), `self.encoder.lin.weight`."""
    out, current = "self", root
    for part in target.split("."):
        if isinstance(current, (list, tuple, dict)):  # a plain container of modules (plain_containers.py)
            out += f'["{part}"]' if isinstance(current, dict) else f"[{part}]"
            current = current[part] if isinstance(current, dict) else current[int(part)]
            continue
        if isinstance(current, (torch.nn.ModuleList, torch.nn.Sequential)) and part.isdigit():
            out += f"[{part}]"
        elif isinstance(current, torch.nn.ModuleDict) or not part.isidentifier():
            out += f'["{part}"]'
        else:
            out += f".{part}"
        current = getattr(current, part)
    return out

"""Part of stage 2, trace: modules the model keeps in a plain Python list or dict
(`self.conv = [PolyConv(...), ...]`, BWGNN's). torch.fx finds no name for them (NameError: module
is not installed as a submodule), and PyTorch does not register them: their parameters are in
neither model.parameters() nor the state_dict, so a trained model's are not saved either. The way
out is the user's to take: nn.ModuleList or nn.ModuleDict."""

from __future__ import annotations

import torch


def is_unregistered_module_error(exc: BaseException) -> bool:
    return isinstance(exc, NameError) and "not installed as a submodule" in str(exc)


def plain_containers(model: torch.nn.Module) -> list[str]:
    """`self.conv` for each attribute of the model or its submodules that is a list, tuple or
    dict holding modules."""
    found = []
    for path, module in model.named_modules():
        for key, value in vars(module).items():
            if key in ("_modules", "_parameters", "_buffers"):  # PyTorch's own registries
                continue
            items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
            if any(isinstance(item, torch.nn.Module) for item in items):
                found.append(f"self.{path + '.' if path else ''}{key}")
    return found


def unregistered_module_message(model: torch.nn.Module) -> str:
    held = plain_containers(model)
    what = f" ({', '.join(held)})" if held else ""
    example = f"{held[0] if held else 'self.layers'} = nn.ModuleList([...])"
    return (
        f"forward calls a module kept in a plain Python list or dict{what}, which PyTorch does not "
        "register: torch.fx cannot name it, and its parameters are in neither model.parameters() nor "
        f"the state_dict (a trained model's are not saved either). Keep such modules in nn.ModuleList "
        f"({example}) or nn.ModuleDict."
    )

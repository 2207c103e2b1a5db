"""How a message names a module's class: `GATConv` for DGL's and torch's, and the file and line
of a user's own class, which may share a name with DGL's."""

from __future__ import annotations

import inspect
from pathlib import Path

import torch


def class_and_where(module: torch.nn.Module) -> str:
    """`GATConv`, and for a class outside torch and DGL where it is defined: a user's own class
    may share a name with DGL's."""
    cls = type(module)
    if cls.__module__.split(".")[0] in ("torch", "dgl"):
        return cls.__name__
    try:
        path = Path(inspect.getsourcefile(cls) or "")
        line = inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return cls.__name__
    try:
        shown = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = path
    return f"{cls.__name__}, the class at {shown}:{line}"

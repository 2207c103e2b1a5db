"""Render, heterogeneous per-type functions alike but for a module's index: forward's
`n_id = self.node_dict[ntype]; h[ntype] = F.gelu(self.adapt[n_id](...))` traces to one function
per node type, `self.adapt[0]` for author, `self.adapt[1]` for field, ... Where the only
difference is that index and a dict of the model's that forward reads (`self.node_dict[`, in
the user's source) maps each type to it, the types share one function that reads the index as
forward does, `self.adapt[self.node_dict[ntype]]`, and the calls become one loop over the types
(as the type's name alone already makes them, hetero.py's _shared)."""

from __future__ import annotations

import inspect
import re
import torch

# a submodule of a ModuleList as the generated code reaches it: `self.adapt[0]`
_INDEXED = re.compile(r"\b(self(?:\.\w+)+)\[(\d+)\]")


def _user_source(model: torch.nn.Module) -> str:
    """The source of the model's classes (its own and those it derives from), where found."""
    texts = []
    for cls in type(model).__mro__:
        if cls.__module__.startswith(("torch", "dgl", "builtins")):
            continue
        try:
            texts.append(inspect.getsource(cls))
        except (OSError, TypeError):
            continue
    return "\n".join(texts)


def _type_dict(model: torch.nn.Module, index: dict[str, int]) -> str | None:
    """The name of a dict attribute of the model that maps each type to its index, and that
    the model's source indexes (`self.node_dict[`); None where there is no such one."""
    source = _user_source(model)
    for name, value in sorted(vars(model).items()):
        if name.startswith("_") or not isinstance(value, dict) or f"self.{name}[" not in source:
            continue
        if all(type(value.get(t)) is int and value[t] == k for t, k in index.items()):
            return name
    return None


def shared_by_index(texts: dict[str, str], model: torch.nn.Module) -> str | None:
    """One text for every type, `ntype` for the type's name and `self.<dict>[ntype]` for the
    module index, when the texts differ in nothing else; None otherwise."""
    unified = {t: text.replace(f'"{t}"', "ntype") for t, text in texts.items()}
    index: dict[str, int] = {}
    shapes = set()
    for t, text in unified.items():
        found = {int(m.group(2)) for m in _INDEXED.finditer(text)}
        if len(found) != 1:  # one index per type: the type's own
            return None
        index[t] = found.pop()
        shapes.add(_INDEXED.sub(lambda m: f"{m.group(1)}[\0]", text))
    if len(shapes) != 1 or len(set(index.values())) != len(index):
        return None
    name = _type_dict(model, index)
    if name is None:
        return None
    return shapes.pop().replace("\0", f"self.{name}[ntype]")

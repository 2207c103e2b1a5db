"""Render, a dict forward builds by a comprehension over the relations, written back as one:
RGCN's `wdict = {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.rel_names, weights)}`
traces to a literal with an entry per relation (`"follows": {"weight": weights[0].squeeze(0)},
"plays": {"weight": weights[1].squeeze(0)}, ...`). Where every entry is one expression of the
i-th item of one tuple, the dict is that comprehension again, over the keys as a list of the
model's that its source reads names them (`self.layers[0].rel_names`), or else as a tuple."""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any, Callable

import torch

from gnn_codegen.render.code import search_in_code

_ITEM = r"\b{}\[{}\]"  # `weights[2]`: the tuple's name, the item's index


def _source(module: torch.nn.Module) -> str:
    texts = []
    for cls in type(module).__mro__:
        if cls.__module__.startswith(("torch", "dgl", "builtins")):
            continue
        try:
            texts.append(inspect.getsource(cls))
        except (OSError, TypeError):
            continue
    return "\n".join(texts)


def _keys_spelled(model: torch.nn.Module, path: str, keys: list[str], spell: Callable[[str], str]) -> str:
    """The keys as a list of the model's that holds them in that order, on the module at path
    or one above it, whose source reads it (`self.rel_names`); else as a tuple literal."""
    parts = path.split(".") if path else []
    for end in range(len(parts), -1, -1):
        where = ".".join(parts[:end])
        module = model.get_submodule(where)
        source = _source(module)
        for name, value in sorted(vars(module).items()):
            if name.startswith("_") or not isinstance(value, (list, tuple)) or f"self.{name}" not in source:
                continue
            if list(value) == keys:
                return f"{spell(where)}.{name}" if where else f"self.{name}"
    return "(" + ", ".join(f'"{k}"' for k in keys) + ("," if len(keys) == 1 else "") + ")"


def comprehension(entries: dict[Any, str], model: torch.nn.Module, path: str,
                  spell: Callable[[str], str]) -> str | None:
    """`{rel: {"weight": w.squeeze(0)} for rel, w in zip(KEYS, weights)}` for a dict whose
    entries (key -> its value's code) are each the same code of the i-th item of one tuple,
    the i-th key's; None where they are not (or there are fewer than two). path: the module
    the dict is given to (its relations' names are its own or above it); spell(path) is how
    the generated code reaches a module."""
    keys = list(entries)
    if len(keys) < 2 or not all(isinstance(k, str) for k in keys):
        return None
    first = entries[keys[0]]
    names = {m.group(1) for m in re.finditer(r"\b(\w+)\[0\]", first)}
    for tuple_name in sorted(names):
        shapes = {re.sub(_ITEM.format(re.escape(tuple_name), i), "\0", text) for i, text in enumerate(entries.values())}
        if len(shapes) != 1:
            continue
        shape = shapes.pop()
        if "\0" not in shape or search_in_code(rf"\b{re.escape(tuple_name)}\b", shape):
            continue  # the tuple read otherwise too (a key "weight" beside a tuple `weight` is not)
        item, key = next((a, b) for a, b in (("w", "rel"), ("item", "key"), ("item_", "key_"))
                         if not re.search(rf"\b({a}|{b})\b", shape))
        spelled = _keys_spelled(model, path, keys, spell)
        return f"{{{key}: {shape.replace(chr(0), item)} for {key}, {item} in zip({spelled}, {tuple_name})}}"
    return None


def whole_mapping(model: torch.nn.Module, literal: str) -> str:
    """A dict literal of every entry of one of the model's mappings, in its order, keyed as it
    is (`{"user": self.embeds["user"], "game": self.embeds["game"], ...}` from forward's `{ntype:
    embed for ntype, embed in self.embeds.items()}`), as `dict(self.embeds.items())`; any other
    literal as it is. Only a ParameterDict or ModuleDict: the check at entry that the model is
    built as the traced one covers their entries' names, so its keys at run time are these."""
    try:
        tree = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return literal
    if not isinstance(tree, ast.Dict) or not tree.keys:
        return literal
    keys, owners = [], set()
    for key, value in zip(tree.keys, tree.values):
        if not (isinstance(key, ast.Constant) and isinstance(value, ast.Subscript)
                and isinstance(value.slice, ast.Constant) and value.slice.value == key.value):
            return literal
        keys.append(key.value)
        owners.add(ast.unparse(value.value))
    (owner,) = owners if len(owners) == 1 else (None,)
    match = re.fullmatch(r"self((?:\.\w+)+)", owner or "")
    if match is None:
        return literal
    mapping: Any = model
    for attribute in match.group(1).split(".")[1:]:
        mapping = getattr(mapping, attribute, None)
    if not isinstance(mapping, (torch.nn.ParameterDict, torch.nn.ModuleDict)) or list(mapping.keys()) != keys:
        return literal
    return f"dict({owner}.items())"

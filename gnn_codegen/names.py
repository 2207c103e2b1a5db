"""The one name allocator: hands out Python identifiers for generated code so that nothing
collides with the user's module-level names, Python keywords or builtins, or another local."""

from __future__ import annotations

import builtins
import keyword
import re


class NameAllocator:
    def __init__(self, reserved: set[str] | frozenset[str] = frozenset()):
        self.taken = set(reserved) | set(keyword.kwlist) | set(dir(builtins))
        # names given a counter because their base was taken (h_2 -> h): a later pass may give
        # one its base back where the holder is dead (render/local_names.py)
        self.counted: dict[str, str] = {}

    def child(self) -> "NameAllocator":
        """An allocator for a nested scope: sees every name taken so far, adds its own."""
        other = NameAllocator()
        other.taken = set(self.taken)
        return other

    def take(self, base: str) -> str:
        base = re.sub(r"\W", "_", base).rstrip("_") or "t"
        if base[0].isdigit():
            base = f"t_{base}"
        name, i = base, 2
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        if name != base:
            self.counted[name] = base
        return name

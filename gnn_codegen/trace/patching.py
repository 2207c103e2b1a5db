"""Names replaced while forward is traced, and put back after: a module's attribute
(`torch.ones`, `dgl.add_self_loop`) or a key of a file's globals (`from dgl import
broadcast_nodes`). Shared by the wrappers of derived_graphs.py and sized_tensors.py."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


def _put(owner: Any, key: str, value: Any) -> None:
    if isinstance(owner, dict):
        owner[key] = value
    else:
        setattr(owner, key, value)


@contextlib.contextmanager
def replaced(patches: list[tuple[Any, str, Any, Any]]) -> Iterator[None]:
    """While inside, each (module or globals dict, name, original, replacement) holds the
    replacement; after, the original again, whatever happened inside."""
    try:
        for owner, key, _, replacement in patches:
            _put(owner, key, replacement)
        yield
    finally:
        for owner, key, original, _ in patches:
            _put(owner, key, original)

"""Stage 6, render, the names of stored tensors that would share one: a layer often stores two
values its lines name alike, its result and the rows the next layer sends to neighbours
(TAGConv's `rst` and `rst * norm`, APPNP's teleport term and `feat * src_norm`). The one read
by later layers only on source rows is named for that, `rst1_src`, where a counter (`rst1_2`)
would say nothing about which is which."""

from __future__ import annotations

import re
from typing import Callable

from gnn_codegen.cut.plan import Plan

SOURCE_SUFFIX = "_src"


def source_only(plan: Plan) -> frozenset[str]:
    """The stored values every later layer reads on source rows only (sent to neighbours)."""
    spaces: dict[str, set[str]] = {}
    for stage in plan.stages:
        for name, space in stage.loads:
            spaces.setdefault(name, set()).add(space)
    return frozenset(name for name, seen in spaces.items() if seen == {"src"})


def stored_name(base: str, value: str | None, sources: frozenset[str], buffer: dict[str, str],
                taken: set[str], take: Callable[[str], str]) -> str:
    """`base` where free; else, for a value read on source rows only where what holds `base`
    is not, `base_src` (take() adds a counter only if that is taken too). Two values both sent
    to neighbours (two GATConvs' source parts) are told apart by no such word: they keep it."""
    holder = next((v for v, name in buffer.items() if name == base), None)
    if base in taken and value in sources and holder not in sources and not base.endswith(SOURCE_SUFFIX):
        base += SOURCE_SUFFIX
    return take(base)


def running_name(last: str) -> str:
    """The name of a loop's running state from its last layer's (`feat9_2`, `feat9`: feat;
    `feat9_src`: feat_src), as a person names the state a loop carries."""
    source = last.endswith(SOURCE_SUFFIX)
    stem = last.removesuffix(SOURCE_SUFFIX) if source else re.sub(r"_\d+$", "", last)
    stem = stem.rstrip("0123456789") or stem
    return stem + SOURCE_SUFFIX if source else stem

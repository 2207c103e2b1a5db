"""Stage 6, render, the names of stored tensors that would share one: a layer often stores two
values its lines name alike, its result and the rows the next layer sends to neighbours
(TAGConv's `rst` and `rst * norm`, APPNP's teleport term and `feat * src_norm`). The one read
by later layers only on source rows is named for that, `rst1_src`, where a counter (`rst1_2`)
would say nothing about which is which. Rows a layer scales for the next one to send
(`t1 * norm`, ChebConv's and TAGConv's hops; the prologue's `features * norm`) are named for
the rows they scale, `t1_src`, `features_src`, never a layer's counter (`h1`), which reads as
a layer's result."""

from __future__ import annotations

import re
from typing import Callable

from gnn_codegen.analysis.named_constants import library_line_code
from gnn_codegen.cut.plan import Plan
from gnn_codegen.ir import Op, Ref

SOURCE_SUFFIX = "_src"


def source_only(plan: Plan) -> frozenset[str]:
    """The stored values every later layer reads on source rows only (sent to neighbours)."""
    spaces: dict[str, set[str]] = {}
    for stage in plan.stages:
        for name, space in stage.loads:
            spaces.setdefault(name, set()).add(space)
    return frozenset(name for name, seen in spaces.items() if seen == {"src"})


# a product or quotient of rows and a scale: `t1 * norm`
_SCALINGS = frozenset({"operator.mul", "operator.truediv", "torch.mul"})


def scaled_rows(op: Op, named: dict[str, str], shape: Callable[[str], tuple[int, ...] | None],
                generic: set[str]) -> str | None:
    """The name of the rows `op` scales, where it is `x * s` (or `x / s`) with x a tensor of the
    method's own name (stored, or forward's input) as wide as the result, and no line of the
    user's names the result otherwise (a library's name, `rst`, or a generic one says less):
    `x` for `x_src`; else None. named: value -> its name in the method so far; shape: a
    value's shape past its rows; generic: names that say nothing of what a tensor holds."""
    if op.kind != "function" or op.target not in _SCALINGS or len(op.args) != 2 or op.kwargs:
        return None
    rows = op.args[0]
    if not isinstance(rows, Ref) or rows.name not in named or shape(rows.name) != shape(op.name):
        return None
    if op.var and not library_line_code(op) and op.var not in generic:
        return None  # the user's own name for it
    return named[rows.name]


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

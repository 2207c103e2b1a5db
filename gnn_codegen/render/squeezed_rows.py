"""Render, entry checks: forward's squeezes that drop the rows' axis too on a graph (or a node
type) of exactly one node, as lines at the top of the generated inference that refuse such a
graph with a ValueError naming forward's line.

`h.squeeze()` with no dim squeezes every axis of size 1. Which of a value's other axes are of
size 1 is fixed by the model's widths (a Linear(hidden, 1), one head), so the generated code
squeezes those alone, per batch (render_layer.py writes the dims the traced sizes show,
hetero/expressions.py every axis after the rows'). The rows' axis is of size 1 only when the
graph has one node: forward's result then loses that axis (a logit per node becomes a number),
and what forward computes after it may differ too. A batch of rows cannot give that, so the
generated method refuses the graph where it starts, never returning a result of another shape.
`h.squeeze(0)` of rows (GGD: written as nothing, render_layer.py) is the same case."""

from __future__ import annotations

import textwrap
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.ir import Op, Ref
from gnn_codegen.render.quoted_lines import line_said, quoted


def squeezes_every_axis(node: fx.Node | Op) -> bool:
    """`h.squeeze()` or `torch.squeeze(h)`: no dim, a traced node or an op of the program."""
    kind, target = (node.op, str(node.target)) if isinstance(node, fx.Node) else (node.kind, node.target)
    if isinstance(node, fx.Node) and kind == "call_function":
        target = f"torch.{getattr(node.target, '__name__', '')}" if node.target is torch.squeeze else ""
    return kind in ("call_method", "method", "call_function", "function") and len(node.args) == 1 and \
        not node.kwargs and target == ("squeeze" if "method" in kind else "torch.squeeze")


def squeezes_first_axis(node: fx.Node) -> bool:
    """`h.squeeze(0)` (GGD's, on many rows a no-op), a traced node."""
    return node.op == "call_method" and node.target == "squeeze" and node.args[1:] == (0,) and not node.kwargs


def squeezed(value: str, shape: tuple[int, ...], op: Op) -> str:
    """`h.squeeze()` of rows of `shape` (past the rows' axis) as a batch computes it: the axes of
    size 1 after the rows' named, or h itself where there are none."""
    dims = [str(i + 1) for i, n in enumerate(shape) if n == 1]
    if not dims:
        return value
    spelled = dims[0] if len(dims) == 1 else f"({', '.join(dims)})"
    return f"{value}.squeeze({spelled})" if op.kind == "method" else f"torch.squeeze({value}, {spelled})"


def _drops_rows(op: Op, rows: dict[str, str]) -> str:
    """The rows ("node" or "edge") whose only one the op squeezes away: `h.squeeze()` or
    `h.squeeze(0)` of a value with a row per node or edge; "" for any other op."""
    if not op.args or not isinstance(op.args[0], Ref):
        return ""
    if not squeezes_every_axis(op) and not (op.kind == "method" and op.target == "squeeze" and op.args[1:] == (0,)
                                            and not op.kwargs):
        return ""
    space = rows.get(op.args[0].name, "")
    return space if space in ("node", "edge") else ""


def homogeneous_checks(ops: tuple[Op, ...], rows: dict[str, str], graph: str) -> list[str]:
    """One check per squeeze of rows in forward, on `graph` (the generated method's name of the
    graph whose nodes, or edges, are the rows); rows: op name -> its row space."""
    lines: list[str] = []
    for op in ops:
        space = _drops_rows(op, rows)
        if space:
            count, noun = ("num_nodes", "node") if space == "node" else ("num_edges", "edge")
            way_out = _LEAVE_OUT if op.args[1:] == (0,) else _NAME_DIMS
            lines += _check(f"{graph}.{count}()", f'"{graph} has one {noun}: "', op.location, way_out)
    return lines


def hetero_checks(squeezes: list[tuple[str, str, bool]], graph: str) -> list[str]:
    """One check per forward's line of a `h.squeeze()` (or `h.squeeze(0)`: first_axis), for
    each node type whose rows it squeezes (squeezes: (node type, the user's line, first_axis)),
    in a loop over them where several."""
    types: dict[tuple[str, bool], list[str]] = {}
    for ntype, location, first_axis in squeezes:
        types.setdefault((location, first_axis), [])
        if ntype not in types[(location, first_axis)]:
            types[(location, first_axis)].append(ntype)
    lines: list[str] = []
    for (location, first_axis), of in types.items():
        way_out = _LEAVE_OUT if first_axis else _NAME_DIMS
        if len(of) == 1:
            lines += _check(f'{graph}.num_nodes("{of[0]}")', f'"{graph} has one {of[0]} node: "', location, way_out)
            continue
        lines.append(f"for ntype in ({', '.join(_literal(t) for t in of)}):")
        lines += [f"    {line}" for line in _check(f"{graph}.num_nodes(ntype)", f'f"{graph} has one {{ntype}} node: "',
                                                    location, way_out)]
    return lines


# what to write in forward instead, which then squeezes the same axes on one node as on more
_NAME_DIMS = "or name the dims forward squeezes (h.squeeze(-1))"
_LEAVE_OUT = "or leave out forward's squeeze(0), which squeezes nothing on more"


def _check(count: str, what: str, location: str, way_out: str = _NAME_DIMS) -> list[str]:
    """`if COUNT == 1: raise ValueError(...)`; what: the message's start, as a Python literal."""
    said = line_said(location)
    said = said if said.startswith("`") else f"a squeeze in {said}"
    message = f"forward squeezes the rows axis away there, at {said}, which a result per row cannot give: " \
              f"call inference on more than one, {way_out}"
    # in pieces that keep the generated lines short, whatever the length of the user's line
    pieces = textwrap.wrap(message, 64, drop_whitespace=False, break_on_hyphens=False)
    return [f"if {count} == 1:  # forward's squeeze would drop the rows' axis",
            f"    raise ValueError({what}",
            *(f"                     {_literal(piece)}" for piece in pieces[:-1]),
            f"                     {_literal(pieces[-1])})"]


def _literal(text: Any) -> str:
    return quoted(str(text))

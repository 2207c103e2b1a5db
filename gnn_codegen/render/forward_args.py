"""Stage 6, render (heterogeneous): forward's arguments that --forward-args fixed (gnn_film's
`out_key="protein"`) as inference's own keyword parameters, defaulting to the value the module
was traced and checked for, and an entry check that refuses any other value. The signature then
says what the module computes (a reviewer reading only it saw forward's `out_key` vanish), and a
caller passing another value gets a ValueError instead of the traced one's result."""

from __future__ import annotations

import json
import textwrap
from typing import Any


def literal(value: Any) -> str:
    """A JSON value as Python source: strings in double quotes, as black writes them."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def parameters(forward_args: tuple[tuple[str, Any], ...]) -> list[str]:
    return [f"{name}={literal(value)}" for name, value in forward_args]


def check_lines(forward_args: tuple[tuple[str, Any], ...]) -> list[str]:
    lines = []
    for name, value in forward_args:
        message = (f"this inference computes forward for {name}={literal(value)} only: generate it "
                   f"again with --forward-args for another {name}")
        pieces = textwrap.wrap(message, 70, drop_whitespace=False)  # literals side by side
        lines += [f"if {name} != {literal(value)}:  # the {name} it was generated and checked for",
                  "    raise ValueError(", *(f"        {json.dumps(piece)}" for piece in pieces), "    )"]
    return lines


def paragraph(forward_args: tuple[tuple[str, Any], ...]) -> str:
    """The docstring's words on them, or nothing."""
    if not forward_args:
        return ""
    names = ", ".join(f"{name}={literal(value)}" for name, value in forward_args)
    return (f"{names}: forward's argument{'s' if len(forward_args) > 1 else ''} this module was generated and "
            "checked for (--forward-args); another value raises ValueError.")

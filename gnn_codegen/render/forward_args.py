"""Stage 6, render (heterogeneous): forward's arguments that --forward-args fixed (gnn_film's
`out_key="protein"`) as inference's own keyword parameters, defaulting to the value the module
was traced and checked for, and an entry check that refuses any other value. The signature then
says what the module computes (a reviewer reading only it saw forward's `out_key` vanish), and a
caller passing another value gets a ValueError instead of the traced one's result."""

from __future__ import annotations

import json
from typing import Any

from gnn_codegen.render.quoted_lines import raised


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
        checked = raised(f"{name} != {literal(value)}", message)
        lines += [f"{checked[0]}  # the {name} it was generated and checked for", *checked[1:]]
    return lines


def paragraph(forward_args: tuple[tuple[str, Any], ...]) -> str:
    """The docstring's words on them, or nothing."""
    if not forward_args:
        return ""
    names = ", ".join(f"{name}={literal(value)}" for name, value in forward_args)
    return (f"{names}: forward's argument{'s' if len(forward_args) > 1 else ''} this module was generated and "
            "checked for (--forward-args); another value raises ValueError.")

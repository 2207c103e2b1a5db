"""Render, the user's lines as the generated method's messages quote them (issue 37): a
message a shipped module raises names the line of forward it is about by its code, not by the
path and line number of the model file it was generated from, which the shipped module does
not contain and which go stale on the file's first edit (the tool's own refusals and notes,
printed where the file is at hand, keep both)."""

from __future__ import annotations

import json
import textwrap

from gnn_codegen.ir import location_parts


def in_quotes(text: str) -> str:
    """text as the inside of a double-quoted string literal: a user's line may hold quotes and
    backslashes of its own (`g.edata["etype"]`)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def quoted(text: str) -> str:
    """text as a double-quoted string literal."""
    return f'"{in_quotes(text)}"'


def line_said(location: str, source: str = "") -> str:
    """The user's line as a message says it: `code` in backquotes where the code is known
    (`location` as the tracer writes it, `path:LINE (`code`)`, or the line's `source` given
    apart), else what the location says in words (`APPNPConv's norm reshape`), else forward."""
    where = location_parts(location)
    code = where.code or source
    if code:
        return f"`{code}`"
    return "forward" if not where.place or where.path.endswith(".py") else where.place


def raised(condition: str, message: str) -> list[str]:
    """The lines of `if condition: raise ValueError(message)`, the message as string literals
    side by side of at most 70 characters each (black leaves a long literal as it is)."""
    pieces = textwrap.wrap(message, 70, drop_whitespace=False)
    return [f"if {condition}:", "    raise ValueError(", *(f"        {json.dumps(p)}" for p in pieces), "    )"]

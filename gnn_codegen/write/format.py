"""black-format generated source, and insist that the result still parses."""

from __future__ import annotations

import ast

import black

from gnn_codegen.errors import internal


def format_source(code: str, formatted_tail: str = "") -> str:
    """black's formatting of `code`, which ends with `formatted_tail` (the generated module's
    helpers, already in black's format): only the rest is formatted, then the tail appended, as
    black would separate two top-level blocks."""
    tail, head = formatted_tail.strip("\n"), code
    if tail:
        head = code.rstrip("\n")
        if not head.endswith(tail):
            raise internal("the formatted tail is not at the end of the code")
        head = head[: len(head) - len(tail)]
    try:
        formatted = black.format_str(head, mode=black.Mode())
        if tail:
            formatted = formatted.rstrip("\n") + "\n\n\n" + tail + "\n"
        ast.parse(formatted)
    except (black.InvalidInput, SyntaxError) as exc:
        raise internal(f"generated code does not parse: {exc}") from None
    return formatted

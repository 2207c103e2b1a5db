"""black-format generated source, and insist that the result still parses."""

from __future__ import annotations

import ast

import black

from gnn_codegen.errors import internal


def format_source(code: str) -> str:
    try:
        formatted = black.format_str(code, mode=black.Mode())
        ast.parse(formatted)
    except (black.InvalidInput, SyntaxError) as exc:
        raise internal(f"generated code does not parse: {exc}") from None
    return formatted

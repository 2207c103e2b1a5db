"""Options given as JSON objects (--init, --forward-args): each parsed before any work, into a
dict or one paragraph that names the option, says what JSON found wrong and shows an example."""

from __future__ import annotations

import json
from typing import Any

from gnn_codegen.errors import GnnCodegenError, OptionsError


def json_object(option: str, text: str | None, example: str, what: str,
                error: type[GnnCodegenError] = OptionsError) -> dict[str, Any]:
    """`text` as a JSON object ({} when not given). `example`: the option as a user writes it;
    `what`: what the object's keys name ("the constructor's keyword arguments")."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # JSON wants double quotes around every key and string: `{out_key: paper}` is the usual slip
        raise error(
            f"{option} is not valid JSON ({exc.msg} at character {exc.pos}): {text!r}. Give {what} as a "
            f"JSON object, with keys and strings in double quotes, e.g. {example}."
        ) from None
    if not isinstance(value, dict):
        raise error(
            f"{option} must be a JSON object of {what}, got {type(value).__name__}: {text!r}. For "
            f"example {example}."
        )
    return value

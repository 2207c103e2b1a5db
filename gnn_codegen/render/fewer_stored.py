"""Render, the call of a loop whose last layer stores fewer tensors than the others (issue 37):
every layer of a ChebConv or TAGConv stack but the last stores its result and the rows the
next layer sends from (`h, h_src`), the last its result alone. The loop calls one function
for all, which returns the one tensor in the last round; the call binds the others' names
from what it returns, the names the last does not store to None (nothing reads them after
it), so that the loop reads as the user's, one call per layer."""

from __future__ import annotations

from collections.abc import Callable


def fewer_stored(targets: str, call: str, stores: tuple[str, ...] | list[str], count: int, last: str,
                 take: Callable[[str], str]) -> list[str]:
    """The lines that bind `targets` (the others' stores) from `call`: in the round where
    `last` holds, the first `count` from what it returns, the rest None."""
    stored = take("stored")
    returned = stored if count == 1 else f"*{stored}"
    nones = ", ".join(["None"] * (len(stores) - count))
    return [f"    {stored} = {call}",
            f"    # the last layer returns {'its result' if count == 1 else 'fewer'} alone: no next layer "
            "reads rows from it",
            f"    {targets} = ({returned}, {nones}) if {last} else {stored}"]

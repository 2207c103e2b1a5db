"""Render, forward's output made by the last round of a loop over the user's layers, under a
name of its own. A loop carries its state in one name from round to round (`x_skip, feat_next,
el_next = graph_batches[j].map(...)`), and its last round's pass returns forward's output in
that name's place (`return self.mlp(x_skip), None, None`): the method would return the logits
as `x_skip` (a reviewer, issue 37). After the loops the output is bound under the name the
method gives it where no loop folds the passes (`out = x_skip`), and returned so."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from gnn_codegen.render.code import comment

# the Renderer (method.py): read for the plan's outputs and the stored tensors' names
Renderer = Any

# an expression quoted in the comment at most this long; a longer one is named by its place
_QUOTED = 40


def output_named(r: Renderer, value: str, carried: str, final_body: tuple[str, ...] | list[str]) -> list[str]:
    """The lines, after the loops, that bind forward's output `value` (made by the last round,
    in `carried`'s place) under the method's own name for it; none where `value` is no output
    of forward's or its name is the carried one already."""
    name = r.buffer.get(value)
    if value not in r.plan.outputs or name is None or name == carried:
        return []
    made = _returned_first(final_body)
    what = f", {made}," if made is not None and len(made) <= _QUOTED and "Q_" not in made else ""
    return [*comment(f"the last layer's pass returns forward's output{what} as {carried}", 84),
            f"{name} = {carried}"]


def _returned_first(body: tuple[str, ...] | list[str]) -> str | None:
    """The expression a function's last statement returns (the first of a tuple), as text."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(body)))
    except SyntaxError:
        return None
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Return) or last.value is None:
        return None
    value = last.value.elts[0] if isinstance(last.value, ast.Tuple) and last.value.elts else last.value
    return ast.unparse(value)


def renamed_outputs(loops: list[Any], before: dict[str, str], buffer: dict[str, str], outputs: tuple[str, ...],
                    last_position: int) -> dict[str, str]:
    """forward's outputs a loop of layers (layer_loops.py) made in its carried name, the loop
    being the method's last stage: each with the name the method gave it before the loop took
    it (`out`, where the loop carries `feat`)."""
    return {values[-1]: before[values[-1]] for loop in loops if loop.end == last_position
            for values in loop.chained if values[-1] in outputs and values[-1] in before
            and buffer[values[-1]] != before[values[-1]]}


def layer_loop_output(r: Renderer, renamed: dict[str, str], ending: tuple[str, ...] | None) -> list[str]:
    """The lines after a loop of layers binding forward's outputs it made under their names
    (renamed_outputs), which the method then returns; the ending's return says what each is."""
    lines: list[str] = []
    for value, name in renamed.items():
        carried = r.buffer[value]
        made = _returned_first(list(ending)) if ending else None
        what = ("output" if made is None or len(made) > _QUOTED else made if made == name
                else f"output, {made},")
        lines += [*comment(f"the last layer returns forward's {what} as {carried}", 84), f"{name} = {carried}"]
        r.buffer[value] = name
    return lines

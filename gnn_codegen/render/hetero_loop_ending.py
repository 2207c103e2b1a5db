"""Stage 6, render (heterogeneous): the last layer of a loop over the user's layers
(hetero_loops.py) joined to the others where it ends otherwise: its function's ending under
the loop's test (forward's own test of an activation where that is the difference, else the
index), the comments of its per-type lines joined where they say otherwise (the last layer
narrows: GraphConv's weight before the sum), and the loop's end as the model's list gives it."""

from __future__ import annotations

import ast
import re
import textwrap

import torch

from gnn_codegen.render.last_copies import Ending, split


def _merged_comment(regular: list[str], last: list[str]) -> list[str]:
    """The comment above a line of the loop where the last layer's says otherwise (the last
    layer narrows: GraphConv's weight before the sum): the others', then the last's."""
    indent = regular[0][: len(regular[0]) - len(regular[0].lstrip())]

    def text(lines: list[str]) -> str:
        return " ".join(line.strip().removeprefix("#").strip() for line in lines)

    ours, theirs = text(regular), text(last)
    head, _, rest = theirs.partition(": ")
    if rest and ours.startswith(f"{head}: "):
        theirs = rest
    return textwrap.wrap(f"{ours}; in the last layer, {theirs}", 88 - len(indent), initial_indent=f"{indent}# ",
                         subsequent_indent=f"{indent}# ", break_on_hyphens=False, break_long_words=False)


def comments_joined(regular: list[str], last: list[str]) -> list[str] | None:
    """The regular layers' per-type lines with the last layer's comments joined in where they
    differ; None where the two differ in code."""
    def blocks(lines: list[str]) -> list[tuple[list[str], str]]:  # (comment lines, the line after)
        out, comment = [], []
        for line in lines:
            if line.lstrip().startswith("#"):
                comment.append(line)
            else:
                out.append((comment, line))
                comment = []
        return out + ([(comment, "")] if comment else [])

    ours, theirs = blocks(regular), blocks(last)
    if [line for _, line in ours] != [line for _, line in theirs]:
        return None
    joined = []
    for (comment, line), (their_comment, _) in zip(ours, theirs):
        if comment != their_comment:
            comment = _merged_comment(comment, their_comment) if comment and their_comment else comment + their_comment
        joined += [*comment, *([line] if line else [])]
    return joined


def _activation_test(rest: list[str], ending: Ending, model: torch.nn.Module, modules: list[str],
                     counter: str) -> tuple[str, list[str]] | None:
    """Where the regular layers end `return self.layers[i].activation(h)` and the last
    `return h`, and the attribute is set in every regular layer's module and unset in the
    last's (None: rgcn-hetero's RelGraphConvLayer without activation): forward's own test,
    `if self.layers[i].activation:`, rather than the layer's index."""
    if len(rest) != 1 or len(ending.last) != 1:
        return None
    indent = rest[0][: len(rest[0]) - len(rest[0].lstrip())]
    applied = re.fullmatch(rf"return (self(?:\.\w+)+\[{re.escape(counter)}\])\.(\w+)\((\w+)\)", rest[0].strip())
    if applied is None or ending.last[0].strip() != f"return {applied.group(3)}":
        return None
    attribute = applied.group(2)
    values = [getattr(model.get_submodule(path), attribute, None) for path in modules]
    if not all(callable(v) for v in values[:-1]) or values[-1] is not None:
        return None
    tested, name = f"{applied.group(1)}.{attribute}", applied.group(3)
    return tested, [f"{indent}# as the layer's forward tests it: the last layer has no {attribute}",
                    f"{indent}if {tested}:", f"{indent}    {name} = {tested}({name})", f"{indent}return {name}"]


def function_joined(regular: list[str], last: list[str], condition: str, model: torch.nn.Module,
                     modules: list[str], counter: str) -> list[str] | None:
    """The loop's function where the last layer's body ends otherwise than the others' (same
    parameters): its ending under `if condition:`, or forward's own test of an activation."""
    if regular[0] != last[0] or not re.search(r"\((block|graph)\b", regular[0]):
        return None
    # a layer of the user's own runs on each batch's graph: that is what the split calls the block
    graph = "graph" if re.search(r"\(graph\b", regular[0]) else None
    if graph and re.search(r"\bblock\b", "\n".join([*regular, *last])):
        return None
    body, their_body = ([re.sub(r"\bgraph\b", "block", line[4:]) if graph else line[4:] for line in lines[1:]]
                        for lines in (regular, last))
    parted = split(body, their_body, ast.unparse, ast.unparse, named_shares=True)  # names alike already
    if parted is None:
        return None
    shared, rest = list(parted.regular[: parted.ending.shared]), list(parted.regular[parted.ending.shared:])
    tested = _activation_test(rest, parted.ending, model, modules, counter)
    if tested is not None:
        lines = [*shared, *tested[1]]
    else:
        lines = [*shared, "# the last layer: as forward runs it, otherwise than the others", f"if {condition}:",
                 *(f"    {line}" for line in parted.ending.last), *rest]
    if graph:
        lines = [re.sub(r"\bblock\b", "graph", line) for line in lines]
    return [regular[0], *(f"    {line}" for line in lines)]


def spelled_stop(lines: list[str], counter: str, stop: int, model: torch.nn.Module) -> str:
    """The loop's end as the model's list gives it (module_index.spelled_stop): `len(self.layers)`."""
    for path in dict.fromkeys(re.findall(rf"\bself\.((?:\w+\.)*\w+)\[{re.escape(counter)}\]", "\n".join(lines))):
        try:
            length = len(model.get_submodule(path))  # type: ignore[arg-type]
        except (AttributeError, TypeError):
            continue
        if stop <= length:
            return f"len(self.{path})" + (f" - {length - stop}" if length - stop else "")
    return str(stop)


def last_value(stop: str) -> str:
    """The last value of a loop that ends before `stop`."""
    if stop.isdigit():
        return str(int(stop) - 1)
    head, _, rest = stop.partition(" - ")
    return f"{head} - {int(rest) + 1}" if rest else f"{stop} - 1"

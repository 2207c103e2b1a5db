"""Render, the text of a loop's rounds (round_loops.py): each round of a layer and the passes
over all nodes after it read as the loop compares them (module indices and `needed[...]`
relative to the round's layer, `nodes=` and dels apart, comments left out), the names that
differ from round to round and the loop's name for each, and a round's lines written with
the loop's variable (`self.layers[i + 1]`, `Before layer i + 2`)."""

from __future__ import annotations

import re
import token
from dataclasses import dataclass
from typing import Any

from gnn_codegen.render.code import comment, replace_in_code
from gnn_codegen.render.module_functions import plain, tokens

# the Renderer (method.py): read for the names of `needed`, `nodes` and `batches`
Renderer = Any

_INDEXED = re.compile(r"\b(self(?:\.\w+)+)\[(\d+)\]")
_LAYER_WORD = re.compile(r"\b([Ll]ayer) (\d+)\b")


@dataclass
class Round:
    """One round: a layer's stage dict, then its passes', as the loop compares them."""

    layer: int
    dicts: list[dict]
    made: list[str]  # the local functions its lines define first (`def pair_norm(h):`), made before
    raw: str  # its code as written, comments left out (name_resolution.py reads it)
    code: list[str]  # its statements, indices relative, `nodes=` and dels left out
    nodes: list[int | None]  # per call of the runtime, in order: its `nodes=needed[n]`'s n
    dels: list[list[str]]  # per del line, in order: the names it frees


def code_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.lstrip().startswith("#")]


def split_made(before: list[str]) -> tuple[list[str], list[str]]:
    """A stage's lines before its function split into the local functions they define, with
    their comments (module_functions.py's `def pair_norm(h):`, made at its first call), and
    the rest."""
    made: list[str] = []
    rest: list[str] = []
    at = 0
    while at < len(before):
        end = at
        while end < len(before) and before[end].startswith("#"):
            end += 1
        if end < len(before) and before[end].startswith("def "):
            end += 1
            while end < len(before) and (before[end].startswith(" ") or not before[end]):
                end += 1
            made += before[at:end]
        else:
            rest.append(before[at])
            end = at + 1
        at = end
    return made, rest


def is_call(line: str) -> bool:
    """A line of the method that calls the runtime's map or map_nodes."""
    return not line.startswith((" ", "#", "del ")) and bool(re.search(r"\.map(_nodes)?\(", line))


def stage_lines(d: dict, before: list[str]) -> list[str]:
    f = d["function"]
    return [*before, f"def {f.name}({', '.join(f.params)}):", *(f"    {b}" for b in f.body), *d["after"]]


def relative(text: str, layer: int, needed: str) -> str:
    """Module indices and `needed[...]` relative to the layer: `self.layers[@-1]` in layer 2."""
    text = _INDEXED.sub(lambda m: f"{m.group(1)}[@{int(m.group(2)) - layer}]", text)
    return re.sub(rf"\b{re.escape(needed)}\[(\d+)\]", lambda m: f"{needed}[@{int(m.group(1)) - layer}]", text)


def nodes_pattern(r: Renderer) -> re.Pattern:
    """`, nodes=needed[2])` at the end of a call."""
    return re.compile(rf", {re.escape(r.nodes)}={re.escape(r.needed)}\[(\d+)\]\)$")


def read_round(r: Renderer, layer: int, dicts: list[dict], first: bool) -> Round | None:
    """The round as the loop compares it; None where a stage of it is in a loop already, or a
    round but the first makes a local function (its first call is in an earlier round)."""
    at_end = nodes_pattern(r)
    made: list[str] = []
    raw: list[str] = []
    code: list[str] = []
    nodes: list[int | None] = []
    dels: list[list[str]] = []
    for d in dicts:
        if d["opening"] or d["pad"]:
            return None
        own, before = split_made(d["before"])
        if own and not first:
            return None
        made += own
        for line in code_lines(stage_lines(d, before)):
            raw.append(line)
            if line.startswith("del "):
                dels.append([n.strip() for n in line[4:].split(",")])
                continue
            if is_call(line):
                found = at_end.search(line)
                nodes.append(int(found.group(1)) if found else None)
                line = at_end.sub(")", line)
            code.append(relative(line, layer, r.needed))
    return Round(layer, dicts, made, "\n".join(raw), code, nodes, dels)


def renames(rounds: list[Round]) -> list[dict[str, str]] | None:
    """Per round, its names that differ from round to round -> the loop's: a value's name
    without its counter (h1 -> h), a layer's function `layer_i`, the pass before the next
    layer `before_next_layer`. None where the rounds differ in more than names."""
    streams = [tokens(one.code) for one in rounds]
    if any(s is None or len(s) != len(streams[0]) for s in streams):  # type: ignore[arg-type]
        return None
    classes: dict[tuple[str, ...], str] = {}
    for position in range(len(streams[0])):  # type: ignore[arg-type]
        kinds = {s[position][0] for s in streams}  # type: ignore[index]
        spelled = tuple(s[position][1] for s in streams)  # type: ignore[index]
        if len(kinds) != 1:
            return None
        if len(set(spelled)) == 1:
            continue
        if token.tok_name[kinds.pop()] != "NAME":
            return None
        if position and streams[0][position - 1][1] == ".":  # type: ignore[index]
            return None  # an attribute (`self.conv2`, `self.conv3`): another module, not a name
        if not _binding_keyword(streams[0], position):  # type: ignore[arg-type]
            return None  # a keyword of a call: another argument, not a name
        classes.setdefault(spelled, loop_name(spelled[0]))
    found: list[dict[str, str]] = [{} for _ in rounds]
    for spelled, name in classes.items():
        for k, old in enumerate(spelled):
            if found[k].setdefault(old, name) != name:
                return None
    return found


def _binding_keyword(stream: list[tuple[int, str]], position: int) -> bool:
    """The name at position is no keyword argument, or one of a `dict(...)` that binds a
    layer's parameter to its rows (`source_rows=dict(feat0=feat0)`: renamed with it)."""
    if position + 1 >= len(stream) or stream[position + 1][1] != "=":
        return True
    depth = 0
    for at in range(position - 1, -1, -1):
        text = stream[at][1]
        depth += text in (")", "]", "}")
        if text in ("(", "[", "{"):
            if not depth:
                return text == "(" and at > 0 and stream[at - 1][1] == "dict"
            depth -= 1
    return True


def loop_name(name: str) -> str:
    """The loop's name for a name each round spells its own way."""
    if re.fullmatch(r"layer_\d+", name):
        return "layer_i"
    before = re.fullmatch(r"before_layer_\d+(.*)", name)
    if before:
        return f"before_next_layer{before.group(1)}"
    return plain(name)


def renamed(lines: list[str], names: dict[str, str]) -> list[str]:
    names = {old: new for old, new in names.items() if old != new}
    if not names:
        return list(lines)
    pattern = r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b"
    return [replace_in_code(pattern, lambda m: names[m.group(1)], line) for line in lines]


def spell(counter: str, shift: int) -> str:
    """`i`, `i + 1`, `i - 2`."""
    return counter if not shift else f"{counter} + {shift}" if shift > 0 else f"{counter} - {-shift}"


def counted(lines: list[str], layer: int, counter: str, base: int, needed: str, width: int = 80) -> list[str]:
    """The lines with module indices and `needed[...]` from the loop's variable, which is the
    layer's index + base (`self.layers[i + 1]`), and layers in comments too (`Before layer
    i + 2`), each comment that changed wrapped again."""
    def index(m: re.Match) -> str:
        return f"{m.group(1)}[{spell(counter, int(m.group(2)) - layer - base)}]"

    def code(line: str) -> str:
        line = _INDEXED.sub(index, line)
        return re.sub(rf"\b{re.escape(needed)}\[(\d+)\]",
                      lambda m: f"{needed}[{spell(counter, int(m.group(1)) - layer - base)}]", line)

    out: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        indent = line[: len(line) - len(line.lstrip())]
        if not line.lstrip().startswith("# "):
            out.append(code(line))
            at += 1
            continue
        end = at
        while end < len(lines) and lines[end].lstrip().startswith("# ") and lines[end].startswith(indent):
            end += 1
        text = " ".join(one.lstrip()[2:] for one in lines[at:end])
        new = _LAYER_WORD.sub(lambda m: f"{m.group(1)} {spell(counter, int(m.group(2)) - layer - base)}",
                              _INDEXED.sub(index, text))
        out += lines[at:end] if new == text else [f"{indent}{c}" for c in comment(new, width - len(indent))]
        at = end
    return out


def offsets(rounds_code: list[str]) -> set[int]:
    """The module indices the round reads, less its layer."""
    return {int(m.group(1)) for line in rounds_code for m in re.finditer(r"\bself(?:\.\w+)+\[@(-?\d+)\]", line)}


def own_renames(one: Round, carried: dict[str, str], outer: set[str]) -> dict[str, str]:
    """A loop of one round (forward's loop over two layers, the last after it): its counted
    names -> the loop's, where no two would share one. carried: what comparing its layer with
    the layer after gave (`feat0`, `feat1` -> `feat`, `layer_1` -> `layer_i`); outer: the names
    its code binds or reads at its own level (never a loop's name of another value)."""
    found = {old: new for old, new in carried.items() if old != new}
    taken = set(found.values())
    for kind, name in tokens(one.code) or ():
        new = loop_name(name)
        if token.tok_name[kind] != "NAME" or name in found or new == name or new in taken or new in outer:
            continue
        found[name] = new
        taken.add(new)
    return found

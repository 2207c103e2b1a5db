"""Stage 6, render (heterogeneous): the values inference computes once from the weights alone,
where forward computes them in every layer of a list of layers alike (DGL's rgcn-hetero:
`weights = torch.split(self.weight, 1)` and `wdict = {rel: ... zip(self.rel_names, weights)}`
in each RelGraphConvLayer): one loop over the layers, as forward runs them, not a copy per
layer (`wdict`, `wdict_1`, `wdict_2`). What the layers then read is kept in a list by layer,
`wdicts[1]`; what only the loop reads stays a local of it, as forward's `weights` is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import torch

from gnn_codegen.render.code import replace_in_code, search_in_code

_ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*) = (.*)$", re.S)
_INDEXED = re.compile(r"\bself\.((?:\w+\.)*\w+)\[(\d+)\]")


@dataclass(frozen=True)
class PerLayer:
    """The lines that replace the folded ones (at the last folded line's place) and how code
    elsewhere reads a folded name (`wdict_1` -> `wdicts[1]`)."""

    lines: tuple[str, ...]
    renamed: dict[str, str]


def _base(name: str) -> str:
    return re.sub(r"_\d+$", "", name)


def _layer_of(code: str, model: torch.nn.Module) -> tuple[str, int] | None:
    """The one layer of a ModuleList the code reads (`self.layers[1]`): its list and index."""
    found = set()
    for match in _INDEXED.finditer(code):
        try:
            module = model.get_submodule(match.group(1))
        except AttributeError:
            return None
        if not isinstance(module, torch.nn.ModuleList):
            return None
        found.add((match.group(1), int(match.group(2))))
    return found.pop() if len(found) == 1 else None


def _reads(text: str, name: str) -> bool:
    return search_in_code(rf"(?<![\w.]){re.escape(name)}\b", text)


def per_layer(lines: list[str], model: torch.nn.Module, readers: list[str],
              new_name: Callable[[str], str]) -> tuple[list[str], dict[str, str]]:
    """`lines` (each `name = code`, in the order they run) with the lines that are one line of
    forward's per layer, for every layer of one ModuleList in order and the same but for the
    layer (and the names of the others of its layer), made one loop over the list. readers:
    the other code of the method (comment lines left out), for the names it reads;
    new_name(base) allocates a name. Unchanged where no such lines are."""
    parsed = [_ASSIGNMENT.match(line) for line in lines]
    if not all(parsed):
        return lines, {}
    names = [m.group(1) for m in parsed if m]
    codes = [m.group(2) for m in parsed if m]
    layers = [_layer_of(code, model) for code in codes]
    # the candidates by (list, base name): one line per layer, every layer of the list
    groups: dict[tuple[str, str], dict[int, int]] = {}
    for i, (name, layer) in enumerate(zip(names, layers)):
        if layer is not None:
            groups.setdefault((layer[0], _base(name)), {})[layer[1]] = i
    lists = {path for path, _ in groups}
    if len(lists) != 1:
        return lines, {}  # one list of layers at a time (the usual case)
    (path,) = lists
    count = len(model.get_submodule(path))
    folded = {key: members for key, members in groups.items()
              if count >= 2 and sorted(members) == list(range(count))
              and all(layers[i] == (path, k) for k, i in members.items())}
    # each line of a layer with the layer and the names of its layer's others made generic
    while folded:
        member_names = {names[i]: (base, k) for (_, base), members in folded.items() for k, i in members.items()}

        def generic(i: int, k: int) -> str:
            code = codes[i].replace(f"self.{path}[{k}]", "\0")
            for name, (base, at) in member_names.items():
                if _reads(code, name) and at != k:
                    return "\1"  # reads another layer's: not a function of its own layer
                code = replace_in_code(rf"(?<![\w.]){re.escape(name)}\b", f"\2{base}\2", code)
            return code

        unlike = [key for key, members in folded.items() if len({generic(i, k) for k, i in members.items()}) != 1
                  or "\1" in generic(members[0], 0)]
        if not unlike:
            break
        for key in unlike:
            del folded[key]
    if not folded:
        return lines, {}
    member_rows = sorted(i for members in folded.values() for i in members.values())
    last = member_rows[-1]
    kept = [i for i in range(len(lines)) if i not in member_rows]
    # a line left where it is must not read a folded value it would then run before
    if any(_reads(codes[i], names[j]) for i in kept if member_rows[0] < i < last for j in member_rows):
        return lines, {}
    outside = [codes[i] for i in kept] + readers
    read_outside = {key for key, members in folded.items()
                    if any(_reads(text, names[i]) for i in members.values() for text in outside)}
    loop_variable = new_name(path.rsplit(".", 1)[-1].removesuffix("s") or "layer")
    order = sorted(folded, key=lambda key: folded[key][0])
    kept_lists = {key: new_name(f"{key[1]}s" if not key[1].endswith("s") else f"{key[1]}_per_layer")
                  for key in order if key in read_outside}
    body = []
    for key in order:
        members = folded[key]
        code = re.sub("\2(\\w+)\2", r"\1", generic(members[0], 0).replace("\0", loop_variable))
        later = any(f"\2{key[1]}\2" in generic(folded[other][0], 0) for other in order if other != key)
        if key in kept_lists and not later:  # read by the layers alone: straight into its list
            body.append(f"{kept_lists[key]}.append({code})")
            continue
        body.append(f"{key[1]} = {code}")
        if key in kept_lists:
            body.append(f"{kept_lists[key]}.append({key[1]})")
    loop = [f"# per layer of self.{path}, as its forward computes them", *(f"{name} = []" for name in kept_lists.values()),
            f"for {loop_variable} in self.{path}:",
            *(f"    {line}" for line in body)]
    renamed = {names[i]: f"{kept_lists[key]}[{k}]" for key in kept_lists for k, i in folded[key].items()}
    result = []
    for i, line in enumerate(lines):
        if i == last:
            result += loop
        elif i not in member_rows:
            result.append(rename(line, renamed))
    return result, renamed


def rename(line: str, renamed: dict[str, str]) -> str:
    """A line of code with each folded name read as the list holds it (`wdicts[1]`); a
    comment line as it is."""
    if not renamed or line.lstrip().startswith("#"):
        return line
    pattern = r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(renamed, key=len, reverse=True)) + r")\b"
    return replace_in_code(pattern, lambda m: renamed[m.group(1)], line)


def values_of_weights(once: list[str], model: torch.nn.Module, lines: list[str], stages: list[list[str]],
                      result: str, new: Callable[[str], str]) -> tuple[list[str], list[str], list[list[str]], str]:
    """The method's lines of values of the weights alone, under their comment, with those
    forward computes per layer folded (per_layer), and the method's other lines (its
    preamble, each stage's, its result) reading the folded values as the loop keeps them.
    new(base): the method's name allocator."""
    readers = [line for part in (lines, *stages, [result]) for line in part if not line.lstrip().startswith("#")]

    def unread(base: str) -> str:  # the layers' functions read the method's names: none of theirs
        while True:
            name = new(base)
            if not any(re.search(rf"\b{name}\b", line) for line in readers):
                return name

    once, renamed = per_layer(once, model, readers, unread)
    if renamed:
        lines, stages = [rename(line, renamed) for line in lines], [[rename(line, renamed) for line in stage]
                                                                    for stage in stages]
        result = rename(result, renamed)
    if not once:
        return [], lines, stages, result
    said = "# computed once, from the weights alone"
    if once[0].startswith("# per layer of "):  # the loop first: one comment says both
        said, once = "# computed once from the weights alone, per layer as its forward does", once[1:]
    return [said, *once], lines, stages, result

"""Render, layers that differ only in their module's index: `self.convs[3]` in layer 4,
`self.convs[4]` in layer 5 (a stack of one module kind, GCNII's GCN2Convs). Read relative to
the layer (`self.convs[@-1]`), such layers are one function, which a loop writes once with the
index as its variable (`for i in range(1, 7): ... self.convs[i] ...`), as DGL's hand-written
loops over `self.layers` do (layer_loops.py)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from gnn_codegen.render.code import comment

if TYPE_CHECKING:
    from gnn_codegen.cut.plan import Stage
    from gnn_codegen.ir import Program
    from gnn_codegen.render.layer import LayerFunction

# a submodule of a ModuleList or Sequential as the generated code reaches it (accessors.py)
_INDEXED = re.compile(r"\b(self(?:\.\w+)+)\[(\d+)\]")


def relative(text: str, layer: int) -> str:
    """text with every module index written relative to the layer: `self.convs[@-1]` in layer 4
    for `self.convs[3]`."""
    return _INDEXED.sub(lambda m: f"{m.group(1)}[@{int(m.group(2)) - layer}]", text)


def offsets(function: "LayerFunction", layer: int) -> set[int]:
    """The module indices the function reads, less its layer."""
    return {int(m.group(2)) - layer for line in function.body for m in _INDEXED.finditer(line)}


def counted(function: "LayerFunction", layer: int, counter: str, base: int) -> "LayerFunction":
    """The function with its module indices written from the loop's variable, which runs over
    the indices of layer + base: `self.convs[i]`, `self.fcs[i + 1]`."""
    def spell(m: re.Match) -> str:
        shift = int(m.group(2)) - layer - base
        return f"{m.group(1)}[{counter}{f' + {shift}' if shift > 0 else f' - {-shift}' if shift else ''}]"

    return replace(function, body=_rewrapped(function.body, [_INDEXED.sub(spell, line) for line in function.body]))


def counted_ending(lines: tuple[str, ...], regular: "LayerFunction", layers: tuple[int, int], counter: str,
                   base: int) -> tuple[str, ...]:
    """A loop's last layer's own ending (last_copies.py) with the module indices that the
    other layers' function reads relative to its layer written from the loop's variable too
    (GeniePath's last `self.layers[2].depth_func`, `self.layers[i]` in the others); an index of
    no module the others read so stays as written (GCNII's output `self.fcs[1]`)."""
    regular_layer, last_layer = layers
    alike = {(m.group(1), int(m.group(2)) - regular_layer) for line in regular.body for m in _INDEXED.finditer(line)}

    def spell(m: re.Match) -> str:
        shift = int(m.group(2)) - last_layer
        if (m.group(1), shift) not in alike:
            return m.group(0)
        shift -= base
        return f"{m.group(1)}[{counter}{f' + {shift}' if shift > 0 else f' - {-shift}' if shift else ''}]"

    return tuple(_INDEXED.sub(spell, line) for line in lines)


def _rewrapped(before: list[str], after: list[str]) -> list[str]:
    """`after` with each comment that the indices lengthened wrapped again to fit as
    code.comment wraps it (`self.layers[i + 1]` is longer than `self.layers[2]`)."""
    lines, at = [], 0
    while at < len(after):
        end = at
        while end < len(after) and after[end].lstrip().startswith("# "):
            end += 1
        if end == at:
            lines.append(after[at])
            at += 1
            continue
        if after[at:end] != before[at:end]:
            indent = after[at][: len(after[at]) - len(after[at].lstrip())]
            text = " ".join(line.lstrip()[2:] for line in after[at:end])
            # 4 columns fewer than a function's own: a counted function is made in its loop
            lines.extend(f"{indent}{line}" for line in comment(text, 80))
        else:
            lines.extend(after[at:end])
        at = end
    return lines


def uses_name(function: "LayerFunction", name: str) -> bool:
    """The function has a parameter or local of that name (it would hide the loop's variable)."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    return name in function.params or any(word.search(line) for line in function.body)


def spelled_stop(function: "LayerFunction", counter: str, stop: int, lengths: dict[str, int]) -> str:
    """The loop's end as the model's list gives it: `len(self.convs) - 1` where the function
    reads `self.convs[i]` and the list has one module more than the loop runs over, not `7`
    (which says nothing of where it comes from). Equal to `stop` here by construction, and at
    run time, since inference first checks the model is built as the one traced (built.py)."""
    read = re.compile(rf"\b(self(?:\.\w+)+)\[{re.escape(counter)}\]")
    for path in dict.fromkeys(m.group(1) for line in function.body for m in read.finditer(line)):
        if path in lengths and stop <= lengths[path]:
            rest = lengths[path] - stop
            return f"len({path})" + (f" - {rest}" if rest else "")
    return str(stop)


def every_hop(program: "Program", stages: "list[Stage]") -> bool:
    """The stages are every hop of one module, in order, and it holds their count
    (spelled_hops): its own loop, which a loop of the method's may write as it does, however
    few its hops (SGConv's k=2)."""
    hops = [op.mp.hop for stage in stages for op in (program.op(placed.name) for placed in stage.ops)
            if op.kind == "mp" and op.mp is not None]
    return (spelled_hops(program, stages, stages[-1].layer + 1) is not None
            and hops == list(range(1, len(stages) + 1))
            and all(op.mp.hops == len(stages) for stage in stages
                    for op in (program.op(placed.name) for placed in stage.ops) if op.kind == "mp" and op.mp))


def spelled_hops(program: "Program", stages: "list[Stage]", stop: int) -> str | None:
    """The end of a loop over a module's hops as the module holds their count:
    `self.propagate._k + 1` for APPNPConv's hops 1 to 10 in layers 1 to 10, not `11`; None
    where the layers are not one module's hops, one a layer, or it holds no count that is
    theirs (lower/module_lengths.hop_counts; inference checks the model is built as traced)."""
    modules, shifts = set(), set()
    for stage in stages:
        passing = [op for op in (program.op(placed.name) for placed in stage.ops) if op.kind == "mp"]
        if len(passing) != 1 or passing[0].mp is None or not passing[0].mp.within or not passing[0].mp.hop:
            return None
        modules.add((passing[0].mp.within, passing[0].mp.hops))
        shifts.add(stage.layer - passing[0].mp.hop)
    if len(modules) != 1 or len(shifts) != 1:
        return None
    ((within, hops),) = modules
    path = within.rpartition(" (")[0]  # `self.propagate (APPNPConv)`
    count = next((spelled for spelled, value in program.hop_counts
                  if spelled.rpartition(".")[0] == path and value == hops), None)
    if count is None:
        return None
    shift = stop - hops
    return count if not shift else f"{count} + {shift}" if shift > 0 else f"{count} - {-shift}"


def last_of(stop: str) -> str:
    """The loop's last value from its end as spelled: `len(self.layers) - 1`, `1` for 2."""
    if stop.isdigit():
        return str(int(stop) - 1)
    head, minus, count = stop.rpartition(" - ")
    if minus and count.isdigit():
        return f"{head} - {int(count) + 1}"
    return f"{stop} - 1"

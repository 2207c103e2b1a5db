"""Stage 6, render (heterogeneous): consecutive layers that forward runs from one line of its
loop over a list of layers (`for layer in self.layers: h = layer(g, h)`), each the same code as
the others but for its module's index, written as one `for` loop over the layers (issue 37), as
the homogeneous ones are (layer_loops.py): the per-type function and the loop over the types
once, the module read as `self.layers[i]`, a per-layer value as `wdicts[i]`, the rows a layer
computes for the next as one name carried from layer to layer (`h`, then `h = h_next`, as DGL's
hand-written inference writes `x = y`). The run's last layer may end otherwise (no activation,
forward's work after the loop): its ending under an `if` in the one function (last_copies.py
splits the bodies). Layers alike but written out one by one (`self.conv1`, `self.conv2`), two
of them, stay apart, and so does a last layer that computes fewer types (what forward returns
alone), after the loop.

The stages' text is compared as hetero.py wrote it: each layer's text with its names made the
loop's and its indices read from the loop's variable must come out the same line for line,
so the loop runs exactly the code each layer ran (and the generated module is checked
against forward before it is written, as every module is)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.fx as fx

from gnn_codegen.render.code import replace_in_code
from gnn_codegen.render.hetero_loop_ending import comments_joined, function_joined, last_value, spelled_stop
from gnn_codegen.trace.stack_frames import frames

MIN_RUN = 3  # as layer_loops.py: two copies read as well as a loop; three or more do not
MIN_LOOPED_RUN = 2  # ... unless forward runs them from one line of its loop
_GIVEN = "# the first layer's input, as forward builds it"  # hetero.py's comment above a dict forward builds
# the names of a dict's rows as a layer function takes them: h1_src, h1_dst, h1_dst_1
_ROWS = r"((?:_src|_dst)(?:_\d+)?)?\b"
_HEADER = re.compile(r"^Layer (\d+) of (\d+): ")


@dataclass(frozen=True)
class _Parts:
    """A layer's lines, as hetero.py writes a stage whose function is one for every type."""

    header: list[str]  # the comment that says which layer it is
    given: list[str]  # a dict of features forward builds, made before the layer (_GIVEN)
    function: list[str]  # `def layer_k(...):` and its body
    per_type: list[str]  # `hk = {}`, then the loop over the types that fills it
    one_type: bool = False  # a last layer into one type, its lines written as such a loop


@dataclass(frozen=True)
class Folded:
    """The stages with each run folded (its first stage's lines the loop, the others' none),
    the result read as the loop names it, and per folded run the loop's dict of rows and the
    name that holds the next layer's while it is filled (deleted with it)."""

    stages: list[list[str]]
    result: str
    aliases: dict[str, str]
    # each loop's first and last stage and its range as spelled (`len(self.layers)`, `1, 4`)
    loops: tuple[tuple[int, int, str], ...] = ()


def _parts(lines: list[str], output: str) -> _Parts | None:
    at = 1 if lines and lines[0] == "" else 0
    header: list[str] = []
    while at < len(lines) and lines[at].startswith("#") and lines[at] != _GIVEN:
        header.append(lines[at])
        at += 1
    given: list[str] = []
    while at + 1 < len(lines) and lines[at] == _GIVEN:
        given += lines[at:at + 2]
        at += 2
    if at >= len(lines) or not lines[at].startswith("def "):
        return None
    end = lines.index("", at) if "" in lines[at:] else len(lines)
    function, per_type = lines[at:end], lines[end + 1:]
    if len(per_type) < 2 or per_type[0] != f"{output} = {{}}":
        return None
    if per_type[1].startswith("for ntype in ") and all(line.startswith("    ") for line in per_type[2:]):
        return _Parts(header, given, function, per_type)
    # a layer into one type (the last, forward's result): as a loop over that type alone
    into = next((m.group(1) for line in per_type if (m := re.match(rf'{re.escape(output)}\["(\w+)"\] = ', line))), None)
    if into is None or any(line.startswith(" ") for line in per_type):
        return None
    typed = [re.sub(rf"\b{into}\b", "ntype", line) if line.startswith("#")
             else line.replace(f'"{into}"', "ntype") for line in per_type[1:]]
    return _Parts(header, given, function, [per_type[0], f'for ntype in ("{into}",):', *(f"    {line}" for line in typed)],
                  True)


def _user_lines(node: fx.Node, path: Path) -> tuple[int, ...]:
    """The lines of the user's file the node was made from, outermost first."""
    own = Path(path).resolve()
    return tuple(f.line for f in frames(node) if Path(f.file).resolve() == own)


def written_as_loop(calls: list[list[fx.Node]], path: Path) -> bool:
    """Each stage's HeteroGraphConv calls (one per destination type) run from the same lines
    of the user's file, every stage on a module no other of them runs: the rounds of forward's
    loop over its layers (render/written_as_loop.py, for the homogeneous layers)."""
    lines = {_user_lines(node, path) for stage in calls for node in stage}
    modules = [{str(node.args[0]) for node in stage} for stage in calls]
    if len(lines) != 1 or not next(iter(lines)) or any(len(m) != 1 for m in modules):
        return False
    return len({m.pop() for m in modules}) == len(modules)


def _code(line: str, pattern: str, replacement: str | Callable[[re.Match], str]) -> str:
    return line if line.lstrip().startswith("#") else replace_in_code(pattern, replacement, line)


class _Layers:
    """The run's names: the dict carried from layer to layer, the loop's variable, and how a
    layer's text reads as the loop's (`looped`)."""

    def __init__(self, running: str, counter: str, indexed: tuple[str, ...]) -> None:
        self.running, self.counter = running, counter
        self.next = f"{running}_next"
        # what a layer reads by its index: the model's lists of modules, the runtime's needed
        # nodes by layer, the values of weights kept by layer (per_layer_values.py)
        self.index = re.compile(r"(?<![\w.])(self(?:\.\w+)+|" + "|".join(map(re.escape, indexed)) + r")\[(\d+)\]")

    def offsets(self, lines: list[str], layer: int) -> set[int]:
        """The indices of the model's modules the lines read, less the layer's number."""
        return {int(m.group(2)) - layer for line in lines if not line.lstrip().startswith("#")
                for m in self.index.finditer(line) if m.group(1).startswith("self.")}

    def indices(self, line: str, layer: int, base: int) -> str:
        """`self.layers[2]` in layer 3 as `self.layers[i]`, `needed[3]` as `needed[i + 1]`."""
        def spell(m: re.Match) -> str:
            shift = int(m.group(2)) - layer - base
            return f"{m.group(1)}[{self.counter}{f' + {shift}' if shift > 0 else f' - {-shift}' if shift else ''}]"

        return _code(line, self.index.pattern, spell)

    def looped(self, lines: list[str], layer: int, base: int, source: str, output: str) -> list[str]:
        """A layer's lines as the loop writes them."""
        written = []
        for line in lines:
            line = _code(line, rf"\b{re.escape(output)}\b", self.next)
            line = _code(line, rf"\b{re.escape(source)}" + _ROWS, lambda m: self.running + (m.group(1) or ""))
            line = _code(line, rf"\blayer_{layer}\b", f"layer_{self.counter}")
            written.append(self.indices(line, layer, base))
        return written


def _words(lines: list[str]) -> set[str]:
    return {w for line in lines for w in re.findall(r"\b[A-Za-z_]\w*\b", line)}


# placeholders for the loop's names while layers are compared (given their names once folded)
_RUNNING, _COUNTER = "_h_loop_", "_i_loop_"


def needed_counted_by_loop(lines: list[str], loops: tuple[tuple[int, int, str], ...], stages: int) -> list[str]:
    """`needed = batches.needed(nodes, layers=len(self.layers))` where one loop over the user's
    layers from the first runs every stage (the count as the loop spells it, which its fold
    checked against the model), not the count as a number."""
    whole = [spelled for first, last, spelled in loops if (first, last) == (1, stages) and "," not in spelled]
    if not whole:
        return lines
    pattern = re.compile(rf"^(needed = batches\.needed\(nodes, layers=){stages}\b")
    return [pattern.sub(lambda m: m.group(1) + whole[0], line) for line in lines]


def fold_layers(stages: list[list[str]], outputs: dict[int, list[str]], calls: dict[int, list[fx.Node]],
                path: Path, model: torch.nn.Module, indexed: tuple[str, ...], result: str,
                new_name: Callable[[str], str]) -> Folded:
    """The stages (hetero.py's lines per stage, stage 0 the work before layer 1) with each run
    of layers that one loop runs folded into it (the module's docstring). outputs: the dicts of
    rows each stage stores; calls: each stage's HeteroGraphConv calls; indexed: the names of
    lists a layer reads by its index besides the model's (`needed`, `wdicts`); new_name(base)
    allocates a name of the method."""
    stages = [list(lines) for lines in stages]
    aliases: dict[str, str] = {}
    loops: list[tuple[int, int, str]] = []
    layers = _Layers(_RUNNING, _COUNTER, indexed)

    def output(k: int) -> str | None:
        return outputs[k][0] if len(outputs.get(k, ())) == 1 and calls.get(k) else None

    def reads(lines: list[str], name: str) -> bool:
        return any(re.search(rf"\b{re.escape(name)}" + _ROWS, line) for line in lines
                   if not line.lstrip().startswith("#"))

    def chained(k: int) -> bool:  # layer k + 1 alone reads what layer k stores
        name = output(k)
        return (name is not None and k + 1 < len(stages) and reads(stages[k + 1], name)
                and not any(reads(stages[j], name) for j in range(k + 2, len(stages))) and not reads([result], name))

    def parsed() -> dict[int, _Parts | None]:
        return {k: _parts(stages[k], output(k)) if output(k) else None for k in range(1, len(stages))}

    parts = parsed()
    given: dict[str, str] = {}  # the loops' counter, one name for all

    def name(base: str) -> str:
        if base != "i":
            return new_name(base)
        if base not in given:
            given[base] = new_name(base)
        return given[base]

    def base_of(k: int) -> int | None:
        p = parts[k]
        found = layers.offsets([*p.function, *p.per_type], k) if p else set()
        return min(found) if found else None

    def looped(k: int, base: int, source: str) -> tuple[list[str], list[str]]:
        p = parts[k]
        assert p is not None and output(k) is not None
        return (layers.looped(p.function, k, base, source, output(k)),
                layers.looped(p.per_type, k, base, source, output(k)))

    def code(text: tuple[list[str], list[str]]) -> tuple:  # the signature, the per-type code
        function, per_type = text
        return function[0], per_type[0], *(line for line in per_type[2:] if not line.lstrip().startswith("#"))

    k = 1
    while k < len(stages) - 1:
        base = base_of(k)
        p = parts[k]
        if (p is None or base is None or p.one_type or not chained(k) or parts[k + 1] is None
                or base_of(k + 1) != base or parts[k + 1].given):
            k += 1
            continue
        # what the first layer reads where the next reads the first's rows: the loop's start
        second = code(looped(k + 1, base, output(k)))
        source = next((w for w in sorted(_words([*p.function, *p.per_type]))
                       if w != output(k) and code(looped(k, base, w)) == second), None)
        if source is None:
            k += 1
            continue
        regular, end = looped(k, base, source), k
        while chained(end) and parts[end + 1] is not None and base_of(end + 1) == base and \
                not parts[end + 1].given and not parts[end + 1].one_type and \
                looped(end + 1, base, output(end)) == regular:
            end += 1
        last = None  # a last layer that ends otherwise
        if chained(end) and parts[end + 1] is not None and base_of(end + 1) == base and not parts[end + 1].given:
            last = looped(end + 1, base, output(end))
        folded = _fold(k, end, last, base, source, regular, stages, parts, outputs, calls, path, model,
                       layers, name, result, aliases)
        if folded is None and last is not None:
            folded = _fold(k, end, None, base, source, regular, stages, parts, outputs, calls, path, model,
                           layers, name, result, aliases)
        if folded is None:
            k += 1
            continue
        stages, result, stop, running, following, loop_range = folded
        aliases[running] = following
        loops.append((k, stop, loop_range))
        parts = parsed()  # the layers after it read the loop's names now
        k = stop + 1
    return Folded(stages, result, aliases, tuple(loops))


def _fold(start: int, end: int, last: tuple[list[str], list[str]] | None, base: int, source: str,
          regular: tuple[list[str], list[str]], stages: list[list[str]], parts: dict[int, _Parts | None],
          outputs: dict[int, list[str]], calls: dict[int, list[fx.Node]], path: Path, model: torch.nn.Module,
          layers: _Layers, new_name: Callable[[str], str], result: str, aliases: dict[str, str]
          ) -> tuple[list[list[str]], str, int, str, str, str] | None:
    """Layers start..end (and end + 1, `last`, where given) as one loop: the stages and result
    after it, the loop's last layer, its dict's name and its next layer's, and its range as
    spelled; None where the run is too short or its last layer does not join."""
    stop_layer = end + 1 if last is not None else end
    count = stop_layer - start + 1
    looped_by_user = written_as_loop([calls[k] for k in range(start, stop_layer + 1)], path)
    if count < MIN_LOOPED_RUN or (count < MIN_RUN and not looped_by_user):
        return None
    function, per_type = regular
    counter_stop = spelled_stop([*function, *per_type], _COUNTER, stop_layer + base + 1, model)
    first = start + base
    if last is not None and not re.fullmatch(r"len\(self(\.\w+)+\)", counter_stop):
        return None  # a layer that ends otherwise is the last of the user's list, `if i == len(...) - 1`
    if last is not None:
        modules = [f"{m.group(1)}.{k + base}" for k in range(start, stop_layer + 1)
                   for m in [re.search(rf"\bself\.((?:\w+\.)*\w+)\[{_COUNTER}\]", "\n".join(function))] if m]
        joined_function = function if last[0] == function else function_joined(
            function, last[0], f"{_COUNTER} == {last_value(counter_stop)}", model, modules, _COUNTER)
        joined_types = comments_joined(per_type, [per_type[1] if at == 1 else line for at, line in enumerate(last[1])])
        if joined_function is None or joined_types is None:
            return None
        function, per_type = joined_function, joined_types
        if last[1][1] != per_type[1]:  # the last layer into fewer types: forward's result alone
            ntypes = new_name("ntypes")
            every, fewer = (line.removeprefix("for ntype in ").removesuffix(":") for line in (per_type[1], last[1][1]))
            named = " and ".join(re.findall(r'"(\w+)"', fewer))
            per_type = [f"# the last layer into {named} alone, what forward's result reads",
                        f"{ntypes} = {fewer} if {_COUNTER} == {last_value(counter_stop)} else {every}",
                        per_type[0], f"for ntype in {ntypes}:", *per_type[2:]]
    # the loop's names, where nothing of the run's own has them
    original = _words([line for k in range(start, stop_layer + 1) for line in stages[k]])
    original -= {w for w in original if re.fullmatch(re.escape(source) + _ROWS, w)}
    if source in aliases:  # a loop before's dict: this loop carries it on
        running, following = source, aliases[source]
    else:
        running = new_name(re.sub(r"\d+$", "", outputs[stop_layer][0]) or "h")
        following = new_name(f"{running}_next")
    counter = new_name("i")
    fresh = {f"{running}_src", f"{running}_dst", following, counter, f"layer_{counter}"}
    per_type_words = _words([line for k in range(start, stop_layer + 1) for line in parts[k].per_type])
    if fresh & original or (running != source and running in per_type_words):
        return None

    def named(lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            line = line.replace(f"{_RUNNING}_next", following).replace(_RUNNING, running)
            out.append(line.replace(_COUNTER, counter))
        return out

    first_parts = parts[start]
    assert first_parts is not None
    header = " ".join(line.removeprefix("#").strip() for line in first_parts.header)
    heading = _HEADER.match(header)
    if heading is None:
        return None
    said = "in forward's loop" if looped_by_user else "each the same function of the layer before"
    header = named([re.sub(layers.index, lambda m: layers.indices(m.group(0), start, base),
                           f"Layers {start} to {stop_layer} of {heading.group(2)}, {said}: {header[heading.end():]}")])[0]
    heading_lines = textwrap.wrap(header, 90, initial_indent="# ", subsequent_indent="# ",
                                  break_on_hyphens=False, break_long_words=False)
    lines = [""]  # the first layer's input first, then the loop under its heading
    stages = [list(s) for s in stages]
    given = first_parts.given
    if any(re.match(rf"{re.escape(source)} = ", line) for line in given):
        given = [_code(line, rf"\b{re.escape(source)}\b", running) for line in given]
        lines += given
    else:
        lines += given
        writer = next((j for j in range(start) if outputs.get(j) == [source]), None)
        private = writer is not None and not any(
            re.search(rf"\b{re.escape(source)}\b", line) for j, s in enumerate(stages)
            if j not in (writer, start) for line in s if not line.lstrip().startswith("#"))
        if private and not re.search(rf"\b{re.escape(source)}\b", result):
            # stored by a stage before for the loop alone: the loop's name from the start
            stages[writer] = [_code(line, rf"\b{re.escape(source)}\b", running) for line in stages[writer]]
        else:
            lines += [] if running == source else [f"{running} = {source}"]
    signature = re.sub(r"\):$", f", {_COUNTER}={_COUNTER}):", function[0])
    loop_range = counter_stop if first == 0 else f"{first}, {counter_stop}"
    lines += [*heading_lines, f"for {_COUNTER} in range({loop_range}):", *(f"    {line}" for line in [signature, *function[1:]]),
              "", *(f"    {line}" for line in per_type), f"    {_RUNNING} = {_RUNNING}_next"]
    stages[start] = named(lines)
    for k in range(start + 1, stop_layer + 1):
        stages[k] = []
    # after the loop its last layer's rows are the loop's dict
    done = outputs[stop_layer][0]
    pattern = rf"\b{re.escape(done)}" + _ROWS
    renamed = lambda line: _code(line, pattern, lambda m: running + (m.group(1) or ""))  # noqa: E731
    for k in range(stop_layer + 1, len(stages)):
        stages[k] = [renamed(line) for line in stages[k]]
    return stages, renamed(result), stop_layer, running, following, loop_range

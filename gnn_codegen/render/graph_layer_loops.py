"""Render, passes over the graphs of a list inside a loop over the user's layers, as forward's own
two loops (issue 37): DGL's MAG240M R-GAT writes `for i in range(len(mfgs)): ... for j in
range(self.num_etypes): x_skip += self.convs[i][j](subg, ...)`, and the method ran a pass per
layer and graph (a reviewer read `layer_j`, `layer_3`, `layer_j`, `layer_6`, `needed[j + 4]`).
Where every layer's passes are the first's up to the layer's index, the graph's and the layer's
numbered names (`feat0`, `feat1`), they are one function in two loops, `for i in
range(len(self.convs)): for j in range(self.num_etypes):`, with each layer's ending under `if
j == last:` and the last layer's under `if i == last:`; the other graphs' passes return None for
the next layer's rows (the runtime's map returns None for them, fewer_stored.py), bound
`feat_next`. The first layer's work before its graphs (its skip) runs in the prologue where one
runs (cut/prologue_work.py), as later layers' runs at the end of the layer before; where it is
still in the first pass, it is joined under `if i == 0 and j == 0:` (_first_work). forward's
output, made in the carried name's place, is bound under its own after the loops
(loop_results.py).

Every pass is still one call of map on the same rows (plan and cut unchanged). Passes are
compared as text once their indices and numbered names are the loops' (names renamed only where
every read keeps its value, alike_bodies.bindings_kept); any other difference leaves every pass
as it was (graph_pass_loops.py then folds what it can)."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import replace
from typing import Any

from gnn_codegen.cut.plan import Stage
from gnn_codegen.render.alike_bodies import bindings_kept
from gnn_codegen.render.code import comment
from gnn_codegen.render.fewer_stored import padded
from gnn_codegen.render.last_copies import Ending, split
from gnn_codegen.render.layer import LayerFunction
from gnn_codegen.render.module_index import last_of, spelled_stop
from gnn_codegen.render.loop_results import output_named

# the Renderer (method.py): read for its graph lists, row lists and names
Renderer = Any

# the loops' variables and what is spelled from them, until they are named: names, so that the
# bodies still parse (last_copies.split compares their statements)
_LAYER, _GRAPH, _NEEDED, _NAME, _LAST_LAYER = "Q_LAYER_Q", "Q_GRAPH_Q", "Q_NEEDED_Q", "Q_NAME_Q", "Q_LAST_Q"
_NEXT = "_next"  # the next layer's value of a name the loop carries: `feat_next`
# a module of a list of lists, `self.convs[1][2]`, or of a list, `self.skips[1]`
_TWO_INDICES = re.compile(r"\b(self(?:\.\w+)+)\[(\d+)\]\[(\d+)\]")
_ONE_INDEX = re.compile(r"\b(self(?:\.\w+)+)\[(\d+)\]")
# a name numbered for its layer: `feat0`, `x_skip1`, `feat0_dst`
_NUMBERED = re.compile(r"\b([A-Za-z_]\w*?[A-Za-z_])(\d+)(_dst|_src)?\b")


def _shift(var: str, shift: int) -> str:
    return var if not shift else f"{var} + {shift}" if shift > 0 else f"{var} - {-shift}"


def _inner_loops_renamed(body: list[str], taken: set[str], carried: set[str]) -> list[str] | None:
    """The body with each loop inside it over a variable the outer loops take (`for j in
    range(...)`, graph_rows.py's loop over the next layer's graphs) over `k` instead, and the
    names it assigns that the loop carries (`feat, el = ...`) named for it, `feat_k`."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(body)))
    except SyntaxError:
        return None
    lines = list(body)
    for node in ast.walk(tree):
        if not isinstance(node, ast.For) or not isinstance(node.target, ast.Name):
            continue
        words = {w for line in lines for w in re.findall(r"\b\w+\b", line)}
        var = node.target.id
        new = next(v for v in ("k", "t", "kk", "tt") if v not in words) if var in taken else var
        assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        renames = {var: new} if new != var else {}
        renames |= {name: f"{name}_{new}" for name in assigned if name in carried and name != var}
        if not renames:
            continue
        pattern = re.compile(r"(?<![.\w\"'])(" + "|".join(map(re.escape, renames)) + r")\b(?![\"'])")
        for at in range(node.lineno - 1, node.end_lineno or node.lineno):
            lines[at] = pattern.sub(lambda m: renames[m.group(1)], lines[at])
    return lines


def _loop_name(m: re.Match, i: int) -> str | None:
    """The loop's name of a name numbered for layer i (`feat0_dst`: feat_dst) or the next
    (`feat1`: feat_next); None for another layer's."""
    stem, number, suffix = m.group(1), int(m.group(2)), m.group(3) or ""
    if number not in (i, i + 1):
        return None
    return f"{stem}{suffix}" if number == i else f"{stem}{_NEXT}{suffix}"


def _canonical(r: Renderer, d: dict, i: int, j: int, base: int, loops: set[str]) -> tuple | None:
    """(list, params, body, call's targets, call, names freed, names renamed) of the pass of layer i over graph j, its indices
    and numbered names written with placeholders; None where it is no such pass."""
    if d["opening"] or d["before"] or d["pad"]:
        return None
    function = d["function"]
    calls = [line for line in d["after"] if not line.startswith(("#", "del "))]
    if len(calls) != 1 or " = " not in calls[0]:
        return None
    listed, graphs, batches_list = r.listed_graphs[r.stages_of[d["position"]].graph]
    renamed: dict[str, str] = {}  # a numbered name -> the loop's
    lists = {row_list.name for row_lists in r.row_lists.values() for row_list in row_lists}
    lists |= {_NUMBERED.sub(lambda m: _loop_name(m, i) or m.group(0), name) for name in lists}  # as named

    def spelled(text: str) -> str:
        text = re.sub(rf"\b{re.escape(function.name)}\b", _NAME, text)

        def two(m: re.Match) -> str:
            outer, graph = int(m.group(2)), int(m.group(3))
            spelled_graph = _GRAPH if graph == j else str(graph)
            return f"{m.group(1)}[{_shift(_LAYER, outer - i)}][{spelled_graph}]"

        text = _TWO_INDICES.sub(two, text)
        text = _ONE_INDEX.sub(lambda m: f"{m.group(1)}[{_shift(_LAYER, int(m.group(2)) - i)}]", text)
        text = text.replace(f"{batches_list}[{j}]", f"{batches_list}[{_GRAPH}]")
        text = text.replace(f"{graphs}[{j}]", f"{graphs}[{_GRAPH}]")
        for name in lists:
            text = re.sub(rf"\b{re.escape(name)}\[{j}\]", f"{name}[{_GRAPH}]", text)
        text = re.sub(rf"\b{re.escape(r.needed)}\[(\d+)\]",
                      lambda m: f"{r.needed}[{_NEEDED}]" if int(m.group(1)) == base + i * len(listed.ops) + j
                      else m.group(0), text)

        return text

    def numbered(m: re.Match) -> str:
        loop_name = _loop_name(m, i)
        if loop_name is None:
            return m.group(0)
        renamed[m.group(0)] = loop_name
        return loop_name

    def named(text: str) -> str:  # the layer's numbered names as the loop's (not `layer_1`)
        return _NUMBERED.sub(numbered, re.sub(rf"\b{re.escape(function.name)}\b", _NAME, text))

    target, _, call = calls[0].partition(" = ")
    params = tuple(named(p) for p in function.params)
    body = _inner_loops_renamed(function.body, loops, set(params))
    if body is None:
        return None
    body = [named(line) for line in body]
    # names renamed onto others' (`x_skip0` as `x_skip`, a local it rebinds) read the same values
    positions = {p: f"p{k}_" for k, p in enumerate(function.params)}
    if not bindings_kept(function.body, body, positions, {q: f"p{k}_" for k, q in enumerate(params)}):
        return None
    params = tuple(spelled(p) for p in params)
    body = [spelled(line) for line in body]

    def whole(text: str) -> str:  # a line of the method's: the call, what it frees
        return named(spelled(text))

    freed = [name.strip() for line in d["after"] if line.startswith("del ")
             for name in whole(line.removeprefix("del ")).split(",")]
    return (listed, params, tuple(body), tuple(whole(t.strip()) for t in target.split(",")),
            whole(call), tuple(freed), renamed)


def fold_graph_layers(r: Renderer, stage_dicts: list[dict], runs: list[tuple[Stage, Any]]) -> list[dict]:
    """The method's stages with each run of user layers of a pass per graph of one list, alike
    up to the layer's and the graph's index (module docstring), as one stage of two loops."""
    if not r.listed_graphs:
        return stage_dicts
    r.stages_of = {position: stage for position, (stage, _) in enumerate(runs)}
    at = 0
    while at < len(stage_dicts):
        found = _run_at(r, stage_dicts, at)
        if found is None:
            at += 1
            continue
        stage_dicts = found
        at += 1
    return stage_dicts


def _graph_index(r: Renderer, d: dict) -> tuple[Any, int] | None:
    stage = r.stages_of[d["position"]]
    if stage.graph not in r.listed_graphs:
        return None
    listed = r.listed_graphs[stage.graph][0]
    return listed, listed.ops.index(stage.graph)


def _first_work(first: tuple, regular: tuple) -> tuple[list[str], str, str] | None:
    """Where the first layer's first pass is the others' but for work before it that ends in
    the value they take as a parameter (`x_skip = self.skips[0](x)`, then the others' body on
    x_skip): that work written on their parameter, the parameter, and the caller's tensor the
    first pass binds it to (`x`, bound to the parameter before the loops); else None."""
    params, regular_params = first[1], regular[1]
    differ = [k for k, (a, b) in enumerate(zip(params, regular_params)) if a != b]
    if len(params) != len(regular_params) or len(differ) != 1 or first[3] != regular[3]:
        return None
    own, carried = params[differ[0]], regular_params[differ[0]]
    body, cut = list(first[2]), len(first[2]) - len(regular[2])
    if cut < 1 or body[cut:] != list(regular[2]) or any(line.lstrip().startswith("#") for line in body[:cut]):
        return None
    assigned = re.match(r"^(\w+) = ", body[cut - 1])
    rest_words = {w for line in body[cut:] for w in re.findall(r"\b\w+\b", line)}
    if assigned is None or assigned.group(1) != carried or own in rest_words:
        return None
    binding = re.search(rf"\b{re.escape(own)}=(\w+)\b", first[4])
    if binding is None or first[4].replace(binding.group(0), f"{carried}={carried}") != regular[4]:
        return None
    work = [re.sub(rf"(?<![.\w]){re.escape(own)}\b", carried, line) for line in body[:cut]]
    return work, carried, binding.group(1)


def _key(node: ast.AST) -> str:
    return ast.unparse(node)


def _joined(body: tuple[str, ...] | list[str], ending: Ending, condition: str, said: str) -> list[str]:
    """The shared lines, the ending under `if condition:` (said why), then the others' lines."""
    return [*body[: ending.shared], f"# {said}", f"if {condition}:", *(f"    {line}" for line in ending.last),
            *body[ending.shared:]]


def _merged_body(first: tuple, regular: tuple, last: tuple, final: tuple, stops: tuple[str, str]
                 ) -> tuple[list[str], list[str], str] | None:
    """The one function's body, the lines before the loops, and the tensor the loops carry
    their state in (the regular passes' result), or None where the passes are not so."""
    stored, carried = len(last[3]), regular[3]
    if len(carried) != 1 or last[3][0] != f"{carried[0]}{_NEXT}" or len(final[3]) > stored:
        return None
    body = list(last[2])
    if final[2] != last[2]:  # the last layer ends otherwise: under `if i == last:`
        parted = split(last[2], final[2], _key, _key, named_shares=True)
        if parted is None:
            return None
        ending = parted.ending
        if len(final[3]) < stored:  # `return self.mlp(x_skip), None, None`
            ending = padded(ending, len(final[3]), stored)
        body = _joined(parted.regular, ending, f"{stops[0]}",
                       "the last layer: forward's work after its loop, not the next layer's")
    elif len(final[3]) != stored:
        return None
    if body != list(regular[2]):  # each layer's last graph ends the layer: under `if j == last:`
        parted = split(regular[2], body, _key, _key, named_shares=True)
        if parted is None:
            return None
        rest = list(parted.regular[parted.ending.shared:])
        if stored > 1:  # the other graphs' passes store the carried tensor alone
            rest = ["# the layer's other graphs: its sum so far, no rows for the next layer yet",
                    *padded(Ending(0, tuple(rest)), 1, stored).last]
        body = _joined(parted.regular[: parted.ending.shared] + tuple(rest), parted.ending, stops[1],
                       "the layer's last graph: then forward's work after the graphs' loop")
    starts: list[str] = []
    if first[1:5] != regular[1:5]:
        work = _first_work(first, regular)
        if work is None:
            return None
        lines, name, tensor = work
        said = (f"the first layer's first graph: first forward's work before its loop over the graphs "
                f"({name} is {tensor} before the loops)")
        body = [*comment(said, 64), f"if {_LAYER} == 0 and {_GRAPH} == 0:",
                *(f"    {line}" for line in lines), *body]
        starts.append(f"{name} = {tensor}")
    return body, starts, carried[0]


def _run_at(r: Renderer, dicts: list[dict], at: int) -> list[dict] | None:
    """The stage dicts with the run of layers whose first pass is dicts[at] folded, or None."""
    found = _graph_index(r, dicts[at])
    if found is None or found[1] != 0 or len(found[0].ops) < 2:
        return None
    listed, count = found[0], len(found[0].ops)
    rounds = 0
    while at + (rounds + 1) * count <= len(dicts) and all(
            (g := _graph_index(r, dicts[at + rounds * count + j])) is not None and g[0] is listed and g[1] == j
            for j in range(count)):
        rounds += 1
    if rounds < 2:
        return None
    # the loops' variables: names the method binds nowhere else (each function binds them)
    words = {w for d in dicts for line in (*d["after"], *d["before"]) for w in re.findall(r"\b\w+\b", line)}
    free = [v for v in ("i", "j", "k", "t", "ii", "jj") if v not in r.names.taken and v not in words]
    if len(free) < 2:
        return None
    var_i, var_j = free[:2]
    base = r.stages_of[dicts[at]["position"]].layer
    shapes = [[_canonical(r, dicts[at + g * count + j], g, j, base, {var_i, var_j}) for j in range(count)]
              for g in range(rounds)]
    if any(shape is None or {var_i, var_j} & {w for line in (*shape[1], *shape[2]) for w in re.findall(r"\b\w+\b", line)}
           for row in shapes for shape in row):
        return None
    regular = shapes[1][0]
    first, last, final = shapes[0][0], shapes[0][-1], shapes[-1][-1]
    same = [shapes[g][j][1:5] == regular[1:5] and not shapes[g][j][5]
            for g in range(rounds) for j in range(count - 1) if (g, j) != (0, 0)]
    lasts = [shapes[g][-1][1:5] == last[1:5] for g in range(rounds - 1)]
    if not all(same) or not all(lasts) or first[5] or final[5]:
        return None
    if last[1] != regular[1] or final[1] != regular[1] or last[4] != regular[4] or final[4] != regular[4]:
        return None
    _, graphs, batches_list = r.listed_graphs[r.stages_of[dicts[at]["position"]].graph]
    spelled_count = listed.loop.spelled or f"len({graphs})"
    stops = (f"{_LAYER} == {_LAST_LAYER}", f"{_GRAPH} == {spelled_count} - 1")
    merged = _merged_body(first, regular, last, final, stops)
    if merged is None:
        return None
    body, starts, carried = merged
    # the lists the last graph's pass makes for the next layer: `feat_next`, read as `feat`
    lists = [name.removesuffix(_NEXT) for name in last[3][1:]]
    if not all(name.endswith(_NEXT) for name in last[3][1:]) or any(
            not re.search(rf"\b{re.escape(name)}\[{_GRAPH}\]", regular[4]) for name in lists):
        return None
    freed = {name for shape in (shapes[g][-1] for g in range(rounds - 1)) for name in shape[5]}
    if not freed <= {carried, *lists, *(p for p in regular[1] if p != "block")}:
        return None
    # the numbered names of every layer: read nowhere after the run; those bound before it
    # (the prologue's `feat0, el0`) take the loop's names there
    numbered = {name for row in shapes for shape in row for name in shape[6]}
    end = at + rounds * count
    later = {w for d in dicts[end:] for line in (*d["function"].body, *d["after"], *d["before"])
             for w in re.findall(r"\b\w+\b", line)}
    if numbered & later:
        return None
    loop_names = {carried, *lists, *(f"{name}{_NEXT}" for name in lists)}
    if loop_names & (r.names.taken - numbered) or {var_i, var_j} & loop_names:
        return None
    entry = {name: loop for name, loop in shapes[0][0][6].items() if loop in (carried, *lists)}
    before = [_renamed_bound(d, entry) for d in dicts[:at]]
    # the last layer's result is the carried tensor's last value: the method reads it so, or,
    # where it is forward's output, under the name the method would give it (`out`, not x_skip)
    final_stage = r.stages_of[dicts[end - 1]["position"]]
    named_result: list[str] = []
    for value in final_stage.stores[:len(final[3])][:1]:
        named_result = output_named(r, value, carried, final[2])
        if not named_result:
            r.buffer[value] = carried
    # the loop's end from the list whose modules the passes run, `len(self.convs)`
    stop = spelled_stop(_written(dicts[at]["function"], list(regular[2]), var_i, var_j), var_i, rounds,
                        dict(r.program.module_lengths))
    needed = f"{var_i} * {spelled_count} + {var_j}" + (f" + {base}" if base else "")
    name = r.names.take(f"layer_{var_j}")
    # needed's layers, `graph_batches * 2`, counted as the loop counts them (preamble.py)
    r.rounds_spelled = {f"{batches_list} * {rounds}": f"{batches_list} * {stop}"} if not stop.isdigit() else {}

    def out(text: str) -> str:
        return (text.replace(_LAST_LAYER, last_of(stop)).replace(_LAYER, var_i).replace(_GRAPH, var_j)
                .replace(_NEEDED, needed).replace(_NAME, name))

    function = replace(dicts[at]["function"], name=name, body=_rewrapped([out(line) for line in body]),
                       params=[*(out(p) for p in regular[1]), f"{var_i}={var_i}", f"{var_j}={var_j}"])
    said = [f"        {line}" for line in dicts[at]["after"] if line.startswith("#")]
    targets = ", ".join([carried, *(f"{name}{_NEXT}" for name in lists)])
    after = [*said, f"        {targets} = {out(regular[4])}"]
    if lists:
        after.append(f"    {', '.join(lists)} = {', '.join(f'{name}{_NEXT}' for name in lists)}")
    after += named_result
    folded = {**dicts[at],
              "comment": _comment(r, dicts[at + count], rounds, count, var_i, var_j, out),
              "opening": [*starts, f"for {var_i} in range({stop}):", f"    for {var_j} in range({spelled_count}):"],
              "pad": "        ", "function": function, "after": after, "before": dicts[at]["before"]}
    return [*before, folded, *dicts[end:]]


def _written(function: LayerFunction, body: list[str], var_i: str, var_j: str) -> LayerFunction:
    return replace(function, body=[line.replace(_LAYER, var_i).replace(_GRAPH, var_j) for line in body])


def _renamed_bound(d: dict, entry: dict[str, str]) -> dict:
    """A stage dict before the loops with the tensors it binds for them (`feat0, el0 = ...`)
    under the loops' names."""
    if not entry:
        return d
    pattern = re.compile(r"(?<![.\w\"'])(" + "|".join(map(re.escape, entry)) + r")\b(?![\"'])")
    return {**d, "after": [line if line.lstrip().startswith("#") else pattern.sub(lambda m: entry[m.group(1)], line)
                           for line in d["after"]]}


def _comment(r: Renderer, d: dict, rounds: int, count: int, var_i: str, var_j: str, out) -> list[str]:
    """The comment above the loops, from a pass's (`self.convs[1], edge type 1 of 3:
    self.convs[1][0] (GATConv), on graphs[0].`): every layer's, every graph's."""
    text = " ".join(line.lstrip("# ") for line in d["comment"])
    layer, colon, modules = text.partition(": ")
    found = re.fullmatch(r"(self(?:\.\w+)+)\[(\d+)\], (.+) 1 of \d+", layer)
    if found is None or not colon:
        return d["comment"]
    path, index, what = found.group(1), int(found.group(2)), found.group(3)
    _, graphs, _ = r.listed_graphs[r.stages_of[d["position"]].graph]
    modules = _TWO_INDICES.sub(lambda m: f"{m.group(1)}[{var_i}][{var_j}]" if int(m.group(2)) == index
                               and int(m.group(3)) == 0 else m.group(0), modules)
    modules = modules.replace(f"{graphs}[0]", f"{graphs}[{var_j}]")
    first = r.stages_of[d["position"]].layer - count
    return comment(f"Layers {first} to {first + rounds * count - 1} of {r.plan.num_layers}: {path}[{index - 1}] to "
                   f"{path}[{index + rounds - 2}], a round of the loop below each, [{var_i}], and in it a pass per "
                   f"{what}, [{var_j}], each the same function: {modules}", 84)


def _rewrapped(body: list[str], width: int = 68) -> list[str]:
    """The body with each comment longer than the function's lines may be (two loops in, at
    20 columns) wrapped again: the loops' indices and their `if`s lengthened some."""
    lines: list[str] = []
    for line in body:
        indent = line[: len(line) - len(line.lstrip())]
        if line.lstrip().startswith("# ") and len(line) > width:
            lines += [f"{indent}{part}" for part in comment(line.lstrip()[2:], width - len(indent) - 2)]
        else:
            lines.append(line)
    return lines

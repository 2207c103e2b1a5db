"""Render, passes over consecutive graphs of a list, alike but for the graph's index, as one loop
over that index (issue 37): an R-GAT's layer sums a GATConv per edge type onto its skip, and
forward writes it as a loop, `for j in range(self.num_etypes): x_skip += self.convs[i][j](subg,
...)`; the method ran a pass per graph, `graph_batches[j].map(...)`, one function each, alike
but for `self.convs[1][j]`, the graph's batches and its rows' item (graph_rows.py, `feat1[j]`).
Such passes are written once, in a loop over the graphs' index, each pass a call of map as
before (the plan and the cut unchanged):

    for j in range(self.num_etypes - 1):

        def layer_j(block, feat1, el1, x_skip1, feat1_dst, j=j):
            return x_skip1 + _gat_conv_aggregate(self.convs[1][j], block, ...)

        x_skip1 = graph_batches[j].map(layer_j, source_rows=dict(feat1=feat1[j], ...), ...)

Passes fold where their functions and calls are the same text once each one's index (its
modules' last index, its graph's batches, its lists' item, its `needed[...]` less the index)
is the loop's variable; anything else (a pass that starts or ends the user's layer otherwise,
another module, a value freed between them) stays apart as it was."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from gnn_codegen.cut.plan import Stage
from gnn_codegen.render.code import comment
from gnn_codegen.render.graph_rows import indexed

# the Renderer (method.py): read for its graph lists, row lists and names
Renderer = Any

MIN_PASSES = 2  # forward writes them as its loop: two read as it does

_VAR = "\1"  # the loop's variable until it is named


def _canonical(r: Renderer, stage_dict: dict, stage: Stage, var: str) -> tuple | None:
    """The pass's function and call with its graph's index written as var; None where it is
    not a pass over a graph of a list that folds (a loop already, work before it, a value
    freed after it: the caller checks the last)."""
    if stage.graph not in r.listed_graphs or stage_dict["opening"] or stage_dict["before"]:
        return None
    listed, _, batches_list = r.listed_graphs[stage.graph]
    j = listed.ops.index(stage.graph)
    function = stage_dict["function"]
    lists = {row_list.name for row_lists in r.row_lists.values() for row_list in row_lists}

    def spelled(text: str) -> str:
        text = indexed(text, j, var).replace(f"{batches_list}[{j}]", f"{batches_list}[{var}]")
        for name in lists:
            text = re.sub(rf"\b{re.escape(name)}\[{j}\]", f"{name}[{var}]", text)
        text = re.sub(rf"\b{re.escape(r.needed)}\[(\d+)\]",
                      lambda m: f"{r.needed}[{_plus(var, int(m.group(1)) - j)}]", text)
        return re.sub(rf"\b{re.escape(function.name)}\b", "\0", text)

    calls = [line for line in stage_dict["after"] if not line.startswith(("#", "del "))]
    freed = [line for line in stage_dict["after"] if line.startswith("del ")]
    if len(calls) != 1:
        return None
    return (j, id(listed), tuple(function.params), tuple(map(spelled, function.body)), spelled(calls[0]),
            tuple(freed))


def _plus(var: str, shift: int) -> str:
    return var if not shift else f"{var} + {shift}" if shift > 0 else f"{var} - {-shift}"


def fold_graph_passes(r: Renderer, stage_dicts: list[dict], runs: list[tuple[Stage, Any]]) -> list[dict]:
    """The method's stages with each run of at least MIN_PASSES passes over consecutive graphs
    of one list, alike but for the graph's index, as one stage of a loop over it; a pass before
    such passes that is theirs with work before it (the skip a user's layer sums onto) is the
    loop's first, that work under `if j == first:`."""
    if not r.listed_graphs:
        return stage_dicts
    shapes = [_canonical(r, d, runs[d["position"]][0], _VAR) for d in stage_dicts]

    def run_end(at: int) -> int:
        end = at
        while (shapes[at] is not None and end + 1 < len(stage_dicts) and shapes[end + 1] is not None
               and not shapes[end][5]  # nothing freed between two passes of the loop
               and not any(line.startswith("#") for line in stage_dicts[end + 1]["after"])  # nor said
               and shapes[end + 1][0] == shapes[end][0] + 1 and shapes[end + 1][1:5] == shapes[at][1:5]):
            end += 1
        return end

    # the loop's variable: a name the method binds nowhere else (each loop's function binds it;
    # not taken from the allocator: the preamble's comprehension over the graphs may name its
    # own variable so, in its own scope)
    var = next(v for v in ("j", "k", "t", "jj") if v not in r.names.taken)
    name = ""  # the loops' function's, `layer_j`, taken once: each loop makes its own
    folded: list[dict] = []
    at = 0
    while at < len(stage_dicts):
        end, first = run_end(at), None
        if (end == at and at + 1 < len(stage_dicts) and shapes[at] is not None and shapes[at + 1] is not None
                and not any(line.startswith("#") for line in stage_dicts[at + 1]["after"])):
            first = _first(stage_dicts[at], shapes[at], stage_dicts[at + 1], shapes[at + 1], var)
            end = run_end(at + 1) if first is not None else end
        words = {w for d in stage_dicts[at:end + 1] for line in (*d["function"].body, *d["function"].params)
                 for w in re.findall(r"\b\w+\b", line)}
        if end - at + 1 < MIN_PASSES or var in words:
            folded.append(stage_dicts[at])
            at += 1
            continue
        name = name or r.names.take(f"layer_{var}")
        shape = shapes[at + (first is not None)]
        if first is not None:  # the first pass's work under `if j == 0:`, its input bound so
            shape = (shapes[at][0], *shape[1:3], (*first[0], *shape[3]), first[1], shape[5])
        folded.append(_loop(r, stage_dicts[at:end + 1], runs[stage_dicts[at]["position"]][0], shape, var,
                            shapes[end], name))
        at = end + 1
    return folded


def _first(before: dict, shape: tuple, regular: dict, regular_shape: tuple, var: str
           ) -> tuple[tuple[str, ...], str] | None:
    """Where the pass before a loop's passes is theirs but for work before it that ends in the
    value the others take as a parameter (`x_skip = self.skips[0](x)`, then `return x_skip +
    ...` where the others `return x_skip0 + ...`, x_skip0 their parameter): its work, written
    on that parameter under `if j == first:`, and the call binding the parameter to its input
    on the first graph (`x_skip0=x if j == 0 else x_skip0`); else None."""
    if shape[1] != regular_shape[1] or shape[0] + 1 != regular_shape[0] or shape[5]:
        return None
    params, regular_params = before["function"].params, regular["function"].params
    differ = [k for k, (a, b) in enumerate(zip(params, regular_params)) if a != b]
    if len(params) != len(regular_params) or len(differ) != 1:
        return None
    own, carried = params[differ[0]], regular_params[differ[0]]
    body, regular_body = list(shape[3]), list(regular_shape[3])
    cut = len(body) - len(regular_body)
    if cut < 1 or any(line.lstrip().startswith("#") for line in body[:cut]):
        return None
    prefix, rest = body[:cut], body[cut:]
    assigned = re.match(r"^(\s*)(\w+) = ", prefix[-1])
    if assigned is None:
        return None
    local = assigned.group(2)
    words = {w for line in body for w in re.findall(r"\b\w+\b", line)}
    rest_words = {w for line in rest for w in re.findall(r"\b\w+\b", line)}
    if carried in words or own in rest_words:
        return None

    def on_carried(line: str, *names: str) -> str:
        return re.sub(rf"(?<![.\w])({'|'.join(map(re.escape, names))})\b", carried, line)

    if [on_carried(line, local) for line in rest] != regular_body:
        return None
    # the call: its input bound to the others' parameter on the first graph alone
    binding = re.search(rf"\b{re.escape(own)}=(\w+)\b", shape[4])
    if binding is None:
        return None
    call = shape[4].replace(binding.group(0), f"{carried}={carried}")
    if call != regular_shape[4]:
        return None
    call = call.replace(f"{carried}={carried}", f"{carried}={binding.group(1)} if {var} == {shape[0]} else {carried}")
    indent = assigned.group(1)
    said = [f"{indent}{line}" for line in comment(
        f"on graphs[{shape[0]}], {carried} is {binding.group(1)} (bound so below), and the pass first runs the "
        "work forward runs before its loop over the graphs", 68)]
    # the work as the pass before wrote it (its indices its graph's: it runs there alone)
    work = [f"{indent}if {var} == {shape[0]}:",
            *(f"    {on_carried(line, own, local)}" for line in before["function"].body[:cut])]
    return (*said, *work), call


def _loop(r: Renderer, passes: list[dict], stage: Stage, shape: tuple, var: str, last_shape: tuple,
          name: str) -> dict:
    """One stage dict: the first pass's function and call written with the loop's variable,
    in `for j in range(first, last + 1)` spelled from forward's count."""
    first, last = shape[0], last_shape[0]
    listed, graphs, _ = r.listed_graphs[stage.graph]
    count = len(listed.ops)
    spelled_count = listed.loop.spelled or f"len({graphs})"
    stop = spelled_count if last == count - 1 else f"{spelled_count} - {count - 1 - last}"
    header = f"for {var} in range({stop}):" if first == 0 else f"for {var} in range({first}, {stop}):"
    function = passes[0]["function"]
    body = [line.replace("\0", name).replace(_VAR, var) for line in shape[3]]
    call = shape[4].replace("\0", name).replace(_VAR, var)
    said = [line for line in passes[0]["after"] if line.startswith("#")]
    # the comment above: the first pass's, for the passes over graphs first to last
    text = " ".join(line.lstrip("# ") for line in passes[0]["comment"])
    layer, colon, modules = text.partition(": ")  # `self.convs[1], edge type 1 of 3: self.convs[1][0] ...`
    modules = indexed(modules, first, var).replace(f"{graphs}[{first}]", f"{graphs}[{var}]")
    layer = re.sub(rf"(\w+) {first + 1} of {count}$", rf"\1s {first + 1} to {last + 1} of {count}, one pass each", layer)
    text = f"{layer}{colon}{modules}"
    return {**passes[0],
            "comment": comment(text, 84),
            "opening": [header],
            "pad": "    ",
            "function": replace(function, name=name, params=[*shape[2], f"{var}={var}"], body=body),
            "after": [*(f"    {line}" for line in said), f"    {call}", *last_shape[5]]}

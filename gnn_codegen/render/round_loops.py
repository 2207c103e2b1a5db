"""Render, a loop over the user's layers whose rounds hold passes over all nodes between two
layers, written once (issue 37): a GCN with PairNorm between its layers ran, per layer, the
layer's `map`, then `pair_norm(h)` (its means over all nodes, module_functions.py), then the
pass that finishes PairNorm and prepares the next layer's source rows, and the method wrote
that round out per layer, alike but for names (`h1`, `h2`), module indices (`self.layers[1]`)
and numbers. Such rounds become one loop, as forward's `for i, layer in
enumerate(self.layers)` reads, the last layer after it:

    for i in range(len(self.layers) - 1):
        def layer_i(block, feat, i=i): ...
        h = batches.map(layer_i, ...)
        x, rownorm_mean = pair_norm(h)
        def before_next_layer(out_degrees, x, i=i, rownorm_mean=rownorm_mean): ...
        feat = batches.map_nodes(before_next_layer, ..., nodes=needed[i + 1] if i == 1 else None)

The same passes run on the same rows (the plan is unchanged). Rounds fold where their code is
the same once each round's names are the loop's and its module indices and `needed[...]` are
read from the loop's variable; a `nodes=` the last round alone passes (the passes before
compute every node, since the means after them read every node's rows) is passed in the last
round alone; what the last round alone frees is freed after the loop. The names are proven to
read what they read before (name_resolution.py): within each round, from round to round,
before and after the loop. A function made in the loop reads what the loop binds through
parameters of its own (`i=i`), no closure (flake8-bugbear's B023). Rounds that differ (another
normalisation between two layers, another module) stay apart, as before."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from gnn_codegen.cut.plan import Stage
from gnn_codegen.render.code import comment
from gnn_codegen.render.layer import LayerFunction
from gnn_codegen.render.module_index import last_of, spelled_stop
from gnn_codegen.render.name_resolution import reads_alike, resolution
from gnn_codegen.render.round_text import (Round, code_lines, counted, is_call, offsets, own_renames, read_round,
                                           relative, renamed, renames, spell, split_made, stage_lines)
from gnn_codegen.render.written_as_loop import written_as_loop

# the Renderer (method.py): read for its plan, program and names
Renderer = Any

MIN_LAYERS = 3  # the rounds' layers and the last: three alike read as a loop...
MIN_LOOPED_LAYERS = 2  # ... two where forward runs them from one line of its loop
_PAD = "    "


def fold_rounds(r: Renderer, stages: list[dict], runs: list[tuple[Stage, Any]]) -> list[dict]:
    """The method's stage dicts with the first run of alike rounds (a layer, then passes over
    all nodes) and the layer after them as one loop and that layer (module docstring)."""
    groups: list[list[dict]] = []
    for d in stages:
        if groups and runs[groups[-1][0]["position"]][0].layer == runs[d["position"]][0].layer:
            groups[-1].append(d)
        else:
            groups.append([d])

    def is_round(group: list[dict]) -> bool:
        head = runs[group[0]["position"]][0]
        return (len(group) >= 2 and head.layer > 0 and not head.node_pass
                and all(runs[d["position"]][0].node_pass for d in group[1:]))

    for start in range(len(groups)):
        if not is_round(groups[start]):
            continue
        rounds: list[Round] = []
        for k in range(start, len(groups)):
            one = read_round(r, runs[groups[k][0]["position"]][0].layer, groups[k], k == start) \
                if is_round(groups[k]) else None
            if one is None or (rounds and renames([rounds[0], one]) is None):
                break
            rounds.append(one)
        for count in range(len(rounds), 0, -1):
            following = groups[start + count] if start + count < len(groups) else []
            folded = _folded(r, stages, runs, rounds[:count], following)
            if folded is not None:
                return folded
    return stages


def _layer_function(r: Renderer, d: dict, layer: int) -> Round:
    f = d["function"]
    lines = code_lines([f"def {f.name}({', '.join(f.params)}):", *(f"    {b}" for b in f.body)])
    return Round(layer, [d], [], "", [relative(line, layer, r.needed) for line in lines], [], [])


def _folded(r: Renderer, stages: list[dict], runs, rounds: list[Round], following: list[dict]
            ) -> list[dict] | None:
    """The stage dicts with the rounds as one loop; None where they do not fold. Its layers
    count with the layer after it where that is theirs but for names (forward's last round)."""
    found = renames(rounds)
    if found is None:
        return None
    positions = [one.dicts[0]["position"] for one in rounds]
    head, last = rounds[0].dicts[0], following[0] if len(following) == 1 else None
    last_layer = runs[last["position"]][0].layer if last is not None else -1
    pair = renames([_layer_function(r, head, rounds[0].layer), _layer_function(r, last, last_layer)]) \
        if last is not None and last_layer == rounds[-1].layer + 1 else None
    if pair is not None:
        positions.append(last["position"])  # type: ignore[index]
        if len(rounds) == 1:  # the round's names from its layer's and the next's, and counters
            resolved = resolution(rounds[0].raw)
            outer = set(resolved.bound) | set(resolved.free) if resolved is not None else set()
            found = [own_renames(rounds[0], {**pair[1], **pair[0]}, outer)]
    every = [stage for stage, _ in runs]
    looped = written_as_loop(r.program, [every[p] for p in positions], 0, len(positions) - 1)
    # fewer: where forward's loop is every layer of the method, not a part of it written apart
    whole = rounds[0].layer == 1 and last_layer == r.plan.num_layers == len(positions)
    if len(positions) < MIN_LAYERS and not (len(positions) >= MIN_LOOPED_LAYERS and looped and whole):
        return None
    first_at = next(i for i, d in enumerate(stages) if d is rounds[0].dicts[0])
    end_at = next(i for i, d in enumerate(stages) if d is rounds[-1].dicts[-1])
    return _written(r, stages[:first_at], stages[end_at + 1:], rounds, found)


def _proven(r: Renderer, before: list[dict], after: list[dict], rounds: list[Round], names: list[dict[str, str]],
            made: list[str]) -> tuple[dict[str, str], dict[str, str], list[str]] | None:
    """Whether the loop reads every name as the rounds read it: (the names before the loop the
    first round reads under the loop's name, renamed there; the names after it, bound by the
    last round; what each round binds, by the loop's names); None where a name would read
    another binding."""
    binder: dict[str, int] = {}  # a name -> the round that bound it last, as written
    loop_binder: dict[str, int] = {}  # ... as the loop names it
    entering = {n: names[0][n] for n in (resolution(rounds[0].raw) or _empty()).free if n in names[0]}
    for k, (one, rename) in enumerate(zip(rounds, names)):
        if not reads_alike(one.raw, "\n".join(renamed(one.raw.split("\n"), rename)), rename):
            return None
        resolved = resolution(one.raw)
        if resolved is None:
            return None
        for n in resolved.free:
            loop = rename.get(n, n)
            if n in binder:
                if loop_binder.get(loop) != binder[n]:
                    return None
            elif loop in loop_binder or entering.get(n, n) != loop:
                return None
        for n in resolved.bound:
            binder[n], loop_binder[rename.get(n, n)] = k, k
    made_free = resolution("\n".join(made)) if made else _empty()
    if made_free is None or set(made_free.free) & (set(binder) | set(loop_binder)):
        return None  # a function made before the loop reads no value of it
    returned = [r.buffer[n] for n in r.plan.outputs if n in r.buffer]  # read by the method's return
    resolved_after = resolution(_method_code(after, [f"_ = ({', '.join(returned)},)"] if returned else []))
    resolved_before = resolution(_method_code(before) + "\n" + "\n".join(code_lines(made)))
    if resolved_after is None or resolved_before is None:
        return None
    leaving = {}
    for n in resolved_after.free:
        if n in binder:
            if binder[n] != len(rounds) - 1:
                return None
            leaving[n] = names[-1].get(n, n)
        elif n in loop_binder or n in entering:
            return None
    if any(leaving.get(n, n) != n for n in returned):
        return None  # the return names forward's results as the method's buffers do
    # renamed where they are: a loop's name that code before or after spells otherwise would
    # read another value
    if _spelled(before, set(entering.values()) - set(entering)) or _spelled(after, set(leaving.values()) - set(leaving)):
        return None
    if any(n not in resolved_before.bound for n in entering if entering[n] != n):
        return None  # the caller's tensor, or the preamble's: not renamed (not seen)
    return entering, leaving, list(loop_binder)


def _empty():
    return resolution("")


def _spelled(dicts: list[dict], names: set[str]) -> bool:
    if not names:
        return False
    words = {w for d in dicts for line in _all_lines(d) for w in re.findall(r"\b\w+\b", line)}
    return bool(words & names)


def _all_lines(d: dict) -> list[str]:
    f = d["function"]
    return [*d["before"], *d["comment"], *d["opening"], f.name, *f.params, *f.body, *d["after"]]


def _method_code(dicts: list[dict], extra: list[str] | None = None) -> str:
    lines: list[str] = []
    for d in dicts:
        lines += code_lines(stage_lines(d, split_made(d["before"])[1]))
    return "\n".join([*lines, *(extra or [])])


def _renamed_dict(d: dict, names: dict[str, str]) -> dict:
    f = d["function"]
    return {**d, "before": renamed(d["before"], names), "after": renamed(d["after"], names),
            "comment": renamed(d["comment"], names),
            "function": replace(f, params=renamed(f.params, names), body=renamed(f.body, names))}


def _written(r: Renderer, before: list[dict], after: list[dict], rounds: list[Round],
             names: list[dict[str, str]]) -> list[dict] | None:
    first, final = rounds[0], rounds[-1]
    proven = _proven(r, before, after, rounds, names, first.made)
    if proven is None:
        return None
    entering, leaving, loop_bound = proven
    shifts = offsets(first.code)
    base = min(shifts) if shifts else -1  # the loop's variable: the layer's module index
    nodes = _nodes(rounds)
    dels = _dels(rounds, names, set(loop_bound))
    if nodes is None or dels is None:
        return None
    kept, freed_after = dels
    words = {w for d in (*before, *after, *(d for one in rounds for d in one.dicts)) for line in _all_lines(d)
             for w in re.findall(r"\b\w+\b", line)}
    counter = next((c for c in ("i", "k", "j") if c not in r.names.taken and c not in words), None)
    if counter is None or counter in loop_bound:
        return None
    rename = names[0]
    stop_at = final.layer + base + 1
    loop_text = [line for d in first.dicts for line in _all_lines(d)]
    plain_text = counted(renamed(loop_text, rename), first.layer, counter, base, r.needed)
    stop = spelled_stop(LayerFunction("", [], plain_text), counter, stop_at, dict(r.program.module_lengths))
    last_index = last_of(stop)
    start = first.layer + base
    header = f"for {counter} in range({stop}):" if start == 0 else f"for {counter} in range({start}, {stop}):"
    counts = re.fullmatch(r"len\((.+)\) - 1", stop)
    if (counts and first.layer == 1 and final.layer + 1 == r.plan.num_layers
            and dict(r.program.module_lengths).get(counts.group(1)) == r.plan.num_layers):
        r.layer_count = f"len({counts.group(1)})"  # needed counts every layer as the loop does
    dels_left, calls_left = iter(kept), iter(nodes)
    around = (resolution(first.raw) or _empty()).functions_free

    def text(lines: list[str], last_lines: list[str]) -> list[str]:
        out: list[str] = []
        for line in lines:
            if line.startswith("del "):
                freed = next(dels_left)
                out += [f"del {', '.join(freed)}"] if freed else []
                continue
            if is_call(line):
                spelled = next(calls_left)
                if spelled is not None and spelled[0] == "last":
                    out += _nodes_said(r, last_lines, len(rounds))
                    which = f"{r.needed}[{spell(counter, spelled[1] - base)}]"
                    line = f"{line[:-1]}, {r.nodes}={which} if {counter} == {last_index} else None)"
            out.append(line)
        return counted(renamed(out, rename), first.layer, counter, base, r.needed)

    def padded(lines: list[str]) -> list[str]:
        return [f"{_PAD}{line}" if line else "" for line in lines]

    written: list[dict] = []
    for j, (d, d_last) in enumerate(zip(first.dicts, final.dicts)):
        last_lines = [*d_last["before"], *d_last["after"]]
        own_before = text(split_made(d["before"])[1], last_lines)
        f = d["function"]
        body = counted(renamed(f.body, rename), first.layer, counter, base, r.needed)
        params = renamed(f.params, rename)
        bound = [counter] if any(re.search(rf"\b{counter}\b", line) for line in body) else []
        bound += [rename.get(n, n) for n in around.get(f.name, []) if rename.get(n, n) in loop_bound
                  and rename.get(n, n) not in params and rename.get(n, n) != counter]
        function = replace(f, name=rename.get(f.name, f.name), params=[*params, *(f"{n}={n}" for n in bound)],
                           body=body)
        own_comment = counted(renamed(d["comment"], rename), first.layer, counter, base, r.needed)
        own_after = text(d["after"], last_lines)
        if j == 0:
            span = f"Layer {first.layer}" if first is final else f"Layers {first.layer} to {final.layer}"
            said = comment(f"{span} of {r.plan.num_layers}: {'the' if first is final else 'a'} round of the loop "
                           f"below{'' if first is final else ' each'} (the layer, then the passes over all "
                           f"nodes before the next), alike but for the layer's index, {counter}.")
            made = [*first.made, *([""] if first.made and first.made[-1] else [])]
            written.append({**d, "before": made, "comment": said, "pad": _PAD, "function": function,
                            "opening": [header, *padded(own_before), *padded(own_comment)],
                            "after": padded(own_after)})
        else:
            written.append({**d, "before": padded(own_before), "comment": padded(own_comment), "pad": _PAD,
                            "opening": [], "function": function, "after": padded(own_after)})
    if freed_after:
        written[-1]["after"].append(f"del {', '.join(freed_after)}")
    r.names.take(counter)
    for n in (rename.get(f.name, f.name) for f in (d["function"] for d in first.dicts)):
        r.names.take(n)
    return ([_renamed_dict(d, {n: t for n, t in entering.items() if n != t}) for d in before] + written
            + [_renamed_dict(d, {n: t for n, t in leaving.items() if n != t}) for d in after])


def _nodes(rounds: list[Round]) -> list[tuple[str, int] | None] | None:
    """Per call of a round: its `nodes=` as the loop passes it: ("every", shift) in every round,
    ("last", shift) in the last alone, None in none; None where the rounds pass it otherwise."""
    spelled: list[tuple[str, int] | None] = []
    for c in range(len(rounds[0].nodes)):
        values = [one.nodes[c] for one in rounds]
        if any(len(one.nodes) != len(rounds[0].nodes) for one in rounds):
            return None
        if all(v is None for v in values):
            spelled.append(None)
        elif all(v is not None for v in values) and len({v - one.layer for v, one in zip(values, rounds)}) == 1:  # type: ignore[operator]
            spelled.append(("every", values[0] - rounds[0].layer))  # type: ignore[operator]
        elif values[-1] is not None and all(v is None for v in values[:-1]) and len(rounds) > 1:
            spelled.append(("last", values[-1] - rounds[-1].layer))
        else:
            return None
    return spelled


def _dels(rounds: list[Round], names: list[dict[str, str]], loop_bound: set[str]
          ) -> tuple[list[list[str]], list[str]] | None:
    """What each del of the loop frees (what every round frees there, by the loop's names), and
    what the last round alone frees, or a value of before the loop, freed after the loop; None
    where another round frees more."""
    if any(len(one.dels) != len(rounds[0].dels) for one in rounds):
        return None
    kept: list[list[str]] = []
    after: list[str] = []
    for j in range(len(rounds[0].dels)):
        sets = [[rename.get(n, n) for n in one.dels[j]] for one, rename in zip(rounds, names)]
        common = [n for n in sets[0] if all(n in s for s in sets)]
        if any(n not in common for s in sets[:-1] for n in s):
            return None
        kept.append([n for n in common if n in loop_bound])
        after += [n for n in sets[-1] if n not in kept[-1]]
    return kept, after


def _nodes_said(r: Renderer, lines: list[str], rounds: int) -> list[str]:
    """The last round's comment on where nodes= starts, said of the loop's last round: the
    reductions it lists, one set per round under each round's own names, said once for the
    loop (`x.mean(0) and h2.mean(0)` over two rounds: each round's `x.mean(0)`)."""
    text = " ".join(line.lstrip()[2:] for line in lines if line.lstrip().startswith("# "))
    at = text.find(f"{r.nodes}= from here on:")
    if at < 0:
        return []
    said = text[at:].replace("= from here on:", "= in the last round alone:", 1)
    said = said.replace("every layer and pass above computes", "every layer and pass before it computes", 1)
    listed = re.search(r"since (.+) over all nodes read every node's rows", said)
    items = re.split(r", | and ", listed.group(1)) if listed else []
    if listed and rounds > 1 and len(items) > 1 and len(items) % rounds == 0:
        each = items[:len(items) // rounds]
        each_said = ", ".join(each[:-1]) + " and " + each[-1] if len(each) > 1 else each[0]
        said = said.replace(listed.group(0), f"since each round's {each_said} over all nodes read every node's rows")
    return comment(said, 80)

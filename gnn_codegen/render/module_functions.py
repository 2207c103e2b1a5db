"""Render, a user's module whose call spans several passes, written once as a local function of
the method (issue 37). A module that reads values over all nodes (PairNorm's column mean and
mean row norm, a graph-wide centring) is cut into passes over node ranges with reductions
between them; where forward calls it between every two layers, the method ran the same passes
and reductions again and again, alike but for their names (`col_mean_2`,
`rownorm_mean_terms2`). Here each call's reductions and passes but its last (the last pass
also runs what the cut fused after the module: relu, the next layer's per-source norm) become
one function named for the module, `def pair_norm(h):`, returning what the code after it
reads, and each call `x1, rownorm_mean = pair_norm(h1)`.

Calls fold where their code is the same once the names each call gives its own values are
made anonymous: every op of them ran within the one module (Op.module_call), and the names
the function binds read as the same scopes do (checked on the function's syntax tree, so a
pass's local never hides a value of the function). Calls that differ (another module, another
`nodes=`, another op) stay apart as they were."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from typing import Any

from gnn_codegen.cut.plan import Stage
from gnn_codegen.render.code import comment, replace_in_code
from gnn_codegen.render.layer import LayerWriter

# the Renderer (method.py) that calls fold_module_calls: read for its names, plan and comments
Renderer = Any

# a counter a name took to stay apart from another (`col_mean_2`, `rownorm_mean_terms2`, `h1`)
_COUNTER = re.compile(r"(?<=[A-Za-z])_?\d+(?=_|$)")


@dataclass
class Call:
    """One call of the module: its passes' positions in the method, and its text."""

    positions: list[int]  # the gap's passes; all but the last go into the function
    code: list[str]  # its statements, comments and dels left out
    deleted: list[str]  # what its dels freed
    notes: dict[int, str]  # the comment the method wrote before a line of code, by its index


def function_name(class_name: str) -> str:
    """PairNorm -> pair_norm."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", class_name).lower()


def plain(name: str) -> str:
    """The name without its counters: col_mean_2 -> col_mean, x1 -> x."""
    return _COUNTER.sub("", name) or name


def tokens(code: list[str]) -> list[tuple[int, str]] | None:
    try:
        found = list(tokenize.generate_tokens(io.StringIO("\n".join(code) + "\n").readline))
    except (tokenize.TokenError, IndentationError):
        return None
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    return [(t.type, t.string) for t in found if t.type not in skip]


def _top_level(code: list[str]) -> tuple[list[str], list[str]] | None:
    """(names the statements bind at their level, in order; the functions they define)."""
    try:
        module = ast.parse("\n".join(code))
    except SyntaxError:
        return None
    bound: list[str] = []
    functions: list[str] = []
    for statement in module.body:
        if isinstance(statement, ast.FunctionDef):
            functions.append(statement.name)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                bound += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
        else:
            return None  # a statement the function would not know how to return from
    return list(dict.fromkeys(bound)), functions


def free_names(code: str) -> list[tuple[str, frozenset[str], frozenset[str]]] | None:
    """Per function the code defines at its top level: (name, its locals, the names it reads
    from outside)."""
    try:
        module = ast.parse(code)
    except SyntaxError:
        return None
    found = []
    for statement in module.body:
        if not isinstance(statement, ast.FunctionDef):
            continue
        params = {a.arg for a in statement.args.args}
        stored = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        loaded = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        own = frozenset(params | stored)
        found.append((statement.name, own, frozenset(loaded - own)))
    return found


def _renamed(code: list[str], names: dict[str, str]) -> list[str]:
    if not names:
        return list(code)
    pattern = r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b"
    return [replace_in_code(pattern, lambda m: names[m.group(1)], line) for line in code]


def canonical(calls: list[Call], taken: set[str]) -> tuple[list[dict[str, str]], list[str]] | None:
    """Per call, its names -> the function's (its values' names without counters, its passes'
    `per_node`, its input as a parameter); and the parameters. None where the calls differ but
    for names, or where the names would read otherwise in the function."""
    streams = [tokens(call.code) for call in calls]
    levels = [_top_level(call.code) for call in calls]
    if any(s is None for s in streams) or any(level is None for level in levels):
        return None
    first = streams[0]
    if any(len(s) != len(first) for s in streams):
        return None
    # names bound at the calls' level, and names read from the method that differ between calls
    differing: list[set[str]] = [set() for _ in calls]
    for k, stream in enumerate(streams):
        for (kind, a), (other_kind, b) in zip(first, stream):
            if kind != other_kind or (kind != tokenize.NAME and a != b):
                return None
            if a != b:
                differing[0].add(a)
                differing[k].add(b)
    renames: list[dict[str, str]] = []
    params: list[str] = []
    for k, call in enumerate(calls):
        bound, functions = levels[k]
        outer = differing[k] - set(bound) - set(functions)
        passes = {f: "per_node" if len(functions) == 1 else f"per_node_{i + 1}" for i, f in enumerate(functions)}
        rename = {**{n: plain(n) for n in bound}, **passes}
        # the inputs, in the order the code first reads them
        order = sorted(outer, key=lambda n: next(i for i, (_, t) in enumerate(streams[k]) if t == n))
        inputs = [plain(n) for n in order]
        rename.update(zip(order, inputs))
        if k == 0:
            params = inputs
        renames.append(rename)
    renamed = [tokens(_renamed(call.code, rename)) for call, rename in zip(calls, renames)]
    if any(r != renamed[0] for r in renamed):
        return None
    for call, rename in zip(calls, renames):
        if not _reads_alike(call.code, rename, taken):
            return None
    return renames, params


def _reads_alike(code: list[str], rename: dict[str, str], taken: set[str]) -> bool:
    """The code renamed binds and reads as the code did: the function's own names stay apart
    and apart from what it reads from the method, and no pass's local hides one of them."""
    values = list(rename.values())
    if len(set(values)) != len(values):
        return False
    spelled = {t for kind, t in tokens(code) or () if kind == tokenize.NAME}
    kept = spelled - set(rename)
    level_reads = kept - {n for f in (free_names("\n".join(code)) or ()) for n in f[1]}
    if set(values) & (level_reads | taken):
        return False
    before, after = free_names("\n".join(code)), free_names("\n".join(_renamed(code, rename)))
    if before is None or after is None or len(before) != len(after):
        return False
    for (_, _, free), (_, own, free_after) in zip(before, after):
        if {rename.get(n, n) for n in free} != set(free_after) or own & {rename[n] for n in free if n in rename}:
            return False
    return True


def reads(d: dict) -> set[str]:
    """The names a stage dict's code reads from the method: at its level, and from outside its
    function (a local of its function of the same name is none)."""
    f = d.get("function")
    lines = [*d["before"], *([f"def {f.name}({', '.join(f.params)}):", *(f"    {b}" for b in f.body)] if f else []),
             *d["after"]]
    try:
        module = ast.parse("\n".join(lines))
    except SyntaxError:  # read as any name it spells
        return {t for kind, t in tokens(lines) or () if kind == tokenize.NAME}
    found: set[str] = set()
    for statement in module.body:
        if isinstance(statement, ast.FunctionDef):
            continue
        found |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for _, _, free in free_names("\n".join(lines)) or ():
        found |= free
    return found


def function_lines(name: str, params: list[str], call: Call, rename: dict[str, str],
                   returned: list[str], owner: tuple[str, str]) -> list[str]:
    """`def pair_norm(h):` with the call's code as the function's, its reductions' comments,
    and its return."""
    accessor, cls = owner
    said = comment(f"{accessor}({', '.join(params)}) ({cls}), where forward calls it: its values over all "
                   f"nodes, each summed in a pass over ranges of the rows, and its work once per node up "
                   f"to the last of them; the pass after each call does the rest, with what follows.", 88)
    code = _renamed(call.code, rename)
    body: list[str] = []
    for i, line in enumerate(code):
        if i in call.notes:
            body += comment(reduction_note(call.notes[i], rename), 80)
        if line.startswith("def "):
            body += ["", "# once per node"]
        body.append(line)
        if not line.startswith((" ", "def ")) and "map_nodes(" in line:
            body.append("")
    body.append(f"return {', '.join(returned)}")
    return [*said, f"def {name}({', '.join(params)}):", *(f"    {line}" if line else "" for line in body)]


def reduction_note(text: str, rename: dict[str, str]) -> str:
    """The method's comment on a reduction, said of the function's names: `h.mean(0) over all
    nodes: summed in a pass over ranges of the stored rows`."""
    text = re.sub(r", which [^:]* reads:", ":", text)
    for old, new in sorted(rename.items(), key=lambda item: -len(item[0])):
        text = re.sub(rf"(?<![\w.]){re.escape(old)}\b", new, text)
    return text


def _call_of(dicts: list[dict], last: dict) -> Call:
    """A call's text: the passes before its last (their reductions, functions and calls), and
    the last pass's reductions."""
    lines: list[str] = []
    for d in dicts:
        f = d["function"]
        lines += [*d["before"], *d["comment"], f"def {f.name}({', '.join(f.params)}):",
                  *(f"    {line}" for line in f.body), *d["after"]]
    lines += last["before"]
    code, deleted, notes, pending = [], [], {}, []
    for line in lines:
        if line.startswith("#"):
            pending.append(line[1:].strip())
        elif line.startswith("del "):
            deleted += [n.strip() for n in line[4:].split(",")]
        else:
            if pending and not line.startswith((" ", "def ")):
                notes[len(code)] = " ".join(pending)
            pending = []
            code.append(line)
    return Call([d["position"] for d in dicts] + [last["position"]], code, deleted, notes)


def fold_module_calls(r: Renderer, stages: list[dict], runs: list[tuple[Stage, LayerWriter]],
                      all_nodes_before: int) -> list[dict]:
    """stages (the method's stage dicts, each with its "position") with each user module's
    calls that span several passes, alike in every call, as one local function and a call of it
    where each ran (module docstring). r: the Renderer."""
    at = {d["position"]: i for i, d in enumerate(stages)}
    by_owner: dict[tuple[str, str], list[list[int]]] = {}
    for layer, positions in sorted(r.gaps.items()):
        if (len(positions) < 2 or positions != list(range(positions[0], positions[-1] + 1))
                or any(p not in at or stages[at[p]]["opening"] for p in positions)):
            continue
        names = [placed.name for p in positions[:-1] for placed in runs[p][0].ops]
        names += [n for p in positions for n in (*(m for m, _ in runs[p][0].reductions), *runs[p][0].once)]
        owners = {r.program.op(n).module_call for n in names}
        if len(owners) == 1 and () not in owners:
            by_owner.setdefault(owners.pop(), []).append(positions)
    folded: dict[str, str] = {}  # reduction op -> the function it runs in
    for owner, gaps in by_owner.items():
        if len(gaps) < 2:  # once: the passes as they are read as well
            continue
        calls = [_call_of([stages[at[p]] for p in g[:-1]], stages[at[g[-1]]]) for g in gaps]
        name = r.names.take(function_name(owner[1]))
        found = canonical(calls, {name})
        if found is None:
            continue
        renames, params = found
        # what each call returns: the values the code after it reads, by the function's names
        returned: dict[str, None] = {}
        bound_by_call = []
        for call, rename, g in zip(calls, renames, gaps):
            bound, _ = _top_level(call.code)
            last = dict(stages[at[g[-1]]], before=[])  # its own reductions are the function's
            later = set().union(reads(last), *(reads(d) for d in stages[at[g[-1]] + 1:] if d is not None),
                                r._callers_tensors())
            bound_by_call.append(bound)
            returned.update(dict.fromkeys(rename[n] for n in bound if n in later))
        if not returned:
            continue
        function = function_lines(name, params, calls[0], renames[0], list(returned), owner)
        for k, (call, rename, g, bound) in enumerate(zip(calls, renames, gaps, bound_by_call)):
            back = {v: n for n, v in rename.items() if n in bound}
            targets = [back[v] for v in returned]
            # `rownorm_mean_2` takes its base's name back after (value_names.py)
            inputs = [n for n, v in rename.items() if v in params and n not in bound]
            args = [next(n for n in inputs if rename[n] == p) for p in params]
            freed = [n for n in call.deleted if n not in bound]
            last = stages[at[g[-1]]]
            last["before"] = [*(function + [""] if k == 0 else []), f"{', '.join(targets)} = {name}({', '.join(args)})",
                              *([f"del {', '.join(freed)}"] if freed else [])]
            _after_call(r, last, name, runs[g[-1]][0])
            for p in g[:-1]:
                stages[at[p]] = None
            for p in g:
                for reduction, _ in runs[p][0].reductions:
                    folded[reduction] = name
    stages = [d for d in stages if d is not None]
    if folded and all_nodes_before > 0:  # the `nodes= from here on` comment names the function
        old = r._nodes_from_here(runs[:all_nodes_before + 1])
        new = r._nodes_from_here(runs[:all_nodes_before + 1], folded)
        for d in stages:
            if d["position"] == all_nodes_before:
                rename_in(d, {})
                i = next((i for i in range(len(d["after"])) if d["after"][i:i + len(old)] == old), None)
                if i is not None:
                    d["after"][i:i + len(old)] = new
    return stages


def rename_in(d: dict, names: dict[str, str]) -> None:
    if not names:
        return
    d["before"] = _renamed(d["before"], names)
    d["after"] = _renamed(d["after"], names)
    d["comment"] = _renamed(d["comment"], names)
    f = d.get("function")
    if f is not None:
        f.body[:] = _renamed(f.body, names)


def _after_call(r: Renderer, d: dict, name: str, stage: Stage) -> None:
    """The pass after a call: named for its layer alone (the passes before it are the
    function's), its comment says it reads what the function returned."""
    f = d["function"]
    plain_name = f"before_layer_{stage.layer + 1}" if stage.layer < r.plan.num_layers else "after_last_layer"
    if f.name != plain_name:
        d["after"] = _renamed(d["after"], {f.name: plain_name})
        f.name = plain_name
    text = " ".join(line[1:].strip() for line in d["comment"])
    text = re.sub(r"pass \d+ of \d+, once per node, from what the pass before it stored\.",
                  f"once per node, from what {name} returned:", text)
    text = text.replace("ran in the pass before", f"ran in {name}")
    d["comment"] = comment(text)

"""Render, user layers of several passes each as one loop over the user's layers (issue 37): a
ChebConv or TAGConv of k hops is k layers of the generated inference, one per hop, so a stack
of them read as every pass written out, `layer_3` the copy of `layer_1` for the next module
(`t1_3`, `t1_3_src`). Where the passes repeat with a period p (each user layer, one module of a
list, is p passes: Op.mp.within and .hop say which) and the passes of each user layer are the
previous one's up to names and the module's index, the method writes one loop over the user's
layers, `for i in range(len(self.layers)):`, with the p passes' functions inside it, their
values one name each (`t1`, `h`, `h_src`), as forward's `for layer in self.layers:` reads.

The last user layer's last pass may end otherwise (no next layer's `h * norm` to store, an
activation its module lacks): joined under `if i == len(self.layers) - 1:` as a loop of one
pass per layer joins it (last_copies.py, fewer_stored.py, activation_test.py). Every pass is
compared with the same pass of the other layers once the names are given (module indices from
the loop's variable); any difference leaves every pass apart, as before. Plan and cut are
unchanged: the same passes run on the same rows."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, replace

from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Program
from gnn_codegen.render.last_copies import Ending, returns_first, split_written
from gnn_codegen.render.layer import LayerFunction
from gnn_codegen.render.module_index import counted, uses_name
from gnn_codegen.render.stored_names import SOURCE_SUFFIX
from gnn_codegen.render.written_as_loop import written_as_loop

# the module a pass runs within, as lower/module_calls.py names it: `self.layers[1] (ChebConv)`
_LISTED_MODULE = re.compile(r"^(self(?:\.\w+)+)\[(\d+)\] \((\w+)\)$")
MIN_GROUPS = 3  # two user layers written out one by one read as well apart...
MIN_LOOPED_GROUPS = 2  # ... unless forward runs them from one line of its loop


@dataclass(frozen=True)
class PeriodLoop:
    """A run of user layers of `period` passes each, as one loop over the module list `path`
    from index `base` (the first layer's), its variable `counter`."""

    start: int  # the first pass's position among the method's stages
    period: int
    groups: int  # user layers in the loop
    path: str  # `self.layers`
    kind: str  # `ChebConv`
    base: int
    counter: str
    # each pass's function, written once with the loop's names (`self.layers[i]`)
    functions: tuple[LayerFunction, ...]
    # before the loop: `h = features`, where the first layer reads the caller's tensor
    starts: tuple[str, ...] = ()
    # the last layer's last pass ends otherwise: its lines under `if i == last:`
    ending: Ending | None = None
    last_stores: int = 0  # it stores fewer tensors than the others (its result alone): how many
    # per pass: the loop's names that may be freed after it in each round
    frees: tuple[tuple[str, ...], ...] = ()

    @property
    def end(self) -> int:
        return self.start + self.period * self.groups - 1


def _module_pass(program: Program, stage: Stage) -> tuple[str, int, str, int, int] | None:
    """(list, index, class, hop, hops) of the one listed module whose hop the stage passes."""
    seen = {(op.mp.within, op.mp.hop, op.mp.hops) for op in (program.op(p.name) for p in stage.ops)
            if op.kind == "mp" and op.mp is not None}
    if len(seen) != 1:
        return None
    ((within, hop, hops),) = seen
    found = _LISTED_MODULE.match(within or "")
    if found is None or not hop or not hops or hops < 2:
        return None
    return found.group(1), int(found.group(2)), found.group(3), hop, hops


def _is_layer(stage: Stage, function: LayerFunction) -> bool:
    """A pass over blocks with nothing over all nodes around it: one a loop may run."""
    return (not stage.node_pass and stage.index != 0 and bool(function.params) and function.params[0] == "block"
            and bool(stage.stores) and not stage.reductions and not stage.once)


def find_runs(program: Program, stages: list[Stage], functions: list[LayerFunction]
              ) -> list[tuple[int, int, int, str, str, int]]:
    """(start, period, groups, list, class, first index) of each run of at least two user layers
    of one list, consecutive in it, each `period` passes (hops 1 to period, in order) of one
    module, with no pass over all nodes between them."""
    runs, position = [], 0
    while position < len(stages):
        first = _module_pass(program, stages[position])
        if first is None or first[3] != 1:
            position += 1
            continue
        path, base, kind, _, period = first
        groups = 0
        while True:
            at = position + groups * period
            passes = [_module_pass(program, stages[p]) if p < len(stages) else None for p in range(at, at + period)]
            if passes != [(path, base + groups, kind, hop, period) for hop in range(1, period + 1)]:
                break
            if not all(_is_layer(stages[p], functions[p]) and stages[p].graph == stages[position].graph
                       for p in range(at, at + period)):
                break
            groups += 1
        looped = groups >= MIN_LOOPED_GROUPS and all(
            written_as_loop(program, [stages[position + g * period + j] for g in range(groups)], 0, groups - 1)
            for j in range(period))
        if groups >= MIN_GROUPS or looped:
            runs.append((position, period, groups, path, kind, base))
            position += groups * period
        else:
            position += 1
    return runs


def _first_reads(function: LayerFunction) -> list[str] | None:
    """The function's parameters (but `block`) in the order its body first reads them."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(function.body)))
    except SyntaxError:
        return None
    params = set(function.params[1:])
    reads = sorted((node.lineno, node.col_offset, node.id) for node in ast.walk(tree)
                   if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in params)
    order = list(dict.fromkeys(name for _, _, name in reads))
    return order if len(order) == len(params) else None


class _Classes:
    """Values that one name of the loop holds in turn (a union-find over values)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, value: str) -> str:
        while self.parent.get(value, value) != value:
            value = self.parent[value]
        return value

    def join(self, a: str, b: str) -> None:
        self.parent.setdefault(a, a)
        self.parent.setdefault(b, b)
        self.parent[self.find(a)] = self.find(b)

    def groups(self) -> list[list[str]]:
        by_root: dict[str, list[str]] = {}
        for value in self.parent:
            by_root.setdefault(self.find(value), []).append(value)
        return [members for members in by_root.values() if len(members) > 1]


def _bound(function: LayerFunction) -> dict[str, str]:
    """parameter -> the method's tensor it takes."""
    return {param: tensor for _, pairs in function.bindings() for param, tensor in pairs}


def _classes(run: tuple[int, int, int], stages: list[Stage], functions: list[LayerFunction],
             buffer: dict[str, str]) -> _Classes | None:
    """The values each pass of a user layer reads and stores, joined with those the same pass
    of the layer before reads and stores in their places; None where the places disagree."""
    start, period, groups = run
    value_of = {name: value for value, name in buffer.items()}
    classes = _Classes()
    for g in range(1, groups):
        for j in range(period):
            before, now = start + (g - 1) * period + j, start + g * period + j
            ours, theirs = _first_reads(functions[before]), _first_reads(functions[now])
            if ours is None or theirs is None or len(ours) != len(theirs):
                return None
            bound_before, bound_now = _bound(functions[before]), _bound(functions[now])
            for a, b in zip(ours, theirs):
                if bound_before[a] not in value_of or bound_now[b] not in value_of:
                    return None
                classes.join(value_of[bound_before[a]], value_of[bound_now[b]])
            for a, b in zip(stages[before].stores, stages[now].stores):
                classes.join(a, b)
    return classes


def _chained(members: list[str], stored_at: dict[str, int], read_at: dict[str, list[int]],
             buffer: dict[str, str], outputs: set[str], readers: dict[str, int]) -> list[str] | None:
    """The members in the order the loop holds them (one read from before the loop first),
    where each is read no later than the pass that stores the next; else None."""
    ordered = sorted(members, key=lambda v: stored_at.get(v, -1))
    if sum(v not in stored_at for v in ordered) > 1 or len({stored_at.get(v, -1) for v in ordered}) != len(ordered):
        return None
    for value, following in zip(ordered, ordered[1:]):
        reads = read_at.get(buffer[value], [])
        if value not in stored_at and not all(at <= stored_at[following] for at in reads):
            continue  # read after the loop too: kept under its name, the loop's a copy (`h = x`)
        if (value in outputs or any(at > stored_at[following] for at in reads)
                or readers.get(buffer[value], 0) != len(reads)):  # a reduction reads it too
            return None
    return ordered


def _name(members: list[str], buffer: dict[str, str], outputs: set[str], generic: set[str]) -> str:
    """The name a person gives what the loop carries: forward's result's (`h`); else the
    second layer's with its counter dropped (`t1_3`: t1; `h2_src`: h_src)."""
    returned = [v for v in members if v in outputs]
    if returned:
        return buffer[returned[0]]
    name = buffer[members[min(1, len(members) - 1)]]
    source = name.endswith(SOURCE_SUFFIX)
    stem = re.sub(r"_\d+$", "", name.removesuffix(SOURCE_SUFFIX) if source else name)
    if stem.rstrip("0123456789") in generic:  # `h2`: a layer's counter, not the state's name
        stem = stem.rstrip("0123456789")
    return stem + SOURCE_SUFFIX if source else stem


def _comparable(function: LayerFunction) -> tuple:
    """What two passes' functions must share to be one: their bindings (the runtime binds
    each parameter by its keyword: their order is no matter), body, and how they are called."""
    return (tuple(sorted((keyword, param, tensor) for keyword, pairs in function.bindings() for param, tensor in pairs)),
            tuple(function.body), function.in_place, function.returns)


def _frees(function_reads: list[set[str]], stores: list[set[str]], names: set[str]) -> tuple[tuple[str, ...], ...]:
    """Per pass, the loop's names its round may free after it: read there last in the round,
    and stored again before any pass reads them next (a later pass of the round, or an earlier
    one of the next round before it reads)."""
    period, frees = len(function_reads), []
    for j in range(period):
        freed = []
        for name in sorted(names):
            reads = [at for at in range(period) if name in function_reads[at]]
            stored = [at for at in range(period) if name in stores[at]]
            if not reads or reads[-1] != j or len(stored) != 1:
                continue
            if stored[0] > j or stored[0] < reads[0]:
                freed.append(name)
        frees.append(tuple(freed))
    return tuple(frees)


def fold_periods(program: Program, stages: list[Stage], functions: list[LayerFunction], buffer: dict[str, str],
                 private: set[str], readers: dict[str, int], outputs: set[str], generic: set[str],
                 taken: set[str], take, rewrite) -> tuple[list[LayerFunction], list[PeriodLoop]]:
    """The runs of user layers of several passes each as loops (module docstring): the loop's
    values take one name each (take(base) allocates one; taken: the names in use), the
    functions are written again (rewrite()) and compared; a run whose passes do not come out
    alike keeps its names and passes as they were. buffer: value -> its name in the method
    (changed where a loop names a value); private: the values only the method holds;
    readers: a tensor's name -> how many readers it has (reductions counted too);
    outputs: forward's results."""
    read_at: dict[str, list[int]] = {}
    for p, f in enumerate(functions):
        for tensor in dict.fromkeys((*f.src, *f.dst, *f.edges)):
            read_at.setdefault(tensor, []).append(p)
    loops: list[PeriodLoop] = []
    runs = find_runs(program, stages, functions)
    for start, period, groups, path, kind, base in runs:
        before, names_before = dict(buffer), set(taken)
        found = _fold_run(program, stages, functions, buffer, private, readers, outputs, generic, taken, take,
                          rewrite, read_at, (start, period, groups, path, kind, base))
        if found is None:  # the names as they were, and none taken for it
            buffer.clear()
            buffer.update(before)
            taken.clear()
            taken.update(names_before)
            continue
        loops.append(found)
    if not loops:  # written again where a run was tried: what each line came from, as it was
        return (rewrite() if runs else functions), []
    written = rewrite()
    for loop in loops:  # every pass of every layer as the loop writes it (for what reads them)
        for g in range(loop.groups):
            for j in range(loop.period):
                written[loop.start + g * loop.period + j] = loop.functions[j]
    return written, loops


def _fold_run(program, stages, functions, buffer, private, readers, outputs, generic, taken, take, rewrite,
              read_at, run) -> PeriodLoop | None:
    start, period, groups, path, kind, base = run
    end = start + period * groups - 1
    classes = _classes((start, period, groups), stages, functions, buffer)
    if classes is None:
        return None
    stored_at = {value: p for p in range(start, end + 1) for value in stages[p].stores}
    entries: dict[str, str] = {}  # a value from before the loop -> the loop's name it starts
    names: set[str] = set()
    for members in classes.groups():
        ordered = _chained(members, stored_at, read_at, buffer, outputs, readers)
        if ordered is None:
            return None
        name = _name(ordered, buffer, outputs, generic)
        holders = {buffer[v] for v in ordered}
        if name in taken and name not in holders:
            name = take(name)
        elif name not in taken:
            name = take(name)
        names.add(name)
        first = ordered[0]
        entry = first not in stored_at
        # read by the first layer alone, and the method's own: stored under the loop's name
        renamed = not entry or (first in private and all(start <= at < start + period
                                                         for at in read_at.get(buffer[first], []))
                                and readers.get(buffer[first], 0) == len(read_at.get(buffer[first], [])))
        for value in ordered if renamed else ordered[1:]:
            buffer[value] = name
        if not renamed:
            entries[first] = name
    if not names:
        return None
    counter = take("i")
    # the first layer written as the others, its input under the loop's name
    callers = {value: buffer[value] for value in entries}
    buffer.update(entries)
    written = rewrite()
    buffer.update(callers)
    if any(uses_name(written[p], counter) for p in range(start, end + 1)):
        return None
    index = [base + (p - start) // period for p in range(len(written))]

    def at(g: int, j: int) -> LayerFunction:
        p = start + g * period + j
        return counted(written[p], index[p], counter, 0)

    last_group = groups - 1
    last = at(last_group, period - 1)
    regular = at(groups - 2, period - 1)
    templates = [at(last_group, j) for j in range(period - 1)] + [regular]
    for g in range(groups):
        for j in range(period):
            if (g, j) != (last_group, period - 1) and _comparable(at(g, j)) != _comparable(templates[j]):
                return None
    ending, fewer = None, 0
    if _comparable(last) != _comparable(regular):
        parted = split_written(regular, last, None)
        if parted is None:
            return None
        stored, stored_regular = stages[end].stores, stages[end - period].stores
        if len(stored) < len(stored_regular):
            fewer = len(stored)
            if not returns_first(parted, fewer):
                return None
        elif len(stored) != len(stored_regular):
            return None
        templates[-1] = replace(regular, body=list(parted.regular))
        ending = parted.ending
    elif len(stages[end].stores) != len(stages[end - period].stores):
        return None
    for j, function in enumerate(templates):
        ends = ending if j == period - 1 else None
        templates[j], ends = _neighbours_named(function, ends, names)
        ending = ends if j == period - 1 else ending
    starts = tuple(f"{name} = {callers[value]}" for value, name in entries.items())
    function_reads = [{*f.src, *f.dst, *f.edges} for f in templates]
    stores = [{buffer[v] for v in stages[start + j].stores} for j in range(period)]
    frees = _frees(function_reads, stores, names - {buffer[v] for v in outputs if v in buffer})
    return PeriodLoop(start, period, groups, path, kind, base, counter, tuple(templates), starts, ending, fewer,
                      frees)


# a neighbour aggregate's local: `h = block.dstdata["h"]`, `h_2 = ...` beside a parameter `h`
_AGGREGATE = re.compile(r"^\s*(\w+) = block\.dstdata\[")


def _neighbours_named(function: LayerFunction, ending: Ending | None, names: set[str]
                      ) -> tuple[LayerFunction, Ending | None]:
    """The function (and its ending) with a neighbour aggregate named as DGL's SAGEConv names
    one, `h_neigh`, where it would read as the loop's state: named as one of the loop's names
    (`h`), or with a counter because a parameter holds its name (`h_2` beside `h`)."""
    lines = [*function.body, *(ending.last if ending is not None else ())]
    renames = {}
    for line in function.body:
        found = _AGGREGATE.match(line)
        if found is None:
            continue
        local = found.group(1)
        base = re.sub(r"_\d+$", "", local)
        if local in function.params:  # it rebinds a parameter read before it: every read would move
            continue
        if local in names or (base != local and base in function.params):
            wanted = f"{base}_neigh"
            if not any(re.search(rf"\b{wanted}\b", other) for other in lines) and wanted not in function.params:
                renames[local] = wanted
    if not renames:
        return function, ending
    # not the block's fields, `block.dstdata["h"]`: a name between quotes stays
    pattern = re.compile(r"(?<![\"'])\b(" + "|".join(map(re.escape, renames)) + r")\b(?![\"'])")
    def spell(line: str) -> str:
        return pattern.sub(lambda m: renames[m.group(1)], line)

    if ending is not None:
        ending = replace(ending, last=tuple(map(spell, ending.last)))
    return replace(function, body=list(map(spell, function.body))), ending

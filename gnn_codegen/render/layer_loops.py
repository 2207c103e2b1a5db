"""Render, consecutive identical layers as one loop (issue 37): where three or more layers in a
row are the same function of the layer before (APPNP's hops, a stack of one module kind
applied with the same weights), the method writes that function once and a `for` loop over
the layers, as a person writing the loop by hand would, instead of one copy per layer.

A run qualifies when each of its layers stores only what the next layer alone reads, and its
functions are identical once those tensors have one name each (h, and the source rows a
GraphConv normed for the next layer: `h, feat = batches.map(layer_k, source_rows=dict(feat=feat),
destination_rows=dict(h=h))`). This module finds the runs and the
values to name alike; render.py names them, writes the functions again and checks that they
came out identical before it folds them (else it keeps the layers apart). The layer after a run
that is the run's code but for how it ends is the run's last, its ending apart in the one
function (last_copies.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gnn_codegen.cut.plan import Stage
from gnn_codegen.render.alike_bodies import anonymous_body
from gnn_codegen.render.last_copies import Ending, ends_otherwise, returns_first, split_written
from gnn_codegen.render.layer import LayerFunction
from gnn_codegen.render.module_index import counted, counted_ending, offsets, relative, uses_name
from gnn_codegen.render.stored_names import SOURCE_SUFFIX, running_name

MIN_RUN = 3  # two copies read as well as a loop; three or more do not
# ... unless the user wrote the two as a loop: then the loop is what reads as their code
MIN_LOOPED_RUN = 2


@dataclass(frozen=True)
class LayerLoop:
    start: int  # positions in the method's stages, both ends included
    end: int
    # per tensor the loop carries from layer to layer (h, and GraphConv's normed source rows):
    # the values its one variable holds in turn, the first layer's input first
    chained: tuple[tuple[str, ...], ...]
    # layers that differ in their module's index (module_index.py): the loop's variable runs
    # over the first layer's index (its layer + base), and names it (counter, given by fold)
    indexed: bool = False
    base: int = 0
    counter: str = ""
    # per tensor each layer stores for a stage after the loop alone (DAGNN's every hop, which
    # its last layer stacks): the values, one per layer, kept in a list in turn
    collected: tuple[tuple[str, ...], ...] = ()
    # the run's last layer is the others' code but for how it ends (last_copies.py): it ends
    # without preparing a next layer's rows, or with forward's work after the run; `ending`,
    # given by fold, says where
    ends_otherwise: bool = False
    ending: Ending | None = None
    # a last layer that stores fewer tensors than the others (ChebConv's last `h` where the
    # others store `h, h * norm`: no next layer's source rows): how many, the others' first
    # ones; 0 where it stores as many
    last_stores: int = 0


def _is_layer(stage: Stage, function: LayerFunction) -> bool:
    """A layer over blocks with no pass over all nodes before it: one that may be in a loop."""
    return (not stage.node_pass and stage.index != 0 and bool(function.params)
            and function.params[0] == "block" and bool(stage.stores) and not stage.reductions and not stage.once)


def _carried(before: Stage, function: LayerFunction, buffer: dict[str, str], private: set[str],
             readers: dict[str, int], whole: bool = True, kept=lambda value: False) -> dict[int, str] | None:
    """The function's parameters that the stage before stores for it alone: parameter position
    -> value. Between two layers of a loop (whole), None unless every value the stage before
    stores is such a parameter or kept(value) (read by later layers alone: find_loops checks
    which); before the loop's first layer, the stage before (the prologue, say) may also store
    what others read."""
    by_name = {buffer[v]: v for v in before.stores}
    # a layer function's parameters after `block` are its src, dst and edge tensors, in order
    # (render_layer.py); one tensor may be two parameters (`h` on sources, `h_dst`)
    arguments = ["block", *function.src, *function.dst, *function.edges]
    carried = {i: by_name[a] for i, a in enumerate(arguments)
               if a in by_name and by_name[a] in private and readers.get(a) == 1}
    if whole and not all(v in carried.values() or (kept(v) and buffer[v] not in arguments) for v in before.stores):
        return None
    return carried


def _shape(function: LayerFunction, positions: set[int], layer: int | None = None) -> tuple | None:
    """The function with the parameters at `positions` made anonymous, to compare with another;
    with its layer, its module indices too, relative to it (module_index.py)."""
    if any(i >= len(function.params) for i in positions):
        return None
    names = {function.params[i]: f"\0{i}" for i in positions}
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b") if names else None

    def anonymous(text: str) -> str:
        text = pattern.sub(lambda m: names[m.group(1)], text) if pattern else text
        return text if layer is None else relative(text, layer)

    # the body with its locals anonymous too (alike_bodies.py), where it parses alone
    body = anonymous_body(function.body, names)
    lines = (tuple(anonymous(line) for line in function.body) if body is None
             else tuple(line if layer is None else relative(line, layer) for line in body))
    # the tensors bound, by their parameter's position: the first layer may bind the caller's
    # x to two of them (SAGEConv's `x` and `x_dst`) where the others bind `feat` and `h`
    bound = [names.get(function.params[k], anonymous(t)) if k < len(function.params) else anonymous(t)
             for k, t in enumerate(["", *function.src, *function.dst, *function.edges]) if k]
    src, dst = len(function.src), len(function.dst)
    return (tuple(anonymous(p) for p in function.params), lines, tuple(bound[:src]),
            tuple(bound[src:src + dst]), tuple(bound[src + dst:]), function.in_place, function.returns)


def find_loops(stages: list[Stage], functions: list[LayerFunction], buffer: dict[str, str],
               private: set[str], readers: dict[str, int],
               looped=lambda start, end: False, last_copies=lambda regular, last: False,
               own_hops=lambda start, end: False) -> list[LayerLoop]:
    """The runs of at least MIN_RUN consecutive layers that may become one loop, or of
    MIN_LOOPED_RUN where looped(start, end) says the user's forward runs them in a loop
    (written_as_loop.py) or own_hops(start, end) that they are every hop of one module, its
    own loop (SGConv's k=2: `for k in range(1, self.net._k + 1)`, issue 37). A run's next layer
    that is its layers' code but for how it ends (last_copies.py) is the run's last where
    last_copies(end, next) says that forward runs it as it runs them (from the same line:
    written_as_loop.same_lines); of a module's own hops, one hop and the last that ends
    otherwise are a run too (SGConv's hop 1, then hop 2 with its `fc`).

    buffer: value -> its name in the method; private: the values only the method holds (not
    forward's inputs or results); readers: a tensor's name -> how many stages read it."""
    # links[i]: how layer i+1 reads what layer i stores (parameter position -> value), where
    # it reads all of it and nothing else does
    # the positions of the functions that read each tensor
    read_at: dict[str, list[int]] = {}
    for p, f in enumerate(functions):
        for tensor in {*f.src, *f.dst, *f.edges}:
            read_at.setdefault(tensor, []).append(p)

    def kept(value: str) -> bool:  # stored for later layers' functions alone (no reduction)
        name = buffer[value]
        return value in private and len(read_at.get(name, ())) == readers.get(name, 0) > 0

    links: list[dict[int, str] | None] = [None] * len(stages)
    for i in range(len(stages) - 1):
        if (_is_layer(stages[i], functions[i]) and _is_layer(stages[i + 1], functions[i + 1])
                and stages[i].graph == stages[i + 1].graph):
            links[i] = _carried(stages[i], functions[i + 1], buffer, private, readers, kept=kept)

    def order(link: dict[int, str], stage: Stage) -> tuple[int, ...]:  # store j -> its positions
        return tuple(tuple(i for i, v in link.items() if v == store) for store in stage.stores)

    def shape(i: int, link: int, indexed: bool) -> tuple | None:  # function i, its params as link's
        return _shape(functions[i], set(links[link]), stages[i].layer if indexed else None)

    def run(position: int, indexed: bool) -> tuple[int, int]:
        end = position
        while (end + 1 < len(stages) and links[end] is not None
               and (end == position or order(links[end], stages[end]) == order(links[end - 1], stages[end - 1]))
               and (end == position or shape(end, end - 1, indexed) == shape(end + 1, end, indexed))):
            end += 1
        start = position
        # the first layer reads, in the carried places, what any stage before stored or the
        # caller's tensor: the loop's variables start from it (renamed, or `h = x` before it)
        if end > start and (not _is_layer(stages[start], functions[start])
                            or shape(start, start, indexed) != shape(start + 1, start, indexed)):
            start += 1
        return start, end

    def carried(link: int) -> dict[str, int]:  # function link + 1's parameters -> which store
        return {functions[link + 1].params[p]: j for j, ps in enumerate(order(links[link], stages[link]))
                for p in ps}

    def with_last(start: int, end: int, indexed: bool, alone: bool = False) -> tuple[int, bool]:
        """The run's end, one layer further where that layer ends otherwise (last_copies.py);
        alone: the run is one layer (its carried parameters are where the next reads what it
        stores), one hop of a module's own loop."""
        after = end + 1
        before = end if alone else end - 1
        if (end < start + (not alone) or after >= len(stages) or links[end] is None
                or links[before] is None or not _is_layer(stages[after], functions[after])
                or (alone and not _is_layer(stages[end], functions[end]))
                or not 0 < len(stages[after].stores) <= len(stages[end].stores)
                or not all(order(links[end], stages[end])) or not all(order(links[before], stages[before]))):
            return end, False
        layers = (stages[end].layer, stages[after].layer) if indexed else None
        # alone: its parameters where the next reads the carried values (fold checks the
        # functions written with the loop's names, and falls back where they differ)
        positions = [(j, p) for j, ps in enumerate(order(links[end], stages[end])) for p in ps]
        if alone and any(p >= len(functions[end].params) for _, p in positions):
            return end, False
        regular = {functions[end].params[p]: j for j, p in positions} if alone else carried(end - 1)
        if last_copies(end, after) and ends_otherwise(functions[end], functions[after], regular,
                                                      carried(end), layers):
            return after, True
        return end, False

    def enough(start: int, end: int) -> bool:
        return end - start + 1 >= MIN_RUN or (end - start + 1 >= MIN_LOOPED_RUN
                                              and (looped(start, end) or own_hops(start, end)))

    loops: list[LayerLoop] = []
    position = 0
    while position < len(stages):
        # identical layers, or else layers identical but for their module's index
        (start, end), indexed = run(position, False), False
        end, otherwise = with_last(start, end, indexed)
        if not enough(start, end):
            (start, end), indexed = run(position, True), True
            end, otherwise = with_last(start, end, indexed)
        if not enough(start, end):  # one hop of a module's own loop, then its last
            hop, with_hop = with_last(position, position, False, alone=True)
            if with_hop and own_hops(position, hop):
                (start, end), indexed, otherwise = (position, hop), False, True
        collected: tuple[int, ...] = ()
        if enough(start, end):
            # stores no layer of the loop reads: read after it alone, or the loop ends sooner
            collected = tuple(j for j, p in enumerate(order(links[start], stages[start])) if not p)
            first_reader = min((read_at[buffer[stages[i].stores[j]]][0] for i in range(start, end + 1)
                                for j in collected), default=len(stages))
            end = min(end, first_reader - 1)
        if enough(start, end):
            arguments = ["block", *functions[start].src, *functions[start].dst, *functions[start].edges]
            value_of = {name: value for value, name in buffer.items()}
            # a last layer that stores fewer: the others' first ones (fold checks its return)
            chained = tuple(
                (value_of[arguments[p[0]]], *(stages[i].stores[j] for i in range(start, end + 1)
                                              if j < len(stages[i].stores)))
                for j, p in enumerate(order(links[start], stages[start])) if p
            )
            fewer = len(stages[end].stores) if otherwise and len(stages[end].stores) < len(stages[end - 1].stores) else 0
            shifts = offsets(functions[start], stages[start].layer) if indexed else set()
            kept_values = tuple(tuple(stages[i].stores[j] for i in range(start, end + 1)) for j in collected)
            if fewer and collected:  # not both (never seen): no loop
                position = end + 1
                continue
            loops.append(LayerLoop(start, end, chained, bool(shifts), min(shifts, default=0), "", kept_values,
                                   otherwise and not collected, last_stores=fewer))
        position = end + 1
    return loops


def _caller_done(name: str, start: int, buffer: dict[str, str], functions: list[LayerFunction],
                 rebinds) -> bool:
    """Whether `name` is a caller's tensor that only layers before position `start` read (a
    loop from there may take its name, as forward rebinds it)."""
    caller = next((value for value, named in buffer.items() if named == name and rebinds(value)), None)
    return caller is not None and all(p < start for p, f in enumerate(functions) if name in {*f.src, *f.dst, *f.edges})


def fold(stages: list[Stage], functions: list[LayerFunction], buffer: dict[str, str], private: set[str],
         readers: dict[str, int], take_name, rewrite,
         looped=lambda start, end: False, rebinds=lambda value: False,
         last_copies=lambda regular, last: False,
         own_hops=lambda start, end: False) -> tuple[list[LayerFunction], list[LayerLoop]]:
    """Finds the loops, gives each loop's chained values one name (take_name(base, value) allocates
    it), and writes the functions again (rewrite()); a loop whose functions did not come out
    identical, but for their names, leaves every layer apart, with the names put back; one whose
    last layer does not come out as the others' code but for its ending is found again without
    last copies."""
    loops = find_loops(stages, functions, buffer, private, readers, looped, last_copies, own_hops)
    if not loops:
        return functions, []
    before = dict(buffer)
    claimed: set[str] = set()  # caller's names a loop's variable took (_caller_done)
    for loop in loops:
        for values in loop.chained:
            last, first = values[-1], values[0]  # forward's result keeps its name; else the running state's
            # a last layer that ends otherwise: named as the layers before it, whose result
            # it may be (APPNP's `feat`, which the other hops send on as `feat_src`)
            # (a value the last layer does not store is named as the others' last)
            ends_here = loop.ends_otherwise and values[-1] in stages[loop.end].stores
            named = values[-2] if ends_here else last
            running = running_name(buffer[named])
            if ends_here and buffer[last] == running.removesuffix(SOURCE_SUFFIX):
                name = buffer[last]
            elif (named in private and running not in claimed
                  and _caller_done(running, loop.start, buffer, functions, rebinds)):
                name = running  # the caller's x, read before the loop alone: `x = self.linear1(x)`
                claimed.add(name)
            else:
                name = take_name(running, last) if named in private else buffer[named]
            if named in private and rebinds(first) and buffer[first] == running:
                # the caller's `h`, read by the loop's first layer alone: the loop's `h` takes its
                # name, `h = batches.map(...)` as forward's `h = layer(g, h)`, not `h_2 = h`
                name = buffer[first]
            # the first input too, where a stage before stored it for the loop alone; else (the
            # caller's x, a tensor read later) the loop's variable starts as a copy of it
            entry = first in private and readers.get(buffer[first]) == 1
            for value in values if entry else values[1:]:
                buffer[value] = name
        for values in loop.collected:  # `feats_by_layer[0]`, ... (layer_calls.py appends them)
            listed = take_name(f"{running_name(buffer[values[-1]])}_by_layer")
            for i, value in enumerate(values):
                buffer[value] = f"{listed}[{i}]"
    loops = [replace(loop, counter=take_name("i")) if loop.indexed else loop for loop in loops]
    written = rewrite()
    for at, loop in enumerate(loops):  # the last layer's ending apart, as written (last_copies.py)
        if not loop.ends_otherwise:
            continue
        regular, last_layer = stages[loop.end - 1].layer, stages[loop.end].layer
        split = split_written(written[loop.end - 1], written[loop.end],
                              (regular, last_layer) if loop.indexed else None)
        if split is not None and loop.last_stores and not returns_first(split, loop.last_stores):
            split = None
        if split is None:
            buffer.clear()
            buffer.update(before)
            return fold(stages, functions, buffer, private, readers, take_name, rewrite, looped, rebinds,
                        own_hops=own_hops)
        written[loop.end] = replace(written[loop.end - 1], body=list(split.regular))
        loops[at] = replace(loop, ending=split.ending)
    for loop in loops:  # module indices from the loop's variable (module_index.py)
        if not loop.indexed:
            continue
        run = range(loop.start, loop.end + 1)
        ending = [] if loop.ending is None else [LayerFunction("", [], list(loop.ending.last))]
        if any(uses_name(f, loop.counter) for f in (*(written[p] for p in run), *ending)):  # a local would hide it
            buffer.clear()
            buffer.update(before)
            return rewrite(), []
        if loop.ending is not None:  # its own lines too, where they read the others' modules
            layers = (stages[loop.end - 1].layer, stages[loop.end].layer)
            last = counted_ending(loop.ending.last, written[loop.end - 1], layers, loop.counter, loop.base)
            loops[loops.index(loop)] = loop = replace(loop, ending=replace(loop.ending, last=last))
        for p in run:  # a last layer that ends otherwise holds the layer before's code
            layer = stages[p - 1 if p == loop.end and loop.ends_otherwise else p].layer
            written[p] = counted(written[p], layer, loop.counter, loop.base)
    for loop in loops:  # the first may read the caller's x where the others read h
        bodies = {(tuple(f.params), tuple(f.body), tuple(f.src), tuple(f.dst), tuple(f.edges), f.in_place, f.returns)
                  for f in written[loop.start + 1:loop.end + (0 if loop.ends_otherwise else 1)]}
        # none where the run is one layer and its last (a module's own hops: SGConv's two)
        if len(bodies) > 1:  # not expected (the functions compared equal before): no loops
            buffer.clear()
            buffer.update(before)
            return rewrite(), []
    return written, loops

"""Stage 5a, cut (policy), the search: the placement of least (stored + reloaded, work, stage
sum) under cut.py's cost model, over the ops whose stage is free, in topological order.

The search is a dynamic program: a placement's cost is a sum of parts, each known once two ops
have a stage (a value and one of its readers: the reader's stage and rows may add a stored copy
or a reload of the value), so the best rest of a placement depends only on the step and a small
state: the stage of every value that still has readers to place, whether it is stored yet, and
the rows it is already reloaded at in the stages those readers may still take. Each state is
solved once. A chain of rounds (APPNP's ten, each a few ops that may sit on either side of a
cut) is then linear in the rounds, where a plain branch and bound is exponential. Past
SEARCH_LIMIT states it falls back to a branch and bound that keeps the best placement found
after SEARCH_LIMIT partial placements and says that it stopped (Placement.optimal)."""

from __future__ import annotations

import math
from typing import Any

from gnn_codegen.cut.placement import DEFAULT_FANOUT, CutNode, Placement, _Graph, after_deps, place_asap
from gnn_codegen.cut.cost import _role_in, _rows_factor, _value_terms, _work

SEARCH_LIMIT = 200_000


def place_optimal(nodes: tuple[CutNode, ...], fanout: float = DEFAULT_FANOUT,
                  limit: int = SEARCH_LIMIT) -> Placement:
    """A placement of least cost; exact unless `limit` was not enough, which the result's
    `optimal` flag says."""
    problem = _Problem(nodes, fanout)
    try:
        return problem.memoized(limit)
    except _TooManyStates:
        return problem.branch_and_bound(limit)


# the cost of a branch that leaves some op no stage: above every placement's, infinite ones too
_DEAD_END = (math.inf, math.inf, 1 << 62)


class _TooManyStates(Exception):
    pass


class _Problem:
    def __init__(self, nodes: tuple[CutNode, ...], fanout: float):
        self.fanout = fanout
        self.g = g = _Graph.of(nodes)
        self.order = [n.name for n in nodes]
        self.fixed = {n: g.low[n] for n in self.order if g.low[n] == g.high[n]}
        self.free = [n for n in self.order if n not in self.fixed]
        self.asap = dict(place_asap(nodes).stage)
        position = {n: i for i, n in enumerate(self.free)}
        self.step = {n: position.get(n, -1) for n in self.order}  # fixed ops: before step 0

    def choices(self, name: str, stage: dict[str, int]) -> list[int]:
        node = self.g.by_name[name]
        low = max([self.g.low[name]] + [after_deps(node, stage[d]) for d in node.deps])
        # the simple rule's stage first: the first complete placement is a good bound
        return sorted(self.g.stages_of(name, low), key=lambda k: (k != self.asap.get(name), k))

    def placement(self, chosen: dict[str, int], optimal: bool) -> Placement:
        return Placement(tuple((n, chosen[n]) for n in self.order), self.g.num_stages, optimal=optimal)

    # -- the dynamic program ----------------------------------------------------------------------
    def memoized(self, limit: int) -> Placement:
        g, fanout = self.g, self.fanout
        stage = dict(self.fixed)
        # per value: stored yet, and the rows factor of its reload in each later stage so far
        stored: dict[str, bool] = {}
        reloads: dict[str, dict[int, float]] = {n: {} for n in self.order}
        # (value, reader) pairs complete at the step that places the later of the two
        pairs: dict[int, list[tuple[str, str]]] = {}
        for c in self.order:
            for d in dict.fromkeys(g.by_name[c].deps):
                pairs.setdefault(max(self.step[d], self.step[c]), []).append((d, c))
        last_pair = {n: max([self.step[n]] + [self.step[c] for c in g.consumers[n]]) for n in self.order}

        def add_value(name: str) -> float:
            """An output is stored whatever reads it."""
            node = g.by_name[name]
            if node.is_output and not node.is_input:
                return _store(name)
            return 0.0

        def _store(name: str) -> float:
            if stored.get(name):
                return 0.0
            stored[name] = True
            node = g.by_name[name]
            if node.row_bytes is None:
                return math.inf
            return 0.0 if node.is_input else _rows_factor("edge" if node.rows == "edge" else "dst", fanout) * node.row_bytes

        def add_pair(value: str, reader: str) -> float:
            """What `reader`, in its stage, adds to the cost of `value`: a stored copy the first
            time a later stage reads it, a reload per later stage on the dearest rows read."""
            node, k = g.by_name[value], stage[reader]
            if not (k > stage[value] or node.is_input):  # inputs are loaded even by the prologue
                return 0.0
            cost = _store(value)
            if node.row_bytes is None:
                return cost
            factor = _rows_factor(_role_in(g, value, reader, k), fanout)
            before = reloads[value].get(k, 0.0)
            if factor > before:
                reloads[value][k] = factor
                cost += (factor - before) * node.row_bytes
            return cost

        def place(i: int) -> float:
            """The cost that placing step i's op (or, for i == -1, the fixed ops) adds."""
            cost = sum(add_value(n) for n in (self.free[i:i + 1] if i >= 0 else self.fixed))
            return cost + sum(add_pair(d, c) for d, c in pairs.get(i, []))

        def state(i: int) -> tuple[Any, ...]:
            """Everything the steps from i on read of the steps before: per value that still
            has readers to place, its stage, whether it is stored, and its reloads in the
            stages those readers may take."""
            items = []
            for n in self.order:
                if last_pair[n] < i or n not in stage:
                    continue
                later = [c for c in g.consumers[n] if self.step[c] >= i]
                first = min((g.low[c] for c in later), default=0)
                items.append((stage[n], stored.get(n, False),
                              tuple(sorted((k, f) for k, f in reloads[n].items() if k >= first))))
            return (i, tuple(items))

        place(-1)
        best: dict[tuple[Any, ...], tuple[tuple[float, float, int], int]] = {}

        def solve(i: int) -> tuple[float, float, int]:
            if i == len(self.free):
                return (0.0, 0.0, 0)
            key = state(i)
            if key in best:
                return best[key][0]
            if len(best) >= limit:
                raise _TooManyStates
            name, found = self.free[i], None
            # what placing step i may change, to undo it before the next choice
            touched = {name, *(d for d, _ in pairs.get(i, []))}
            for k in self.choices(name, stage):
                stage[name] = k
                saved = {n: (dict(reloads[n]), stored.get(n)) for n in touched}
                added = place(i)
                rest = solve(i + 1)
                total = (added + rest[0], _work(g, name, k, fanout) + rest[1], k + rest[2])
                rank = (round(total[0], 6), round(total[1], 6), total[2])
                if found is None or rank < found[0]:
                    found = (rank, total, k)
                for n, (before, was_stored) in saved.items():
                    reloads[n] = before
                    if was_stored is None:
                        stored.pop(n, None)
                    else:
                        stored[n] = was_stored
            if found is None:  # the stages chosen before leave this op none: a dead end,
                best[key] = (_DEAD_END, None)  # dearer than any placement
                return _DEAD_END
            del stage[name]
            best[key] = (found[1], found[2])
            return found[1]

        if solve(0) >= _DEAD_END:
            raise _TooManyStates  # no complete placement found this way: the search that follows
        # follow the best choice of each state from the start
        for i, name in enumerate(self.free):
            stage[name] = best[state(i)][1]
            place(i)
        return self.placement(dict(stage), optimal=True)

    # -- the fallback -------------------------------------------------------------------------------
    def branch_and_bound(self, limit: int) -> Placement:
        """Depth first, bounded by the cost terms already fixed (a value's terms are known once
        it and all its readers have a stage); past `limit` partial placements it keeps the best
        found."""
        g, fanout = self.g, self.fanout
        settle: dict[int, list[str]] = {}
        for n in self.order:
            settle.setdefault(max([self.step[n]] + [self.step[c] for c in g.consumers[n]]), []).append(n)
        stage = dict(self.fixed)

        def terms(names: list[str]) -> float:
            return sum(sum(_value_terms(g, n, stage, fanout)[:2]) for n in names)

        best: list = [None, None]  # key, stages
        explored = 0

        def key_of(cost: float, work: float, stage_sum: int) -> tuple[float, float, int]:
            return (round(cost, 6), round(work, 6), stage_sum)

        def search(i: int, cost: float, work: float, stage_sum: int) -> None:
            nonlocal explored
            explored += 1
            if explored > limit and best[0] is not None:
                return
            # every term of the key only grows as stages are chosen: a partial placement no
            # better than the best complete one cannot lead to a strictly better one
            if best[0] is not None and key_of(cost, work, stage_sum) >= best[0]:
                return
            if i == len(self.free):
                best[0], best[1] = key_of(cost, work, stage_sum), dict(stage)
                return
            name = self.free[i]
            for k in self.choices(name, stage):
                stage[name] = k
                search(i + 1, cost + terms(settle.get(i, [])), work + _work(g, name, k, fanout), stage_sum + k)
            del stage[name]

        base_work = sum(_work(g, n, stage[n], fanout) for n in self.fixed)
        search(0, terms(settle.get(-1, [])), base_work, 0)
        return self.placement(best[1], optimal=explored <= limit)

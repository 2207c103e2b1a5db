"""Stage 5a, cut (policy), the cost model: bytes stored and reloaded and work of a placement,
its transfers, and the brute force the search is proven against."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Iterator, Literal

from gnn_codegen.cut.placement import CutNode, DEFAULT_FANOUT, Placement, Role, Rows, _Graph, after_deps


# a value read at several rows in one stage is loaded at the dearest: source rows start with the
# destination rows, and a gather serves what reads in place too
_DEAREST_FIRST = ("edge", "src", "src_in_place", "dst", "node")


@dataclass(frozen=True)
class Cost:
    """Bytes per node of the graph; multiply by the node count for a graph's totals."""

    stored: float
    reloaded: float
    work: float

    @property
    def total(self) -> float:
        return self.stored + self.reloaded

    def key(self) -> tuple[float, float]:
        return (round(self.total, 6), round(self.work, 6))


@dataclass(frozen=True)
class Transfer:
    """One stored value: written in stage `stage`, reloaded in `loads` (stage, rows)."""

    name: str
    stage: int
    row_bytes: int
    rows: Rows
    stored: float  # bytes per node
    loads: tuple[tuple[int, Role | Literal["node"]], ...]
    reloaded: float  # bytes per node


def _role_in(g: _Graph, value: str, consumer: str, stage: int) -> Role | Literal["node"]:
    """The rows `consumer`, placed in `stage`, reads `value` at."""
    node = g.by_name[value]
    if node.rows == "edge":
        return "edge"
    if stage == 0:
        return "node"
    c = g.by_name[consumer]
    if c.reduces:
        return "dst"  # each stored row read once, in a pass over ranges of nodes
    if c.is_mp:
        roles = dict(c.roles).get(value, ("src",))
        return next(r for r in _DEAREST_FIRST if r in roles)
    return g.space(consumer, stage)


def _rows_factor(role: str, fanout: float) -> float:
    return fanout if role in ("src", "edge") else 1.0


def _value_terms(g: _Graph, name: str, stage: dict[str, int], fanout: float) -> tuple[float, float, list]:
    """(stored, reloaded, loads) bytes per node for one value, given its and its readers' stages."""
    node = g.by_name[name]
    s = stage[name]
    later: dict[int, set[str]] = {}
    for c in g.consumers[name]:
        if stage[c] > s or node.is_input:  # inputs are loaded even by the prologue
            later.setdefault(stage[c], set()).add(_role_in(g, name, c, stage[c]))
        elif stage[c] < s:
            raise ValueError(f"{c} runs before {name}, which it reads")
    stored_needed = bool(later) or (node.is_output and not node.is_input)
    if not stored_needed:
        return 0.0, 0.0, []
    if node.row_bytes is None:
        return float("inf"), 0.0, []
    own_rows = _rows_factor("edge" if node.rows == "edge" else "dst", fanout)
    stored = 0.0 if node.is_input else own_rows * node.row_bytes
    reloaded, loads = 0.0, []
    for k in sorted(later):
        roles = later[k]
        role = next(r for r in _DEAREST_FIRST if r in roles)
        reloaded += _rows_factor(role, fanout) * node.row_bytes
        loads.append((k, "src" if role == "src_in_place" else role))
    return stored, reloaded, loads


def _work(g: _Graph, name: str, stage: int, fanout: float) -> float:
    node = g.by_name[name]
    if node.is_mp or node.is_input or not node.row_bytes:
        return 0.0
    return _rows_factor(g.space(name, stage), fanout) * node.row_bytes


def evaluate(nodes: tuple[CutNode, ...], placement: Placement, fanout: float = DEFAULT_FANOUT) -> Cost:
    g = _Graph.of(nodes)
    stage = dict(placement.stage)
    stored = reloaded = work = 0.0
    for n in nodes:
        s, r, _ = _value_terms(g, n.name, stage, fanout)
        stored, reloaded = stored + s, reloaded + r
        work += _work(g, n.name, stage[n.name], fanout)
    return Cost(stored, reloaded, work)


def transfers(nodes: tuple[CutNode, ...], placement: Placement, fanout: float = DEFAULT_FANOUT) -> tuple[Transfer, ...]:
    """Every stored value of a placement with its cost, for --explain."""
    g = _Graph.of(nodes)
    stage = dict(placement.stage)
    result = []
    for n in nodes:
        s, r, loads = _value_terms(g, n.name, stage, fanout)
        if s or r or loads:
            result.append(Transfer(n.name, stage[n.name], n.row_bytes or 0, n.rows, s, tuple(loads), r))
    return tuple(result)


def valid_placements(nodes: tuple[CutNode, ...]) -> Iterator[Placement]:
    """Every valid placement: each op in a stage it may take (passes before a layer included,
    `pass_slots`), none before what it reads (exponential; small graphs only)."""
    g = _Graph.of(nodes)
    order = [n.name for n in nodes]
    for stages in product(*(g.stages_of(n) for n in order)):
        stage = dict(zip(order, stages))
        if any(after_deps(n, stage[d]) > stage[n.name] for n in nodes for d in n.deps):
            continue
        yield Placement(tuple(stage.items()), g.num_stages)


def brute_force(nodes: tuple[CutNode, ...], fanout: float = DEFAULT_FANOUT) -> tuple[Placement, Cost]:
    """The cheapest of every valid placement by the search's key: the reference the tests hold
    place_optimal to."""
    best = None
    for placement in valid_placements(nodes):
        cost = evaluate(nodes, placement, fanout)
        key = (*cost.key(), sum(k for _, k in placement.stage))
        if best is None or key < best[0]:
            best = (key, placement, cost)
    assert best is not None
    return best[1], best[2]

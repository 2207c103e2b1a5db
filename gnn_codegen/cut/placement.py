"""Stage 5a, cut (policy): decide in which stage every op runs. A pure function on a small
torch-free dependency graph, separate from building the Plan (plan.py), as fx's split_module
separates its policy callback from the mechanism.

Message-passing depth d(v) = max(d(inputs)) + [v is message passing] (`mp_depths`, which also
counts reductions over all nodes as barriers). A message-passing op of depth k runs in stage k
(its layer); a stage without one is a pass over ranges of nodes. Any other op may run in any
stage from its latest producer's to its earliest consumer's; stage 0 is a prologue over all nodes for work that reads only
forward's inputs. Between stages, values are stored on the host for every node and reloaded by
the later stages that read them, so where an op runs decides which tensors cross a boundary.

The cost of a placement (`evaluate`), in bytes per node of the graph:
  * stored: every value some later stage reads, and every output, is written once per row
    (rows × width × dtype size; forward's inputs are the caller's and cost nothing to store);
  * reloaded: each later stage that reads a stored value loads it once, on the rows it needs:
    a block's source rows (`fanout` rows gathered per stored row: a batch's in-neighbours
    outnumber the batch), or its destination rows (one read per row), or its edges (`fanout`
    per node, as many as in-edges). Source rows that a convolution reads only inside its
    messages are read in place where the stored tensor is on the device (the CPU: the
    benchmark's SGC gathered its features per batch, 2.5x forward's time, when this was priced
    as a gather), and priced once per row;
  * work, only to break ties: the bytes every op outside message passing produces, repeated
    `fanout` times when it runs on source rows after a cut, once when it runs before; then the
    earlier stage.

A convolution's work on each source row (write_out.py: GAT's fc, GraphConv's degree norm, a
narrowing SAGEConv's fc_neigh; CutNode.source_work) is placed by the same cost as any op, in
one of three kinds of places: at the end of the layer that makes its input (or in the
prologue), once per node; in a pass over ranges of nodes right before its convolution's layer,
once per node, from stored rows (a stage of its own, `pass_slots`); or in the convolution's own
layer, on every gathered source row of every batch. A pass reads once more rows that the layer
before it stored, so it never moves fewer bytes than the end of that layer: the search weighs
it and does not take it. (A fixed rule placed this work as early as its inputs allow and a
rewrite after the search moved it into such passes, for peak host memory, with a read that
--explain did not count; the rule stored a widening Linear's 256-wide output before
SAGEConv(256, 8) for every node where its 16-wide input suffices: issue 34.)

A reduction over all nodes (`h.mean(0)`, node_reductions.py) is a barrier: it reads every
stored row of h in a pass before its stage's batch loop, so it runs in a stage after h's
(`after_deps`), and costs h's store and one read per row; the result is one small tensor.

`cut_search.place_optimal` returns a placement of least (stored + reloaded, work, stage sum),
proven against brute-force enumeration (`brute_force`) in tests/test_cut.py.

Why not a max-flow minimum cut per boundary: a stored tensor is written once however many
boundaries it crosses (a skip connection) and is reloaded on source or destination rows
depending on where its readers run; with those costs a placement's price is not a sum of
pairwise submodular terms (checked on a residual block: f(0,0)+f(1,1) > f(0,1)+f(1,0)), so a
per-boundary cut is not optimal in general.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# src_in_place: source rows a convolution reads only inside its messages, which a stored tensor
# on the device gives in place, without gathering them (render_layer.LayerWriter.in_place)
Role = Literal["src", "src_in_place", "dst", "edge"]
# global: one value for all nodes (a reduction over them, CutNode.reduces)
Rows = Literal["node", "edge", "tuple", "global"]

DEFAULT_FANOUT = 8.0


@dataclass(frozen=True)
class CutNode:
    name: str
    deps: tuple[str, ...]  # ops whose values it reads (inline expressions looked through)
    is_mp: bool = False
    is_input: bool = False
    # bytes one row of its value takes (width × dtype size); None: it cannot be stored (a tuple)
    row_bytes: int | None = 0
    rows: Rows = "node"
    # message passing only: how it reads each dep (node features on source or destination
    # rows, edge tensors per edge)
    roles: tuple[tuple[str, tuple[Role, ...]], ...] = ()
    is_output: bool = False
    reads_graph: bool = False  # reads the graph or edges: never in the prologue
    # a convolution's work on each source row (write_out.py): the one kind of op that may also
    # run in a pass over ranges of nodes right before its convolution's layer (`pass_slots`);
    # the simple rule runs it as early as its inputs allow, once per node
    source_work: bool = False
    # a reduction over all nodes (node_reductions.py): it reads its dep's stored rows in a pass
    # before its stage's batch loop, so it runs in a stage after the one that makes them
    reduces: bool = False
    # message passing only: the graph whose blocks it runs on (forward's, or one derived from it)
    graph: str = ""


def after_deps(node: "CutNode", stage_of_dep: int) -> int:
    """The earliest stage `node` may take after a dep placed in `stage_of_dep`."""
    return stage_of_dep + 1 if node.reduces else stage_of_dep


@dataclass(frozen=True)
class Placement:
    stage: tuple[tuple[str, int], ...]  # op name -> stage (0 for inputs and the prologue)
    num_stages: int  # message-passing stages, 1..num_stages
    optimal: bool = True  # False: the search stopped at its limit (cut_search.py)

    def of(self, name: str) -> int:
        return dict(self.stage)[name]


def mp_depths(nodes: tuple[CutNode, ...]) -> dict[str, int]:
    """The earliest stage each op can run in: a message-passing op runs a stage after the
    convolutions its input comes from, and a reduction over all nodes a stage after what it
    reduces (in a pass before that stage's loop). A convolution reading a reduction, or what is
    computed from one and stored rows alone, runs in the reduction's stage: the value is whole
    before the stage's loop begins; but where the convolution's work per source row reads it
    (GraphConv's norm, GAT's fc), that work runs in a pass over ranges of nodes of that stage,
    once per node, and the convolution a stage later. A stage no convolution reaches this way is a pass over ranges
    of nodes (between layers, where reductions chain: PairNorm's mean then its mean row norm; or
    after the last layer: HAN's semantic attention before its classifier)."""
    depth: dict[str, int] = {}
    # whether the value at its earliest stage comes out of that stage's loop (made from a
    # convolution of that stage), not whole before it
    in_loop: dict[str, bool] = {}
    # a stage's loop runs on the blocks of one graph: convolutions of one depth on several
    # graphs (HAN's GAT per metapath graph) take a stage each, in the order forward calls them
    graph_of_stage: dict[int, str] = {}
    # whole before its stage's loop because it is computed from a reduction of that stage
    made_from_reduction: dict[str, bool] = {}
    for node in nodes:
        if node.reduces:
            depth[node.name] = max((depth[d] for d in node.deps), default=0) + 1
            in_loop[node.name] = False
        elif node.is_mp:
            k = max([1] + [depth[d] + int(in_loop[d]) for d in node.deps])
            while graph_of_stage.setdefault(k, node.graph) != node.graph:
                k += 1
            depth[node.name] = k
            in_loop[node.name] = True
        else:
            depth[node.name] = max((depth[d] for d in node.deps), default=0)
            in_loop[node.name] = any(in_loop[d] and depth[d] == depth[node.name] for d in node.deps)
            # a convolution's work per source row on what is made from a reduction, whole only
            # before its stage's loop (HAN's GAT fc after the semantic attention): in a pass over
            # ranges of nodes of that stage, once per node, and the convolution a stage later
            # (run in the convolution's loop, it would be done again for every batch)
            if node.source_work and any(made_from_reduction.get(d) and depth[d] == depth[node.name]
                                     for d in node.deps):
                in_loop[node.name] = True
        made_from_reduction[node.name] = node.reduces or (not in_loop[node.name] and any(
            made_from_reduction.get(d) and depth[d] == depth[node.name] for d in node.deps))
    return depth


def pass_slots(nodes: tuple[CutNode, ...]) -> tuple[dict[str, int], frozenset[int]]:
    """The stages ops are placed in: mp_depths' with a pass over ranges of nodes inserted right
    before each layer after the first whose convolutions read work per source row
    (CutNode.source_work) and that follows a layer directly, and the indices of those passes. Only
    such work may run there (`_Graph.stages_of`): once per node from the stored rows of what it
    reads, where at the end of the layer before it runs from that layer's rows and in its
    convolution's layer once per gathered row. (Before the first layer, the prologue is that
    pass; after a reduction over all nodes, the pass that reduction makes.)"""
    depth = mp_depths(nodes)
    by_name = {n.name: n for n in nodes}
    layers = {depth[n.name] for n in nodes if n.is_mp}
    fed = {depth[n.name] for n in nodes if n.is_mp and any(by_name[d].source_work for d in n.deps)}
    before = sorted(j for j in fed if j >= 2 and j - 1 in layers)

    def shifted(k: int) -> int:
        return k + sum(1 for j in before if j <= k)

    return {name: shifted(k) for name, k in depth.items()}, frozenset(shifted(j) - 1 for j in before)


def place_asap(nodes: tuple[CutNode, ...]) -> Placement:
    """The simple rule: every op as early as its producers allow (a cut right after each
    message-passing op), never in the prologue (nor in a pass before a layer), except a
    convolution's work per source row, which goes where its inputs are made (the prologue, or
    the end of a layer), once per node (CutNode.source_work)."""
    g = _Graph.of(nodes)
    depth = g.depth
    stage: dict[str, int] = {}
    for node in nodes:
        if node.is_input:
            stage[node.name] = 0
        elif node.is_mp:
            stage[node.name] = depth[node.name]
        elif node.source_work:
            stage[node.name] = g.low[node.name]
        else:
            stage[node.name] = max([1] + [after_deps(node, stage[d]) for d in node.deps])
            if node.reduces:  # no later than its readers allow: what it reads moves earlier
                stage[node.name] = min(stage[node.name], g.high[node.name])
            # edge rows in the next layer, not in a pass over ranges of nodes
            stage[node.name] = next(iter(g.stages_of(node.name, stage[node.name])), stage[node.name])
    for node in reversed(nodes):  # what such work reads runs no later (the prologue, say)
        for d in node.deps:
            stage[d] = min(stage[d], stage[node.name] - (1 if node.reduces else 0))
    return Placement(tuple(stage.items()), g.num_stages)


# --- the cost model ------------------------------------------------------------------------------


@dataclass
class _Graph:
    """Facts about the nodes that do not depend on the placement."""

    nodes: tuple[CutNode, ...]
    by_name: dict[str, CutNode] = field(default_factory=dict)
    consumers: dict[str, list[str]] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)
    num_stages: int = 0
    # stages k where a non-MP op placed in stage k runs on source rows: it feeds, through
    # non-MP ops, the source features of a message-passing op of stage k
    feeds: dict[str, frozenset[int]] = field(default_factory=dict)
    low: dict[str, int] = field(default_factory=dict)
    high: dict[str, int] = field(default_factory=dict)
    # stages without message passing: passes over ranges of nodes, where no edge has a row
    node_passes: frozenset[int] = frozenset()
    # the passes before a layer that only a convolution's work per source row may take (pass_slots)
    slots: frozenset[int] = frozenset()

    def stages_of(self, name: str, low: int | None = None) -> list[int]:
        """The stages an op may take (from `low`, when its deps' stages raise it)."""
        node = self.by_name[name]
        start = self.low[name] if low is None else low
        return [k for k in range(start, self.high[name] + 1)
                if not (node.rows == "edge" and k in self.node_passes)
                and not (k in self.slots and (not node.source_work or node.reads_graph))]

    @classmethod
    def of(cls, nodes: tuple[CutNode, ...]) -> "_Graph":
        g = cls(nodes)
        g.by_name = {n.name: n for n in nodes}
        g.consumers = {n.name: [] for n in nodes}
        for n in nodes:
            for d in dict.fromkeys(n.deps):
                g.consumers[d].append(n.name)
        g.depth, g.slots = pass_slots(nodes)
        g.num_stages = max(g.depth.values(), default=0)
        layers = {g.depth[n.name] for n in nodes if n.is_mp}
        g.node_passes = frozenset(range(1, g.num_stages + 1)) - layers
        for n in reversed(nodes):
            stages: set[int] = set()
            for c in g.consumers[n.name]:
                consumer = g.by_name[c]
                if consumer.reduces:
                    continue  # it reads the stored rows once each, in a pass of its own
                if consumer.is_mp:
                    if {"src", "src_in_place"} & set(dict(consumer.roles).get(n.name, ())):
                        stages.add(g.depth[c])
                else:
                    stages |= g.feeds[c]
            g.feeds[n.name] = frozenset(stages)
        prologue = {n.name: _prologue_allowed(n, g) for n in nodes}
        for n in nodes:
            if n.is_input:
                g.low[n.name] = 0
            elif n.is_mp:
                g.low[n.name] = g.depth[n.name]
            else:
                floor = 0 if prologue[n.name] else 1
                g.low[n.name] = max([floor] + [after_deps(n, g.low[d]) for d in n.deps])
        for n in reversed(nodes):
            if n.is_input:
                g.high[n.name] = 0
            elif n.is_mp:
                g.high[n.name] = g.depth[n.name]
            else:  # a reduction reads its dep in a stage after the dep's
                g.high[n.name] = min([g.num_stages] + [g.high[c] - (1 if g.by_name[c].reduces else 0)
                                                       for c in g.consumers[n.name]])
        return g

    def space(self, name: str, stage: int) -> Role | Literal["node"]:
        """The rows an op placed in `stage` runs on."""
        node = self.by_name[name]
        if node.rows == "edge":
            return "edge"
        if stage == 0:
            return "node"
        if node.is_mp:
            return "dst"
        return "src" if stage in self.feeds[name] else "dst"


def _prologue_allowed(node: CutNode, g: _Graph) -> bool:
    """Stage 0 runs over node rows without blocks: node-row work on forward's inputs only."""
    if node.is_mp or node.reads_graph or node.rows == "edge":
        return False
    return all(g.by_name[d].is_input and g.by_name[d].rows == "node" or
               _prologue_allowed(g.by_name[d], g) for d in node.deps) if node.deps else False


def check_placement(nodes: tuple[CutNode, ...], placement: Placement) -> None:
    g = _Graph.of(nodes)
    stage = dict(placement.stage)
    for n in nodes:
        if stage[n.name] not in g.stages_of(n.name):
            raise ValueError(f"{n.name} in stage {stage[n.name]}, outside {g.low[n.name]}..{g.high[n.name]}")
        for d in n.deps:
            if after_deps(n, stage[d]) > stage[n.name]:
                raise ValueError(f"{n.name} in stage {stage[n.name]} reads {d} of stage {stage[d]}")



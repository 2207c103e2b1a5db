"""Stage 5b, plan (mechanism): apply a Placement to the Program. For every stage: the ops it
runs and the row space of each (source rows of the block, or its destination rows), the stored
tensors it loads and in which rows, the ones it writes, and the buffers it can free after."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import math

import torch

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.cut.placement import DEFAULT_FANOUT, CutNode, Placement, _Graph, place_asap
from gnn_codegen.cut.cost import Cost, evaluate
from gnn_codegen.cut.search import place_optimal
from gnn_codegen.cut.prologue_work import first_layer_work_in_prologue
from gnn_codegen.lower.edge_masks import graph_arguments, is_edge_subgraph
from gnn_codegen.errors import UnsupportedOperationError, internal
from gnn_codegen.ir import Op, Program, Ref, iter_refs, reads_device
from gnn_codegen.analysis.mp_arguments import Space, mp_feature_spaces
from gnn_codegen.analysis.node_reductions import node_reduction
from gnn_codegen.analysis.whole_prefixes import row_count_of_tensor



@dataclass(frozen=True)
class PlacedOp:
    name: str
    space: Space


@dataclass(frozen=True)
class Stage:
    index: int
    ops: tuple[PlacedOp, ...]
    loads: tuple[tuple[str, Space], ...]  # (stored value, rows it is read at)
    stores: tuple[str, ...]  # values computed here that later stages or the caller need
    frees: tuple[str, ...]  # stored values no later stage reads
    # the graph whose blocks the stage runs on: forward's, or one derived from it
    # (derived_graphs.py); "" for the prologue and passes over node ranges
    graph: str = ""
    # reductions over all nodes computed before the stage's batch loop, from stored rows:
    # (the reduction's op, the value it reduces), node_reductions.py
    reductions: tuple[tuple[str, str], ...] = ()
    # values computed from those alone (`torch.softmax(w, dim=0)`), once, after them
    once: tuple[str, ...] = ()
    # the layer it is (a stage with message passing), or how many layers come before it (the
    # prologue, and passes over ranges of nodes that no convolution needs: cut.mp_depths)
    layer: int = 0
    node_pass: bool = False


@dataclass(frozen=True)
class Stored:
    value: str
    shape: tuple[int, ...]
    dtype: str
    stage: int  # 0: a forward input (passed in by the caller), or computed in the prologue
    rows: Literal["node", "edge"] = "node"


@dataclass(frozen=True)
class Cut:
    """The placement the plan follows, the simple rule's for comparison, and both costs."""

    nodes: tuple[CutNode, ...]
    placement: Placement
    simple: Placement
    cost: Cost
    simple_cost: Cost
    fanout: float


@dataclass(frozen=True)
class Plan:
    stages: tuple[Stage, ...]
    stored: tuple[Stored, ...]
    outputs: tuple[str, ...]
    cut: Cut

    @property
    def num_layers(self) -> int:
        return max((s.layer for s in self.stages), default=0)

    def stage_name(self, stage: Stage) -> str:
        """`prologue`, `layer 2`, `pass before layer 3` or `pass after the last layer`: how the
        generated code's comments and --explain name a stage."""
        if stage.index == 0:
            return "prologue"
        if not stage.node_pass:
            return f"layer {stage.layer}"
        return f"pass before layer {stage.layer + 1}" if stage.layer < self.num_layers else "pass after the last layer"


def inline_ops(program: Program, attrs: Attributes) -> frozenset[str]:
    info = attrs.as_dict()
    return frozenset(op.name for op in program.ops if info[op.name].rows in ("inline",))


def value_deps(program: Program, inline: frozenset[str], refs: Any) -> tuple[str, ...]:
    """The non-inline ops that `refs` reads, looking through inline expressions (not through
    `h.device`: where a batch computes, every tensor is on the device inference is given,
    which is what the generated code reads instead, render_layer.py)."""
    seen: list[str] = []

    def visit(name: str) -> None:
        op = program.op(name)
        if op.kind == "graph" or reads_device(program, op):
            return
        if name in inline:
            for r in op.refs():
                visit(r)
        elif name not in seen:
            seen.append(name)

    for name in iter_refs(refs):
        visit(name)
    return tuple(seen)


def row_deps(program: Program, inline: frozenset[str], info: dict[str, Any], refs: Any) -> tuple[str, ...]:
    """value_deps less the node tensors `refs` reads only for their row count (`x.shape[0]`,
    `x.size(0)`): in a layer's batch the count is its block's (render/layer_expressions.py
    writes `block.num_dst_nodes()`), so those rows are neither loaded nor kept for it (GeniePath's
    first LSTM memory, `torch.zeros(1, x.shape[0], d)`, passed the raw input x to layer 1 only
    to be counted)."""
    seen: list[str] = []

    def visit(name: str) -> None:
        op = program.op(name)
        if op.kind == "graph" or reads_device(program, op):
            return
        counted = row_count_of_tensor(Ref(name), program)
        if name in inline and counted is not None and info[counted].rows == "node":
            return
        if name in inline:
            for r in op.refs():
                visit(r)
        elif name not in seen:
            seen.append(name)

    for name in iter_refs(refs):
        visit(name)
    return tuple(seen)


def dtype_size(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype.replace("torch.", ""))).element_size()


def cut_graph(program: Program, inline: frozenset[str], attrs: Attributes) -> tuple[CutNode, ...]:
    """The torch-free dependency graph cut.py places, with what its cost model needs: bytes
    per row of every value, and the rows each message-passing op reads its inputs at."""
    info = attrs.as_dict()
    outputs = set(program.output_refs())
    graphs = {op.name for op in program.ops if op.kind == "graph"}  # forward's, and derived ones
    nodes = []
    for op in program.ops:
        if op.kind == "graph" or op.name in inline:
            continue
        deps = value_deps(program, inline, (op.args, tuple(v for _, v in op.kwargs)))
        value = info[op.name]
        if value.rows in ("node", "edge"):
            row_bytes: int | None = math.prod(value.shape) * dtype_size(value.dtype)
        elif value.rows == "global":
            row_bytes = 0  # one small tensor for all nodes, kept on the device (node_reductions.py)
        else:
            row_bytes = None  # a tuple: its elements are stored, never the tuple
        roles: dict[str, list[str]] = {}
        if op.kind == "mp":
            for refs, space in mp_feature_spaces(op):
                # a stored tensor a convolution reads only inside messages may be read in place
                # (render_layer.LayerWriter.in_place): the cut prices it as read once per row
                direct = space == "src" and isinstance(refs, Ref) and op.mp is not None and op.mp.sources_in_place
                for d in value_deps(program, inline, refs):
                    roles.setdefault(d, []).append("src_in_place" if direct and d == refs.name else space)
        reads_graph = bool(graphs & _direct_and_inline_refs(program, inline, op))
        nodes.append(CutNode(
            op.name, deps, is_mp=op.kind == "mp", is_input=op.kind in ("input", "graph_value"), row_bytes=row_bytes,
            rows="tuple" if value.rows == "tuple" else "edge" if value.rows == "edge" else
                 "global" if value.rows == "global" else "node",
            roles=tuple((d, tuple(r)) for d, r in roles.items()), is_output=op.name in outputs,
            reads_graph=reads_graph, source_work=op.once_per_node,
            reduces=value.rows == "global" and node_reduction(op, lambda n: info[n].rows) is not None,
            graph=mp_graph(op) if op.kind == "mp" else "",
        ))
    return tuple(nodes)


def _direct_and_inline_refs(program: Program, inline: frozenset[str], op: Op) -> set[str]:
    refs, todo = set(), list(op.refs())
    while todo:
        name = todo.pop()
        if name in refs:
            continue
        refs.add(name)
        if name in inline:
            todo.extend(program.op(name).refs())
    return refs


def build_plan(program: Program, attrs: Attributes, fanout: float = DEFAULT_FANOUT,
               optimize: bool = True) -> Plan:
    """Place the ops (cut_search.place_optimal, or the simple rule without `optimize`) and derive
    every stage's loads, stores and frees from the placement."""
    inline = inline_ops(program, attrs)
    nodes = cut_graph(program, inline, attrs)
    # forward without message passing (an MLP backbone, `forward(self, g, x)` reading at most
    # g's node count) is all input-only work: stage 0 alone, run over batches of nodes
    _check_every_op_placeable(nodes, program)
    # the first layer's skip where later layers' runs, in the prologue (prologue_work.py), in
    # both: the simple rule's cost is the optimal one's bound under the same rule
    simple = first_layer_work_in_prologue(nodes, place_asap(nodes))
    placement = first_layer_work_in_prologue(nodes, place_optimal(nodes, fanout)) if optimize else simple
    stage_of = dict(placement.stage)
    deps = {n.name: n.deps for n in nodes}
    info = attrs.as_dict()
    # in a layer (a stage with message passing: a block per batch), what an op reads of rows,
    # less what it only counts (row_deps); the placement kept those as dependencies all the same
    layers = {stage_of[n.name] for n in nodes if n.is_mp}
    for n in nodes:
        if stage_of[n.name] in layers and program.op(n.name).kind != "mp" and not n.is_input:
            op = program.op(n.name)
            deps[n.name] = row_deps(program, inline, info, (op.args, tuple(v for _, v in op.kwargs)))
    outputs = tuple(dict.fromkeys(program.output_refs()))
    inputs = {n.name for n in nodes if n.is_input}
    info = attrs.as_dict()
    stages = []
    first = 0 if any(k == 0 and n not in inputs for n, k in placement.stage) else 1
    # one value for all nodes: reductions, and what is computed from them alone (node_reductions.py)
    reduced = {n.name: n.deps[0] for n in nodes if n.reduces}
    once = [n.name for n in nodes if n.rows == "global" and not n.reduces]
    global_values = set(reduced) | set(once)
    # reductions placed in a pass that computes nothing per node (what read them went to the
    # layer after it, which reads source rows): computed before the next stage's loop instead,
    # not in a pass of its own that would store nothing
    carried: list[int] = []
    for k in range(first, placement.num_stages + 1):
        members = [n.name for n in nodes if stage_of[n.name] == k and not n.is_input and n.name not in global_values]
        if not members and not any(stage_of[r] == k for r in reduced) and not any(stage_of[n] == k for n in once):
            continue  # a pass before a layer (cut.pass_slots) that nothing was placed in
        if not members and k < placement.num_stages:
            carried.append(k)
            continue
        space: dict[str, Space] = {}
        needs: dict[str, set[Space]] = {}
        for name in reversed(members):
            op = program.op(name)
            if op.kind == "mp":  # a value per edge of the block: g.apply_edges (edge_functions.py)
                space[name] = "edge" if info[name].rows == "edge" else "dst"
                for refs, sp in mp_feature_spaces(op):
                    for d in value_deps(program, inline, refs):
                        needs.setdefault(d, set()).add(sp)
            else:
                if info[name].rows == "edge":
                    space[name] = "edge"
                else:
                    space[name] = "src" if "src" in needs.get(name, set()) else "dst"
                for d in deps[name]:
                    needs.setdefault(d, set()).add(space[name])
        for name in members:
            for d in deps[name]:
                if d in space and space[d] == "dst" and space[name] == "src":
                    raise internal(f"{name} needs source rows of {d}, computed on destination rows")
        # Source rows start with the destination rows, so a value loaded on source rows gives
        # its destination rows as a slice instead of a second host-to-device copy.
        loads = tuple(
            (d, sp) for d in needs if d not in space and d not in global_values for sp in ("src", "dst", "edge")
            if sp in needs[d] and not (sp == "dst" and "src" in needs[d])
        )
        later = {d for n in nodes if stage_of[n.name] > k for d in deps[n.name]}
        stores = tuple(m for m in members if m in later or m in outputs)
        here = {*carried, k}
        reductions = tuple((r, x) for r, x in reduced.items() if stage_of[r] in here)
        stages.append(Stage(k, tuple(PlacedOp(m, space[m]) for m in members), loads, stores, (),
                            _stage_graph(program, members, inline), reductions,
                            tuple(n for n in once if stage_of[n] in here)))
        carried = []
    stages = _numbered(_with_frees(stages, outputs, inputs), program)
    stored = tuple(
        Stored(name, info[name].shape, info[name].dtype, stage_of[name],
               "edge" if info[name].rows == "edge" else "node")
        for name in dict.fromkeys([n for s in stages for n, _ in s.loads] + [n for s in stages for n in s.stores])
    )
    return Plan(tuple(stages), stored, outputs, Cut(
        nodes, placement, simple, evaluate(nodes, placement, fanout), evaluate(nodes, simple, fanout), fanout,
    ))


def _stage_graph(program: Program, members: list[str], inline: frozenset[str]) -> str:
    """The one graph a stage's message passing runs on. Two graphs in one layer (`conv1(g, h) +
    conv2(dgl.reverse(g), h)`) would need two blocks per batch: refused, as are edge tensors on
    a derived graph, whose edges are not forward's graph's (a constant made per block, APPNPConv's
    `torch.ones(graph.num_edges(), 1)`, reads no edge of forward's graph)."""
    mps = [program.op(m) for m in members if program.op(m).kind == "mp"]
    graphs = list(dict.fromkeys(g for g in (mp_graph(op) for op in mps) if g))
    if len(graphs) > 1:
        first, second = (program.op(g) for g in graphs[:2])
        raise UnsupportedOperationError(
            f"{mps[-1].location or 'forward'}: one layer runs message passing on two graphs "
            f"({spell_graph(program, first)} and {spell_graph(program, second)}); layer-wise "
            "inference runs each layer on the blocks of one graph. Make them layers of their own, "
            "or evaluate this model with its full-graph forward."
        )
    graph = graphs[0] if graphs else ""
    if graph and graph != program.graph:
        for op in mps:
            if any(space == "edge" and value_deps(program, inline, value) for value, space in mp_feature_spaces(op)):
                raise UnsupportedOperationError(
                    f"{op.location or 'forward'}: {op.accessor} reads edge tensors on "
                    f"{spell_graph(program, program.op(graph))}, a graph forward derives from its graph: "
                    "its edges are not the graph's, so edge data does not carry over. Pass the "
                    "derived graph and its edge data to the model instead."
                )
    return graph


def mp_graph(op: Op) -> str:
    """The graph a message-passing op runs on: its first argument, or for a written-out
    convolution (which takes its module first) the argument whose role is the graph."""
    args = op.args
    if op.helper and op.mp is not None and op.mp.roles:
        args = tuple(a for a, role in zip(op.args[1:], op.mp.roles) if role == "graph")
    return args[0].name if args and isinstance(args[0], Ref) else ""


def spell_graph(program: Program, op: Op) -> str:
    """`dgl.add_self_loop(g)`: a graph as forward derives it."""
    if not op.args:
        return op.target
    receiver = spell_graph(program, program.op(op.args[0].name))
    if is_edge_subgraph(op):  # which edges tells the subgraphs apart
        edges = graph_arguments(op, lambda name: program.op(name).target)  # as forward calls them
        return f"{op.target}({receiver}, {', '.join(edges)})"
    return f"{op.target}({receiver})"


def _check_every_op_placeable(nodes: tuple[CutNode, ...], program: Program) -> None:
    """Every op has a stage: a reduction over all nodes has one after what it reduces (a pass
    over ranges of nodes where no layer follows, cut.mp_depths); a value per edge has one only
    in a layer, where edges are."""
    g = _Graph.of(nodes)
    for n in nodes:
        if n.reduces and g.low[n.name] > g.high[n.name]:
            raise internal(f"no stage for the reduction {program.op(n.name).location or n.name}")
        if not g.stages_of(n.name):  # edge rows after a pass over ranges of nodes
            op = program.op(n.name)
            raise UnsupportedOperationError(
                f"{op.location or 'forward'}: this computes a value per edge from a reduction over "
                "all nodes after the last message-passing layer, where layer-wise inference runs "
                "over ranges of nodes without edges. Compute it on inference's result outside the "
                "model, or evaluate this model with its full-graph forward.")


def _with_frees(stages: list[Stage], outputs: tuple[str, ...], inputs: set[str]) -> list[Stage]:
    last_use: dict[str, int] = {}
    for s in stages:
        for name, _ in s.loads:
            last_use[name] = s.index
        for _, name in s.reductions:  # read in the pass before the stage's batch loop
            last_use[name] = s.index
    result = []
    for s in stages:
        frees = tuple(
            n for n, last in last_use.items()
            if last == s.index and n not in outputs and n not in inputs
        )
        result.append(replace(s, frees=frees))
    return result


def _numbered(stages: list[Stage], program: Program) -> list[Stage]:
    """Each stage with its layer's number; stages after the prologue without message passing
    are passes over ranges of nodes."""
    result, layer = [], 0
    for s in stages:
        has_mp = any(program.op(p.name).kind == "mp" for p in s.ops)
        layer += int(has_mp)
        result.append(replace(s, layer=layer, node_pass=s.index > 0 and not has_mp))
    return result

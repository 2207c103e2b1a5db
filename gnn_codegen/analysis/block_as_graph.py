"""Stage 4b, prove (a variant): a user's message-passing module that fails on a block, because
it reads or writes `g.ndata` (a block has two node types, sources and destinations, so
`g.ndata` is ambiguous on it), is given each batch's block as a graph over the block's source
nodes instead (the runtime's `_block_as_graph`, templates/batches.py.j2), as benchmarking-gnns,
RecHub and many tutorials write their layers:

    g.ndata["h"] = h
    g.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
    h = g.ndata["h"]

Every block the runtime makes lists its destination nodes first among its sources
(`_FullNeighbourBatches._gathered`; never with in_place sources, render_layer.py), so the
module's result for the batch is the first `num_dst_nodes()` rows of its result on that graph,
and its edges keep the block's order, so rows by edge keep their positions. For a module whose
result for a node reads only its in-neighbours' and its own rows (one hop) those rows are
exact; the probe proves that (probe.py) as it proves blocks, and a module that runs several
rounds or reads out-degrees (which the graph counts only inside the block) stays refused."""

from __future__ import annotations

from dataclasses import replace
import torch

from gnn_codegen.ir import Op, Program
from gnn_codegen.analysis.mp_arguments import mp_extra_arguments, mp_features


def can_run_as_graph(op: Op) -> bool:
    """A user's module called with its node features on source rows alone (not a pair: the
    graph's nodes are the block's sources, whose first rows are the destinations), and its other
    arguments per node or per edge. DGL's own modules, written out or verified, never need it."""
    mp = op.mp
    if mp is None or mp.verified or mp.inline or mp.needs_pair:
        return False
    if mp.helper:  # a module given the whole graph's out-degrees, of the graph's nodes (write_out.py)
        return mp.helper == "with_graph_out_degrees"
    if [space for _, space in mp_features(op)] != ["src"]:
        return False
    positional, keywords = mp_extra_arguments(op)
    return all(space in ("src", "edge") for _, space in positional) and all(
        space in ("src", "edge") for _, _, space in keywords)


def destination_rows(results: list[torch.Tensor], num_dst: int, per_edge: tuple[int, ...]) -> list[torch.Tensor]:
    """A module's results on the block as a graph, as the batch's rows: the first num_dst rows
    of each result by node (the destinations), rows by edge (positions in per_edge) as they are."""
    return [t if i in per_edge else t[:num_dst] for i, t in enumerate(results)]


def run_as_graph(op_names: frozenset[str], program: Program) -> Program:
    """The program with the message-passing ops named in op_names called on the block as a graph."""
    ops = tuple(
        replace(op, mp=replace(op.mp, as_graph=True)) if op.name in op_names and op.mp is not None else op
        for op in program.ops
    )
    return program.with_ops(ops)


def as_graph_notes(program: Program) -> tuple[str, ...]:
    """What the user should know: which of their modules runs on each batch's block as a graph."""
    return tuple(
        f"{op.accessor} ({op.class_name or 'a module of yours'}) fails on a block, whose g.ndata is "
        "ambiguous (source and destination nodes): it is given each batch's block as a graph over "
        "its source nodes (_block_as_graph), its destination nodes first, and its first rows kept; "
        "proven equal to the whole graph's on a probe graph"
        for op in program.ops if op.mp is not None and op.mp.as_graph
    )


"""Stage 5a, cut (policy): the first layer's work on its destination rows alone, in the prologue
where there is one.

A later layer's work on its destination rows alone that reads only the layer before's output
(a skip connection's Linear, `self.skips[i](x_dst)`) runs where that output is made, at the end
of the layer before, once per node: the cut's tie on bytes is broken by work. The first layer's
input is forward's, which costs nothing to store: reading it again on the layer's destination
rows is cheaper than storing the work's result, so the search leaves the first layer's skip in
its layer. The generated code then does one thing in two places, the first layer's skip in its
pass and every later one's at the end of the layer before, and a loop over the layers needs a
case for the first (`if i == 0: x_skip = self.skips[i](x_skip)`).

Where a prologue runs anyway (the first layer's convolutions' work per source row, GAT's fc,
placed there by the search), that work goes there too: its input rows are made (read) there,
as a later layer's are at the end of the layer before. No pass is added for it: a pass reads
and writes every row. The price is a stored value read back on destination rows where the
input was read (--explain counts it); the prologue runs on `needed[0]`, a superset of the first
layer's destinations, so for `nodes=` it does that work on a few more rows.
"""

from __future__ import annotations

import math

from gnn_codegen.cut.cost import evaluate
from gnn_codegen.cut.placement import CutNode, Placement, _Graph, check_placement


def first_layer_work_in_prologue(nodes: tuple[CutNode, ...], placement: Placement) -> Placement:
    """`placement` with the first layer's work on its destination rows alone that may run in
    the prologue moved there, where a prologue computes something anyway; else `placement`."""
    g = _Graph.of(nodes)
    stage = dict(placement.stage)
    if not any(stage[n.name] == 0 and not n.is_input for n in nodes):
        return placement  # no prologue: none is added for this
    if not any(n.is_mp and stage[n.name] == 1 for n in nodes):
        return placement  # stage 1 is a pass over ranges of nodes, not a layer
    moved = {n.name for n in nodes if _movable(g, n, stage)}
    while True:  # less work whose inputs something after the prologue reads still
        kept = {name for name in moved
                if all(stage[d] == 0 or d in moved for d in g.by_name[name].deps)
                and all(_consumed(g, d, moved, stage) for d in g.by_name[name].deps if d not in moved)}
        if kept == moved:
            break
        moved = kept
    if not moved:
        return placement
    stage.update({name: 0 for name in moved})
    result = Placement(tuple((n.name, stage[n.name]) for n in nodes), placement.num_stages, placement.optimal)
    check_placement(nodes, result)
    if math.isinf(evaluate(nodes, result).total):
        return placement  # a value that cannot be stored (a tuple) would cross the cut
    return result


def _movable(g: _Graph, node: CutNode, stage: dict[str, int]) -> bool:
    """Work of the first layer on its destination rows alone that may run in the prologue
    (reading forward's inputs, what the prologue computes, or other such work)."""
    if node.is_input or node.is_mp or node.reduces or node.rows != "node" or node.row_bytes is None:
        return False
    return stage[node.name] == 1 and g.space(node.name, 1) == "dst" and 0 in g.stages_of(node.name)


def _consumed(g: _Graph, value: str, moved: set[str], stage: dict[str, int]) -> bool:
    """Whether `value` (an input, or made in the prologue) is read after the prologue by the
    moved work alone: then the prologue consumes it, as the end of a layer consumes the next
    layer's input it makes (never stored). Where a later layer reads it again (ChebConv's
    `features` in its second hop), the move would store one more value and save no read: the
    search's place stays, and so does the later layers' counterpart's (their own layer)."""
    return all(stage[c] == 0 or c in moved for c in g.consumers[value])

"""Stage 6, render, the user's layer a layer of the generated inference is part of: where one
module of the user's runs a convolution per graph it derives (HAN's `HANLayer`, a GAT per
metapath graph; an R-GAT layer, a GAT per edge type's subgraph; a dict of GraphConvs, one per
relation graph), each convolution is a layer of its own here, since each runs on its own
graph's blocks. A reviewer reads the user's layers, not the generated count: such a layer is
labelled "self.layers[0], metapath 2 of 2", not "Layer 2 of 4", and the rows prepared for it
are named for its graph, `feat0_pa_ap`, not by a counter, `feat0_2`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Program
from gnn_codegen.lower.edge_masks import is_edge_subgraph
from gnn_codegen.trace.metapaths import metapath_of
from gnn_codegen.trace.relation_graphs import RELATION_GRAPH

_LAST_INDEX = re.compile(r"\[[^\[\]]*\]$")


@dataclass(frozen=True)
class Part:
    """A layer's place in the user's layer it is part of: `self.layers[0]`, metapath 1 of 2."""

    owner: str  # how forward reaches the user's layer: `self.layers[0]`, `self.convs[1]`
    word: str  # what tells the parts apart: metapath, relation, edge type, graph
    which: int
    count: int

    def label(self) -> str:
        return f"{self.owner}, {self.word} {self.which} of {self.count}"


def owner(accessor: str) -> str | None:
    """The user's layer that holds a convolution of a container: `self.layers[0].gats[1]` ->
    `self.layers[0]` (the module whose list it is), `self.convs[0][2]` -> `self.convs[0]`,
    `self.layer1["likes"]` -> `self.layer1`; None for a convolution no container holds
    (`self.conv1`)."""
    container = _LAST_INDEX.sub("", accessor)
    if container == accessor:
        return None
    holder, dot, _ = container.rpartition(".")
    # `self.layers[0].gats`: the list is an attribute of the user's layer, which reads as it
    if dot and holder != "self" and not container.endswith("]"):
        container = holder
    return container


def _word(program: Program, graph: str) -> str:
    op = program.op(graph)
    if metapath_of(op):
        return "metapath"
    if op.target == RELATION_GRAPH:
        return "relation"
    return "edge type" if is_edge_subgraph(op) else "graph"


def parts(program: Program, stages: list[Stage]) -> dict[int, Part]:
    """{stage index: its Part} for each run of two or more consecutive layers, each of one
    convolution that one user's layer holds, on a graph of a metapath, relation or edge type
    forward derives, their graphs all different, none sending rows another computed; other
    layers (one of several convolutions on one of forward's graphs: all of a list on each view)
    have none."""
    owners: list[tuple[Stage, str | None]] = []
    for stage in stages:
        if stage.node_pass or stage.index == 0:
            continue
        convs = [program.op(p.name) for p in stage.ops if program.op(p.name).kind == "mp"]
        # one convolution (not a module's hop), on a graph of one metapath, relation or edge type
        one = len(convs) == 1 and not (convs[0].mp and convs[0].mp.within)
        derived = bool(stage.graph) and stage.graph != program.graph and _word(program, stage.graph) != "graph"
        owners.append((stage, owner(convs[0].accessor) if one and derived else None))
    result: dict[int, Part] = {}
    start = 0
    while start < len(owners):
        end = start + 1
        while end < len(owners) and owners[start][1] and owners[end][1] == owners[start][1] \
                and not _sends_what_the_run_made(owners[end][0], [stage for stage, _ in owners[start:end]]):
            end += 1
        run = [stage for stage, _ in owners[start:end]]
        if len(run) > 1 and len({stage.graph for stage in run}) == len(run):
            words = {_word(program, stage.graph) for stage in run}
            word = words.pop() if len(words) == 1 else "graph"  # never yet: a layer's graphs are alike
            for which, stage in enumerate(run, 1):
                result[stage.index] = Part(owners[start][1] or "", word, which, len(run))
        start = end
    return result


def _sends_what_the_run_made(stage: Stage, run: list[Stage]) -> bool:
    """Whether the stage sends to neighbours rows a layer of the run computed: then it is the
    next of layers one after another (`for agg in self.aggs: h = agg(g_r, h)`), not a part of
    one user's layer, whose convolutions all send what came before the layer."""
    made = {value for earlier in run for value in earlier.stores}
    return any(space == "src" and value in made for value, space in stage.loads)


def graph_suffix(graph_name: str, graph_param: str) -> str:
    """What a derived graph's name adds to its graph's: `g_pa_ap` -> `pa_ap`, `sg` -> `sg`."""
    return graph_name.removeprefix(f"{graph_param}_")

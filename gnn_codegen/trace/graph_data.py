"""Inputs that forward reads from its graph (`x = g.ndata["feat"]`, `blocks[0].srcdata["feat"]`,
`g.edata[dgl.ETYPE]`, `g.edata["norm"]`), as DGL's examples write them: each becomes an input of
the traced forward like a parameter, which the generated inference reads from the full graph it
is given (`feat = g.ndata["feat"]`) and gathers per batch like any other input."""

from __future__ import annotations

import operator

import torch.fx as fx

from gnn_codegen.trace.graph_lineage import keeps_nodes
from gnn_codegen.trace.forward_defaults import required_first
from gnn_codegen.names import NameAllocator

# A graph's data views, by what their rows are. For a block, srcdata and dstdata are the rows of
# its source and destination nodes; layer-wise inference reads both from the full graph's nodes.
NODE_VIEWS = frozenset({"ndata", "srcdata", "dstdata"})
EDGE_VIEWS = frozenset({"edata"})
# Names for DGL's reserved keys, by view (dgl.NTYPE and dgl.ETYPE are both "_TYPE", dgl.NID and
# dgl.EID both "_ID"): what the generated code calls them
_RESERVED = {("ndata", "_TYPE"): "ntype", ("edata", "_TYPE"): "etype", ("ndata", "_ID"): "ids",
             ("edata", "_ID"): "edge_ids"}
# A block's dgl.NID and dgl.EID (`blocks[0].srcdata[dgl.NID]`) are its nodes' and edges' IDs in
# the graph it was sampled from: in layer-wise inference over g, IDs in g (0, 1, ...), never a
# field g carries (a graph made by dgl.to_homogeneous or a subgraph carries its parent's IDs).
# Such reads are lifted under these views, which no graph has: the generated code spells them.
BLOCK_NODE_IDS, BLOCK_EDGE_IDS = "block_node_ids", "block_edge_ids"
_RESERVED.update({(BLOCK_NODE_IDS, "_ID"): "ids", (BLOCK_EDGE_IDS, "_ID"): "edge_ids"})


def graph_data_read(node: fx.Node, graph_arg: str) -> tuple[str, str] | None:
    """("ndata" or "edata", key) for `g.<view>[key]` on forward's graph with a string key."""
    if node.op != "call_function" or node.target is not operator.getitem or len(node.args) != 2:
        return None
    view, key = node.args
    if not (isinstance(key, str) and isinstance(view, fx.Node) and view.op == "call_function"
            and view.target is getattr and len(view.args) == 2):
        return None
    receiver, attr = view.args
    # node data of a graph derived from g that keeps its nodes (`dgl.add_self_loop(g).ndata["x"]`)
    # is g's own; edge data of such a graph is not
    if not (isinstance(receiver, fx.Node) and receiver.op == "placeholder" and receiver.target == graph_arg) \
            and not (attr in NODE_VIEWS and keeps_nodes(receiver, graph_arg)):
        return None
    if attr in NODE_VIEWS:
        return "ndata", key
    if attr in EDGE_VIEWS:
        return "edata", key
    return None


def lift_graph_data(gm: fx.GraphModule, graph_arg: str, taken: set[str],
                    blocks: bool = False) -> tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]:
    """Replace every read of graph data in `gm` by a placeholder of its own (one per view kind and
    key), after forward's own; returns the new inputs' names and (name, "ndata" or "edata", key)
    for each. `taken`: names the new placeholders must not take (forward's parameters). blocks:
    forward takes blocks, whose IDs (dgl.NID, dgl.EID) are lifted as BLOCK_NODE_IDS and
    BLOCK_EDGE_IDS."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    lifted: dict[tuple[str, str], fx.Node] = {}
    reads: list[tuple[str, str, str]] = []
    names = NameAllocator(set(taken) | {n.name for n in graph.nodes})
    for node in list(graph.nodes):
        read = graph_data_read(node, graph_arg)
        if read is None:
            continue
        if blocks and read[1] == "_ID":
            read = (BLOCK_NODE_IDS if read[0] == "ndata" else BLOCK_EDGE_IDS, read[1])
        if read not in lifted:
            with graph.inserting_after(lifted[reads[-1][1:]] if reads else placeholders[-1]):
                name = names.take(_RESERVED.get(read) or read[1].lstrip("_") or "data")
                lifted[read] = graph.placeholder(name)
            reads.append((name, *read))
        node.replace_all_uses_with(lifted[read])
        graph.erase_node(node)
    if not reads:
        return (), ()
    for node in list(graph.nodes):  # the `g.ndata` attribute reads, unused now
        if node.op == "call_function" and node.target is getattr and not node.users:
            graph.erase_node(node)
    required_first(graph)  # after forward's parameters traced at a default
    gm.recompile()
    return tuple(name for name, _, _ in reads), tuple(reads)

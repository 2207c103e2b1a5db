"""Which graphs of a traced forward are its graph or functions of its graph alone: the
vocabulary of derived graphs (their DGL function names and what the generated code calls their
results), shared by the stages that follow a graph through forward. The tracing of those calls
is derived_graphs.py; this module only names them, so that every stage can ask without
importing the tracer."""

from __future__ import annotations

from typing import Any

import dgl
import torch.fx as fx

from gnn_codegen.trace.homogenized import CONVERSIONS
from gnn_codegen.trace.several_graphs import is_graph_item

# function name -> what the generated code calls its result, after the graph's own name
DERIVED = {
    "add_self_loop": "with_loops", "remove_self_loop": "without_loops", "reverse": "reversed",
    "to_bidirected": "bidirected", "to_simple": "simple", "add_reverse_edges": "with_reverse",
    "edge_subgraph": "subgraph",
    # a heterogeneous graph's metapath (HAN): a graph over the nodes of the metapath's type,
    # called after the metapath (g_pa_ap); see metapaths.py
    "metapath_reachable_graph": "metapath",
}
METAPATH = "metapath_reachable_graph"  # metapaths.py
RELATION = "relation_graph"  # hg[relation]: relation_graphs.py
# `dgl.block_to_graph(block)`: the block as a graph of two node types, its sources and its
# destinations (DGL's MAG240M RGAT). Message passing on it is message passing on the block, and
# layer-wise inference runs every layer on blocks, so while traced it is the graph it is given;
# the check before writing runs forward itself, DGL's conversion included.
SAME_GRAPH = ("block_to_graph",)
# `dgl.to_homogeneous(hg, ndata=[...])`, `dgl.node_type_subgraph(hg, ["paper"])` on forward's
# heterograph, before anything else reads it: forward's graph stands for the homogeneous one
# while traced (homogenized.py)
CONVERTS = CONVERSIONS


def relation_graph(g: Any, relation: Any) -> Any:
    """forward's `g[relation]`: the traced program's node for the graph of one relation
    (relation_graphs.py traces it; named here, where every stage asks what a graph is)."""
    return g[relation]


def derived_name(fn: Any) -> str | None:
    """The name of a derived-graph function of DGL, or None."""
    if fn is relation_graph:  # hg[relation] (relation_graphs.py)
        return RELATION
    return next((name for name in DERIVED if getattr(dgl, name, None) is fn), None)


def keeps_nodes(node: Any, graph_arg: str) -> bool:
    """forward's graph, or a graph derived from it alone whose nodes and node data are its own
    (every function of DERIVED but a metapath's, whose nodes are one type's)."""
    if not isinstance(node, fx.Node):
        return False
    if node.op == "placeholder":
        return node.target == graph_arg
    name = derived_name(node.target) if node.op == "call_function" else None
    return name is not None and name != METAPATH and bool(node.args) and keeps_nodes(node.args[0], graph_arg)


def is_graph_node(node: Any, graph_arg: str) -> bool:
    """forward's graph, or a graph derived from it alone (derived_graphs.py)."""
    if not isinstance(node, fx.Node):
        return False
    if node.op == "placeholder":
        return node.target == graph_arg
    if is_graph_item(node):  # gs[1]: one of forward's graphs side by side (several_graphs.py)
        return is_graph_node(node.args[0], graph_arg)
    return node.op == "call_function" and derived_name(node.target) is not None and bool(node.args) \
        and is_graph_node(node.args[0], graph_arg)

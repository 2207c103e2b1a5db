"""The table of message-passing modules: which are exact on a 1-hop block, which need the full
graph's statistics, and which are refused — consulted by trace (leaves) and lower (per-call facts).

A 1-hop block holds every in-edge of its destination nodes, so anything computed from destination
in-degrees or in-neighbourhoods is exact. What a module reads about its *source* nodes' other edges
is not; each entry below is pinned against the full-graph forward by tests/test_known_modules.py.

Modules are known by their class object, never by the class's name: a user's own `class
GATConv(nn.Module)` (DGL's ogbn-arxiv example has one, normalising by source out-degrees) is not
DGL's, and is proven on blocks like any other user module (probe.py). A subclass of a DGL class
is not DGL's either: its forward may differ.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import dgl.nn as dglnn
import torch

# dgl.nn convolutions verified exact on a 1-hop block (tests/test_known_modules.py).
EXACT = frozenset({
    dglnn.SAGEConv, dglnn.GATConv, dglnn.GATv2Conv, dglnn.GINConv, dglnn.GINEConv, dglnn.DotGatConv,
    dglnn.EdgeConv, dglnn.EGATConv, dglnn.GraphConv,
})
# Convolutions that, given one node tensor, use it as destination rows too instead of slicing
# a block's destination prefix: on a block they must be called with (src rows, dst rows).
NEEDS_PAIR = frozenset({dglnn.EGATConv})
# Arguments after the node features that hold a value per node, read at the block's source rows
# with the destination rows as their prefix, as the features are (HGTConv's node types: it
# slices `ntype[:num_dst_nodes]` itself); any other tensor argument is read per edge.
NODE_ARGUMENTS = {dglnn.HGTConv: (2, "ntype")}
# Convolutions whose forward, given one tensor on a block, takes its destination prefix as the
# destination rows, exactly as given the pair (h, h[:num_dst]) (DGL's expand_as_pair, or the
# same slicing written out) -- for GATConv and DotGatConv only when built with one input width:
# with in_feats=(a, b) they have fc_src / fc_dst and no fc, and one tensor fails.
_SLICES_DESTINATIONS = frozenset({
    dglnn.SAGEConv, dglnn.GraphConv, dglnn.GINConv, dglnn.GINEConv, dglnn.EdgeConv, dglnn.GATv2Conv,
})
_SLICES_DESTINATIONS_WITH_ONE_WIDTH = frozenset({dglnn.GATConv, dglnn.DotGatConv})

# Modules that propagate over several hops inside one call: a 1-hop block cannot feed them
# whole. Their rounds are traced into (pipeline.py), a layer each; this says why, when that
# could not be followed either.
MULTI_HOP = {
    dglnn.APPNPConv: "propagates k hops internally (personalised PageRank)",
    dglnn.TAGConv: "sums k hops of propagation internally",
    dglnn.ChebConv: "applies a k-order Chebyshev polynomial of the Laplacian (k hops) internally",
    dglnn.GatedGraphConv: "runs n_steps rounds of message passing internally; with several edge "
                          "types it selects edges by their type's value, which cannot be followed "
                          "round by round",
    dglnn.SGConv: "propagates k hops internally and normalises source rows by their in-degrees",
    dglnn.GCN2Conv: "propagates one hop with the initial features mixed in",
}

DENSE = frozenset({dglnn.DenseGraphConv, dglnn.DenseSAGEConv, dglnn.DenseChebConv})

# Graph-level readouts: their output has one row per graph, not per node.
READOUT_MODULE = "dgl.nn.pytorch.glob"
# Modules over heterogeneous graphs (several node and edge types), not supported yet.
HETERO_MODULE = "dgl.nn.pytorch.hetero"

# Method names whose presence in a user module's forward marks it as message passing.
_MP_MARKERS = (
    "update_all", "apply_edges", "multi_update_all", "send_and_recv", "pull(", "push(",
    "srcdata", "dstdata", "edata", "ndata", "edge_softmax", "local_scope", "in_degrees", "out_degrees",
)


@dataclass(frozen=True)
class MessagePassingFacts:
    """What the generated code must do around one message-passing call."""

    class_name: str
    # GraphConv(norm='both'|'left') divides source rows by out_degree ** power; on a block that
    # degree is truncated, so the generated code rescales source rows to the full graph's.
    source_out_degree_power: float | None = None
    verified: bool = True
    needs_pair: bool = False
    # `conv(block, (h, h[:num_dst]))` may be written `conv(block, h)` (see _SLICES_DESTINATIONS)
    pair_collapses: bool = False
    # The module reads source rows only inside messages (no work per source row: no Linear,
    # no normalisation), so a block whose sources are all of g's nodes costs it nothing extra.
    # The generated loop then hands it the stored rows in place instead of gathering them.
    sources_in_place: bool = False
    node_args: tuple[int | str, ...] = ()  # NODE_ARGUMENTS


def is_dgl_module(module: torch.nn.Module) -> bool:
    return type(module).__module__.startswith("dgl.nn.")


def is_dgl_conv(module: torch.nn.Module) -> bool:
    return type(module).__module__.startswith("dgl.nn.pytorch.conv")


def forward_reads_graph(module: torch.nn.Module) -> bool:
    """A user module is message passing when its forward touches graph data or messages."""
    try:
        source = inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return False
    return any(marker in source for marker in _MP_MARKERS)


def is_message_passing(module: torch.nn.Module, forced: frozenset[str] = frozenset()) -> bool:
    cls = type(module)
    if cls.__name__ in forced:
        return True
    if is_dgl_conv(module) or cls.__module__.startswith((READOUT_MODULE, HETERO_MODULE)):
        return True
    if any(base.__module__.startswith("dgl.nn.pytorch.conv") for base in cls.__mro__[1:]):
        return True  # a user's subclass of a dgl.nn convolution: proven on blocks (probe.py)
    if cls.__module__.startswith("torch.nn") or is_dgl_module(module):
        return False
    return forward_reads_graph(module)


def facts_for(module: torch.nn.Module) -> MessagePassingFacts:
    """Per-call facts (the caller refuses what refusal_reason names first)."""
    cls = type(module)
    if cls is dglnn.GraphConv:
        norm = getattr(module, "_norm", "both")
        power = {"both": 0.5, "left": 1.0}.get(norm)
        return MessagePassingFacts(cls.__name__, source_out_degree_power=power,
                                   sources_in_place=sources_in_place(module), pair_collapses=True)
    # Anything else outside the table, a user's own module above all, is proven exact on
    # blocks on a probe graph before it is accepted (probe.py).
    return MessagePassingFacts(
        cls.__name__, verified=cls in EXACT, needs_pair=cls in NEEDS_PAIR,
        sources_in_place=sources_in_place(module), pair_collapses=pair_collapses(module),
        node_args=NODE_ARGUMENTS.get(cls, ()),
    )


def pair_collapses(module: torch.nn.Module) -> bool:
    """Whether `module(block, (h, h[:num_dst]))` equals `module(block, h)`."""
    cls = type(module)
    one_width = cls in _SLICES_DESTINATIONS_WITH_ONE_WIDTH and not hasattr(module, "fc_src")
    return cls in _SLICES_DESTINATIONS or one_width


def sources_in_place(module: torch.nn.Module) -> bool:
    """Does this dgl.nn convolution, given (source rows, destination rows), touch its source
    rows only inside messages? Read off DGL's forward() (1.1 and 2.x alike): SAGEConv "mean" and
    "gcn" transform source rows first when they narrow (in > out, `lin_before_mp`), "pool"
    always does; GraphConv multiplies them by an out-degree norm ("both", "left") or by its
    weight when it narrows; GINConv and GINEConv only aggregate them. Pinned by
    tests/test_known_modules.py, which runs each on an all-sources block and fails if any torch
    op makes a new tensor with one row per source node."""
    cls = type(module)
    if cls is dglnn.SAGEConv:
        narrowing = getattr(module, "_in_src_feats", 0) > getattr(module, "_out_feats", 0)
        return getattr(module, "_aggre_type", "") in ("mean", "gcn") and not narrowing
    if cls is dglnn.GraphConv:
        narrowing = getattr(module, "_in_feats", 0) > getattr(module, "_out_feats", 0)
        return getattr(module, "_norm", "both") in ("none", "right") and not narrowing
    return cls in (dglnn.GINConv, dglnn.GINEConv)  # a user's module: nothing known of its work


_SINGLE_HOP = (
    "Write the propagation as one single-hop convolution per layer (GraphConv, SAGEConv, ...), "
    "or evaluate this model with its full-graph forward."
)


def refusal_reason(module: torch.nn.Module) -> tuple[str, str] | None:
    """Why this message-passing module cannot run layer-wise on 1-hop blocks, and the way out."""
    cls = type(module)
    if cls.__module__.startswith(READOUT_MODULE):
        return (
            "is a graph-level readout (one row per graph, not per node)",
            "Generate inference for the node-level part of the model and apply the readout to "
            "the node embeddings that `inference` returns.",
        )
    if cls.__module__.startswith(HETERO_MODULE):
        return (
            "works on a heterogeneous graph (several node and edge types), which gnn-codegen "
            "does not support yet",
            "Convert the graph with dgl.to_homogeneous and write the layers as homogeneous "
            "convolutions (RelGraphConv with etypes for relation-specific weights), or evaluate "
            "this model with its full-graph forward.",
        )
    if cls in DENSE:
        return "works on a dense adjacency matrix, not on a DGL graph", _SINGLE_HOP
    if cls in MULTI_HOP:
        return MULTI_HOP[cls], _SINGLE_HOP
    return None

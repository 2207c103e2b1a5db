"""Stage 2, trace, its result: `Traced`, the GraphModule and what tracing decided, as the later
stages read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.trace.type_offsets import TypeOffsets
from gnn_codegen.ir import StaticDecision


@dataclass(frozen=True)
class Traced:
    model: torch.nn.Module  # the user's instance (its containers keep their types, unlike fx's copy)
    graph_module: fx.GraphModule
    graph_arg: str  # name of forward's graph (or list-of-blocks) parameter
    inputs: tuple[str, ...]  # forward's tensor parameters (all but the graph), in order
    blocks_style: bool  # forward indexes / iterates / measures its graph argument
    num_blocks: int  # how many blocks a blocks-style forward consumes
    # forward's graph and inputs in its own order, each with how a call passes it: "positional",
    # or "keyword" (a keyword-only parameter)
    signature: tuple[tuple[str, str], ...] = ()
    # where the model keeps the graph forward reads (`g` for self.g, `encoder.g`), when forward
    # takes none: graph_arg is then a parameter gnn-codegen added (kept_graph.py)
    kept_graph: tuple[str, ...] = ()
    # forward's inputs that it reads from the graph (`g.ndata["feat"]`): (input, "ndata" or
    # "edata", key), in the order of inputs (graph_data.py)
    graph_data: tuple[tuple[str, str, str], ...] = ()
    # forward's inputs that are tables of the model read as node features (`self.emb.weight`):
    # (input, attribute path), in the order of inputs (node_tables.py)
    tables: tuple[tuple[str, str], ...] = ()
    # forward's tests of the data its graph carries (`"w" in g.edata`), as decided while tracing:
    # ("ndata" or "edata", key, whether the graph has it), graph_proxy.py
    decisions: tuple[tuple[str, str, bool], ...] = ()
    # the graphs (fx node names) on which DGL's test for nodes without in-edges, in a module
    # traced into, was decided as none (_Tracer.to_bool)
    in_degree_checks: tuple[str, ...] = ()
    # widths the modules traced into declare for the inputs they take directly (TAGConv's
    # in_feats for `layer(g, features)`): (input, width), for inputs no module consumes otherwise
    declared_widths: tuple[tuple[str, int], ...] = ()
    # widths they declare for what forward computes from its inputs (`layer(g, x * 0.5)`): to
    # try for an input whose width nothing else tells (attributes.py)
    candidate_widths: tuple[int, ...] = ()
    # forward's training flags, passed as eval needs them (`training=False`): EVAL_FLAGS
    flags: tuple[tuple[str, bool], ...] = ()
    # forward converts its blocks (`dgl.block_to_graph(block)`, traced as the block itself:
    # derived_graphs.SAME_GRAPH), which a graph is not: its full-graph forward takes real blocks
    converts_blocks: bool = False
    # forward first makes its heterograph one graph of one type (dgl.to_homogeneous,
    # dgl.node_type_subgraph): the function's name and its arguments by keyword (homogenized.py);
    # None where it does not
    homogenized: tuple[str, tuple[tuple[str, Any], ...]] | None = None
    # what forward does by node type around that conversion (type_offsets.py)
    type_offsets: TypeOffsets | None = None
    # forward's tests of what its values are (`if h.shape[-1] == self.out_dim:`), decided while
    # tracing, with what each assumes of the inputs (static_decisions.py)
    static_decisions: tuple[StaticDecision, ...] = ()
    # forward's graph argument is a list of this many graphs used side by side over the same
    # nodes (several_graphs.py), each item a `graph_item` node of the program; 0: one graph
    # (or a list of its blocks)
    graphs: int = 0
    # forward's graph parameters when it takes several (`forward(self, g1, g2, x)`): the items of
    # graph_arg (a name gnn-codegen chose), in order
    graph_params: tuple[str, ...] = ()
    # forward's parameters with a None default that stand for a table it reads otherwise
    # (`if h is None: h = self.emb.weight`): (parameter, the table's input), forward_defaults.py
    optional: tuple[tuple[str, str], ...] = ()

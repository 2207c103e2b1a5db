"""Stage 2b, write out (write_out.py's recipe for DGL's GCN2Conv): `conv(g, feat, feat_0)` as
its norm, its work on each source row and `gcn2_conv_aggregate` (templates/convs.py.j2) on
each block, so that the generated layer reads `_gcn2_conv_aggregate(self.convs[i], block,
feat, h0, norm)` as a GraphConv's reads its helper, not GCN2Conv.forward written out.

GCN2Conv scales its input by in-degree ** -0.5 before the sum, the same norm as after it (one
vector over the graph's nodes). On a block the source rows' in-degrees are not the block's, so
the norm is written here as forward computes it, from the whole graph's in-degrees
(`g.in_degrees()`, a value of the graph), in DGL's own steps: the later passes see the ops
they saw when GCN2Conv was traced into (dtype_witnesses.py makes every layer's norm one), and
the scaling of each source row, `feat * norm`, is the layer's work once per node (the cut
places it where the rows are made). What the module's settings decide (its projection, bias,
activation, allow_zero_in_degree) is decided in the helper from the module at run time, as
DGL's forward decides it. A call with edge weights is left as it is (None): it is traced into,
its EdgeWeightNorm computed once on the whole graph (edge_weight_norm.py)."""

from __future__ import annotations

import operator
from typing import Callable

import torch
import torch.fx as fx

# (section, *args) -> the node calling that helper; (node, name, note) -> node, named
Helper = Callable[..., fx.Node]
Named = Callable[..., fx.Node]


def write_out_gcn2_conv(graph: fx.Graph, node: fx.Node, conv: fx.Node, graphs: set[fx.Node],
                        helper: Helper, named: Named, source_note: tuple[str, str]) -> fx.Node | None:
    """The nodes that replace the GCN2Conv call `node` (inserted before it), or None where the
    call is not `conv(g, feat, feat_0)` without edge weights on one of `graphs`. conv: the
    module's get_attr node."""
    args, kwargs = list(node.args), dict(node.kwargs)
    edge_weight = args.pop(3) if len(args) > 3 else kwargs.pop("edge_weight", None)
    if edge_weight is not None or kwargs or len(args) != 3:
        return None
    g, feat, feat_0 = args
    if g not in graphs or not all(isinstance(a, fx.Node) for a in (feat, feat_0)):
        return None
    # as GCN2Conv.forward: degs = graph.in_degrees().to(feat).clamp(min=1), then
    # norm = th.pow(degs, -0.5).unsqueeze(1) (its .to(feat.device): degs is there already)
    in_degrees = named(graph.call_method("in_degrees", (g,)), "in_degrees")
    degs = named(graph.call_method("clamp", (graph.call_method("to", (in_degrees, feat)),), {"min": 1}),
                 "degs")
    norm = graph.call_method("unsqueeze", (graph.call_function(torch.pow, (degs, -0.5)), 1))
    norm = named(norm, "norm")
    feat_src = named(graph.call_function(operator.mul, (feat, norm)), "feat", source_note)
    return helper("gcn2_conv_aggregate", conv, g, feat_src, feat_0, norm)

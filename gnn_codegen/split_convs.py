"""Known convolutions written out in two parts, so that the work a convolution does on every
source row runs once per node instead of once per batch that reads the row.

Called on a block, GraphConv(norm="both") scales each of the block's source rows by its
out-degree, and SAGEConv("mean") that narrows (DGL's lin_before_mp) applies fc_neigh to each of
them. A batch's block holds several times its own node count in source rows (on a random graph
most of the graph's nodes, when batches are small), so a layer-wise loop that calls the module
repeats that work for every batch, which is what made it several times slower than the
full-graph forward. Written out, that work runs once per node before the layer's loop (as the
full graph does it), and each batch only aggregates, through dgl.ops, and finishes the layer.

Each recipe follows DGL's forward() of the module line by line (identical in DGL 1.1 and 2.x),
and reads only what the generated code can reach the same way on any of them: parameters and
submodules (weight, bias, fc_neigh, fc_self, activation, norm). Every example and the
differential models are checked against the full-graph forward with and without it.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from gnn_codegen.ir import SplitConv
from gnn_codegen.known_modules import is_dgl_conv

Spell = Callable[[Any], "str | None"]  # how the user's file writes a function (F.relu), or None


def split_for(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    """The two-part form of a dgl.nn convolution, when one is known and pays: None for modules
    without per-source-row work (they read source rows in place already) or not recognised."""
    if not is_dgl_conv(module):
        return None  # a user's module, or a subclass whose forward may differ
    name = type(module).__name__
    if name == "GraphConv":
        return _graph_conv(module, spell)
    if name == "SAGEConv":
        return _sage_conv(module, spell)
    return None


def _graph_conv(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    norm = getattr(module, "_norm", None)
    in_feats, out_feats = getattr(module, "_in_feats", 0), getattr(module, "_out_feats", 0)
    has_weight = getattr(module, "weight", None) is not None
    weight_first = has_weight and in_feats > out_feats  # DGL multiplies by W before aggregating
    per_node = []
    if norm == "both":
        per_node.append("{x} * out_degrees.to({x}).clamp(min=1).pow(-0.5).view(-1, 1)")
    elif norm == "left":
        per_node.append("{x} * (1.0 / out_degrees.to({x}).clamp(min=1)).view(-1, 1)")
    elif norm not in ("none", "right"):
        return None
    if weight_first:
        per_node.append("{x} @ {layer}.weight")
    if not per_node:
        return None  # nothing per source row: the module reads them in place as it is
    per_batch = ["dgl.ops.copy_u_sum(block, {h})"]
    if has_weight and not weight_first:
        per_batch.append("{h} @ {layer}.weight")
    if norm == "both":
        per_batch.append("{h} * block.in_degrees().to({h}).clamp(min=1).pow(-0.5).view(-1, 1)")
    elif norm == "right":
        per_batch.append("{h} * (1.0 / block.in_degrees().to({h}).clamp(min=1)).view(-1, 1)")
    if getattr(module, "bias", None) is not None:
        per_batch.append("{h} + {layer}.bias")
    activation = getattr(module, "_activation", None)
    if activation is not None:
        spelled = spell(activation)
        if spelled is None:
            return None  # reachable only as a private attribute: keep calling the module
        per_batch.append(f"{spelled}({{h}})")
    scale = {"both": "scales each source row by the full graph's out-degree ** -0.5",
             "left": "divides each source row by the full graph's out-degree"}.get(norm)
    weigh = ("multiplies it by its weight" if scale else "multiplies each source row by its weight")
    what = " and ".join(filter(None, [scale, weigh if weight_first else None]))
    return SplitConv(f'GraphConv(norm="{norm}") {what}', tuple(per_node), tuple(per_batch))


def _sage_conv(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    narrowing = getattr(module, "_in_src_feats", 0) > getattr(module, "_out_feats", 0)
    if getattr(module, "_aggre_type", None) != "mean" or not narrowing:
        return None  # "mean" without lin_before_mp reads source rows in place already
    per_batch = ["dgl.ops.copy_u_mean(block, {h})", "{layer}.fc_self({dst}) + {h}"]
    if getattr(module, "bias", None) is not None:  # DGL before 1.0 kept it outside fc_self
        per_batch.append("{h} + {layer}.bias")
    activation = getattr(module, "activation", None)
    if activation is not None:
        per_batch.append(f"{spell(activation) or '{layer}.activation'}({{h}})")
    if getattr(module, "norm", None) is not None:
        per_batch.append("{layer}.norm({h})")
    return SplitConv(
        'SAGEConv("mean"), narrowing, applies fc_neigh to each source row',
        ("{layer}.fc_neigh({x})",), tuple(per_batch),
    )

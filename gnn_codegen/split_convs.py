"""Known convolutions written out in two parts, so that the work a convolution does on every
source row runs once per node instead of once per batch that reads the row.

Called on a block, GraphConv(norm="both") scales each of the block's source rows by its
out-degree, SAGEConv("mean") that narrows (DGL's lin_before_mp) applies fc_neigh to each, and
GATConv applies fc and its source attention attn_l to each. A batch's block holds several times
its own node count in source rows (on a random graph, most of the graph's nodes when batches are
small), so a layer-wise loop that calls the module repeats that work for every batch; that is
what made such layers several times slower than the full-graph forward. Written out, the work
runs once per node before the layer's loop, as the full graph does it, and each batch only
aggregates (dgl.ops) and finishes the layer. SAGEConv("mean") is written out either way, for
its mean and sum done in place (see _sage_conv).

Each recipe follows DGL's forward() of the module step by step (the same in DGL 1.1 and 2.x),
the steps after the aggregation in place on its new tensor (`h += bias`, `F.elu(h,
inplace=True)`: the same operations, so the same numbers, without a new batch-sized tensor per
step; see _sage_conv for why). GATConv computes two steps its own way, equal to float
rounding and measured faster on the CPU: its attention terms (_ATTENTION) and its weighted sum
(the generated module's _attention_weighted_sum, templates/helpers.py.j2). Each recipe
reads only the module's parameters and submodules (weight, bias, fc_neigh, fc_self, fc, attn_l,
attn_r, leaky_relu, res_fc, activation, norm), never a private attribute: a module whose
activation the user's file cannot spell keeps being called as a module. Dropout (feat_drop,
attn_drop) is left out: inference runs in eval mode. A module built with
allow_zero_in_degree=False refuses a graph with nodes without in-edges, as its forward() does,
with a check of g before the layer's loop. Pinned per module and option by
tests/test_known_modules.py; every example is checked against the full-graph forward, in place
and gathered.
"""

from __future__ import annotations

from typing import Any, Callable

import dgl.nn as dglnn
import torch

from gnn_codegen.ir import SplitConv

Spell = Callable[[Any], "str | None"]  # how the user's file writes a function (F.relu), or None


# torch.nn.functional's elementwise activations with an `inplace` parameter (not the dropouts,
# nor rrelu, which are random when training)
_IN_PLACE_ACTIVATIONS = {
    "celu", "elu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "mish", "relu", "relu6",
    "selu", "silu", "threshold",
}


def activation_in_place(fn: Any, kwargs: tuple[tuple[str, Any], ...] = ()) -> bool:
    """Whether `fn(x, ...)` can be written `fn(x, ..., inplace=True)`: the same numbers, in x."""
    return (getattr(fn, "__module__", "") == "torch.nn.functional"
            and getattr(fn, "__name__", "") in _IN_PLACE_ACTIVATIONS
            and "inplace" not in dict(kwargs))


def _activation(activation: Any, spell: Spell) -> tuple[str, str]:
    """The chain step applying the module's activation to the chain's own tensor: in place
    where torch can (F.elu(h, inplace=True)), as the module calls it otherwise."""
    spelled = spell(activation)
    if spelled and activation_in_place(activation):
        return "", f"{spelled}({{h}}, inplace=True)"
    return "", f"{spelled or '{layer}.activation'}({{h}})"


def split_for(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    """The two-part form of a dgl.nn convolution, when one is known and pays: None for modules
    without per-source-row work (they read source rows in place already) or not recognised."""
    # the class itself: a user's module, or a subclass whose forward may differ, is not DGL's
    recipe = {dglnn.GraphConv: _graph_conv, dglnn.SAGEConv: _sage_conv, dglnn.GATConv: _gat_conv}.get(type(module))
    return recipe(module, spell) if recipe else None


def _graph_conv(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    norm = getattr(module, "_norm", None)
    in_feats, out_feats = getattr(module, "_in_feats", 0), getattr(module, "_out_feats", 0)
    has_weight = getattr(module, "weight", None) is not None
    weight_first = has_weight and in_feats > out_feats  # DGL multiplies by W before aggregating
    per_node, in_place = [], ""
    scale = {
        "both": "out_degrees.to({x}).clamp(min=1).pow(-0.5).view(-1, 1)",
        "left": "(1.0 / out_degrees.to({x}).clamp(min=1)).view(-1, 1)",
    }.get(norm)
    if scale:
        per_node.append(f"{{x}} * {scale}")
        in_place = f"{{x}} *= {scale}"
    elif norm not in ("none", "right"):
        return None
    if weight_first:
        per_node.append("{x} @ {layer}.weight")
    if not per_node:
        return None  # nothing per source row: the module reads them in place as it is
    per_batch = [("", "dgl.ops.copy_u_sum(block, {h})")]  # a new tensor: the rest runs in place
    if has_weight and not weight_first:
        per_batch.append(("", "{h} @ {layer}.weight"))
    if norm == "both":
        per_batch.append(("*=", "block.in_degrees().to({h}).clamp(min=1).pow(-0.5).view(-1, 1)"))
    elif norm == "right":
        per_batch.append(("*=", "(1.0 / block.in_degrees().to({h}).clamp(min=1)).view(-1, 1)"))
    if getattr(module, "bias", None) is not None:
        per_batch.append(("+=", "{layer}.bias"))
    activation = getattr(module, "_activation", None)
    if activation is not None:
        if spell(activation) is None:
            return None  # reachable only as a private attribute: keep calling the module
        per_batch.append(_activation(activation, spell))
    scaling = {"both": "scales each source row by the full graph's out-degree ** -0.5",
               "left": "divides each source row by the full graph's out-degree"}.get(norm)
    weigh = "multiplies it by its weight" if scaling else "multiplies each source row by its weight"
    what = " and ".join(filter(None, [scaling, weigh if weight_first else None]))
    return SplitConv(f'GraphConv(norm="{norm}") {what}', tuple(per_node), tuple(per_batch),
                     per_node_in_place=in_place, refuses_zero_in_degree=_refuses_zero_in_degree(module))


def _sage_conv(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    if getattr(module, "_aggre_type", None) != "mean":
        return None
    # DGL's mean is the sum divided by the clamped in-degrees, and forward() adds fc_self's rows
    # to the neighbours': done in place here, the same operations in the same order, so the
    # same numbers. Called as a module, each step makes a new batch-sized tensor, and on the
    # CPU a new tensor of 32 MB or more is fresh memory from the OS whose first touch cost more
    # than the arithmetic (measured: a relu of 65536 x 128 floats took 12 ms into a new tensor,
    # 2 ms into an existing one); in place, the benchmark's JKNet (three layers 128 -> 128)
    # ran 25%-30% faster at batches of 65536.
    mean = [("", "dgl.ops.copy_u_sum(block, {h})"),
            ("/=", "block.in_degrees().clamp(min=1).to({h}).view(-1, 1)")]
    if getattr(module, "_in_src_feats", 0) > getattr(module, "_out_feats", 0):  # lin_before_mp
        per_node: tuple[str, ...] = ("{layer}.fc_neigh({x})",)
        per_batch = [*mean, ("+=", "{layer}.fc_self({dst})")]
        why = 'SAGEConv("mean"), narrowing, applies fc_neigh to each source row'
    else:  # nothing per source row: written out for the steps in place
        per_node = ()
        per_batch = [*mean, ("", "{layer}.fc_neigh({h})"), ("+=", "{layer}.fc_self({dst})")]
        why = 'SAGEConv("mean"), forward()\'s steps with the mean and the sum in place'
    if getattr(module, "bias", None) is not None:  # DGL before 1.0 kept it outside fc_self
        per_batch.append(("+=", "{layer}.bias"))
    activation = getattr(module, "activation", None)
    if activation is not None:
        per_batch.append(_activation(activation, spell))
    if getattr(module, "norm", None) is not None:
        per_batch.append(("", "{layer}.norm({h})"))
    return SplitConv(why, per_node, tuple(per_batch))


# GATConv's attention logits (feat * attn).sum(-1) of rows (nodes, heads, features) and attn (1,
# heads, features), as one matrix product with attn's heads on a block diagonal: no temporary as
# large as the rows, and on the CPU 7x faster than the product and sum (26 vs 176 ms for 1M
# rows of 4 x 32; torch.einsum took 285 ms), equal to float rounding. (nodes, heads, 1),
# contiguous: per batch, message passing reads it as it is
_ATTENTION = "({rows}.flatten(1) @ torch.block_diag(*{attn}[0]).t()).unsqueeze(-1)"


def _gat_conv(module: torch.nn.Module, spell: Spell) -> SplitConv | None:
    if hasattr(module, "fc_src") or not hasattr(module, "has_explicit_bias"):
        return None  # separate source and destination weights, or a DGL before 1.1
    heads, out = getattr(module, "_num_heads", 0), getattr(module, "_out_feats", 0)
    per_batch = [
        ("er", _ATTENTION.format(rows="{x_dst}", attn="{layer}.attn_r")),
        ("a", "dgl.ops.edge_softmax(block, {layer}.leaky_relu(dgl.ops.u_add_v(block, {el}, {er})))"),
        # dgl.ops.u_mul_e_sum(block, {h}, {a}), faster on the CPU: see the helper's docstring
        ("", "{weighted_sum}(block, {h}, {a})"),
    ]
    if getattr(module, "res_fc", None) is not None:
        per_batch.append(("+=", f"{{layer}}.res_fc({{dst}}).view(-1, {heads}, {out})"))
    if module.has_explicit_bias:  # in place, on u_mul_e_sum's new tensor
        per_batch.append(("+=", f"{{layer}}.bias.view(1, {heads}, {out})"))
    activation = getattr(module, "activation", None)
    if activation:
        per_batch.append(_activation(activation, spell))
    return SplitConv(
        "GATConv applies fc to each source row and weighs it by attn_l",
        (f"{{layer}}.fc({{x}}).view(-1, {heads}, {out})",), tuple(per_batch),
        per_node_extra=(("el", _ATTENTION.format(rows="{x}", attn="{layer}.attn_l")),),
        suffix="fc",
        refuses_zero_in_degree=_refuses_zero_in_degree(module),
    )


def _refuses_zero_in_degree(module: torch.nn.Module) -> bool:
    return getattr(module, "_allow_zero_in_degree", True) is False


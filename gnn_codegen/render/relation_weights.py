"""Stage 6, render (heterogeneous): whether the helpers' one product over a HeteroGraphConv's
relations (_relations_product) should first look for relations whose weights are combinations
of the others' (_find_weight_basis: a basis decomposition with fewer bases than relations, one
weight shared by relations), decided from the weights each relation is given when the model
is generated. Where none are, the search finds nothing at run time either and is left out of
the written helpers, which a reviewer then reads as the plain sum of products side by side."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.trace.hetero_tracer import hetero_conv

if TYPE_CHECKING:
    from gnn_codegen.trace.hetero import HeteroTraced

Relation = tuple[str, str, str]
_UNKNOWN = object()  # a weight forward computes from more than the model's weights


def weights_combine(traced: HeteroTraced, relations: Iterable[Relation],
                    find_basis: Callable[[list[torch.Tensor]], Any]) -> bool:
    """Whether some HeteroGraphConv call gives the GraphConvs of its relations into one type
    weights of which find_basis (the written helpers' _find_weight_basis) finds some to be
    combinations of the others: forward's mod_kwargs weights as computed while tracing, else
    each GraphConv's own. A weight not known from the model's weights alone counts as one
    that may be (the search then stays: it decides at run time, as ever)."""
    relations = tuple(relations)
    for node in traced.graph_module.graph.nodes:
        if node.op != "call_function" or node.target is not hetero_conv:
            continue
        module = traced.model.get_submodule(str(node.args[0]))
        if not isinstance(module, dglnn.HeteroGraphConv):
            continue  # a user's own layer, run as written: no helper's product
        inputs, ntype, mod_kwargs = node.args[2], node.args[3], node.args[5]
        weights = [_weight(traced, module, rel, mod_kwargs) for rel in relations
                   if rel[2] == ntype and isinstance(inputs, dict) and rel[0] in inputs]
        if any(w is _UNKNOWN for w in weights):
            return True
        given = [w for w in weights if w is not None]
        if len(given) > 1 and find_basis(given) is not None:
            return True
    return False


def _weight(traced: HeteroTraced, module: dglnn.HeteroGraphConv, rel: Relation, mod_kwargs: Any) -> Any:
    """The weight the relation's GraphConv multiplies by (None: not a GraphConv, or none)."""
    mod = module.mod_dict.get(rel, module.mod_dict.get(rel[1]))  # as DGL picks it
    if not isinstance(mod, dglnn.GraphConv):
        return None
    if mod_kwargs is None:
        return mod.weight
    if not isinstance(mod_kwargs, dict):
        return _UNKNOWN
    kwargs = mod_kwargs.get(rel[1], {})
    given = kwargs.get("weight") if isinstance(kwargs, dict) else _UNKNOWN
    if isinstance(given, fx.Node):
        value = traced.constants.get(given.name)
        return value if isinstance(value, torch.Tensor) else _UNKNOWN
    return mod.weight if given is None else given

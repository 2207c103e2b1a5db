"""Stage 2 for heterogeneous models, trace: forward's None defaults that it hands to a
HeteroGraphConv or a heterogeneous layer of the user's as its features, or reads as a dict
(`h.items()`): OpenHGNN's `forward(self, hg, h_dict=None, embed=False)`.
forward cannot run with such a default at None, so its callers always give it: it is a feature
input, a dict per node type, taken by name as forward is called. The choices are the
homogeneous pipeline's (forward_defaults.none_default_choices); the first that traces is kept,
and where none does, the trace at the defaults' refusal stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from gnn_codegen.errors import GnnCodegenError, TraceFailedError
from gnn_codegen.trace.forward_defaults import none_default_choices
from gnn_codegen.load.hetero_schema import Schema
from gnn_codegen.trace.hetero import HeteroTraced, _signature, trace_hetero
from gnn_codegen.trace.hetero_tracer import NoneFeaturesError


def trace_with_defaults(model: torch.nn.Module, schema: Schema, feature_types: tuple[str, ...], path: Path,
                        forward_args: dict[str, Any] | None = None) -> HeteroTraced:
    """trace_hetero at forward's defaults, or with None defaults as inputs where the defaults
    give a HeteroGraphConv None as its features."""
    try:
        return trace_hetero(model, schema, feature_types, path, forward_args)
    except (NoneFeaturesError, TraceFailedError) as refusal:
        # forward ran into None as its features: handed to a layer, or used as a dict (`h.items()`)
        if not isinstance(refusal, NoneFeaturesError) and "'NoneType' object" not in str(refusal):
            raise
        graph_arg = _signature(model, dict(forward_args or {}))[0]
        given = set(forward_args or {})
        for choice in none_default_choices(model, graph_arg):
            if choice & given:
                continue  # a value given with --forward-args is traced at that value
            try:
                return trace_hetero(model, schema, feature_types, path, forward_args, as_features=choice)
            except GnnCodegenError:  # a speculative trace: any refusal means no
                continue
        raise refusal from None

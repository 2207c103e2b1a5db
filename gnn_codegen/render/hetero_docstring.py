"""Stage 6, render (heterogeneous): the docstring of the generated `inference`."""

from __future__ import annotations

import inspect
import json
import textwrap
from typing import Any

import dgl.nn as dglnn
import torch

from gnn_codegen.render import forward_args
from gnn_codegen.render.runtime_section import parameters_sentence


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _docstring(model: torch.nn.Module, traced: Any, result: str | None, subgraphs: bool = False,
               runtime: str = "_HeteroBatches", runtime_module: str | None = None,
               incremental: str = "") -> list[str]:
    """incremental: why this model refuses keep_layers= or changed=, if it does
    (hetero_incremental.py); what they do is the runtime's docstring's."""
    from_graph = dict(traced.graph_data)
    features = [p for p, _ in traced.inputs if p not in from_graph]
    graph = f"[g] * {traced.blocks}" if traced.blocks else traced.graph_arg
    first = list(inspect.signature(type(model).forward).parameters)[1] == traced.graph_arg
    # forward(self, h=None, blocks=None): the graph by name; forward(self, feats): none
    call = ", ".join([graph, *features] if first else features if traced.kept
                     else [*features, f"{traced.graph_arg}={graph}"])
    call += "".join(f", {name}" for name, _ in traced.forward_args)
    if traced.kept:
        call += f") on {graph} (the graph forward reads as {', '.join('self.' + p for p in traced.kept)}"
    own = (" (for a layer of this model's own, the graph of those in-edges, with the batch's "
           "nodes first of their type)") if subgraphs else ""
    paragraphs = [
        f"self.forward({call}) in eval mode, computed one layer at a time: for each destination "
        "node type, over batches of batch_size of its nodes, each with the block of all its "
        f"in-edges of every relation into that type{own}.",
    ]
    as_dicts = [f for f in features if f not in traced.tensor_inputs]
    if as_dicts:
        paragraphs.append(f"{', '.join(as_dicts)}: a dict of features per node type, as forward takes it.")
    for name in traced.tensor_inputs:
        paragraphs.append(f"{name}: the {dict(traced.inputs)[name][0]} features, a tensor, as forward takes it.")
    for name, key in traced.graph_data:
        types = _and(list(dict(traced.inputs)[name]))
        paragraphs.append(f"{traced.graph_arg if not traced.blocks else 'g'}.nodes[ntype].data[{json.dumps(key)}]: "
                          f"the features forward reads from its graph, for {types}.")
    if traced.forward_args:
        paragraphs.append(forward_args.paragraph(traced.forward_args))
    if result is not None:  # which of the runtime's forms of nodes= this forward's result takes
        asked = (f"a 1-D tensor of IDs of {result} nodes" if result
                 else "a dict of 1-D tensors of node IDs per type")
        paragraphs.append(f"nodes: {asked}.")
    # what the runtime's parameters do is the same in every module: its docstring says it
    own = ["batch_size", "device", "max_memory", "progress", *(["nodes"] if result is not None else []),
           "storage", "changed", "keep_layers"]
    if incremental:
        paragraphs.append(incremental)
    paragraphs.append(parameters_sentence(own, runtime, runtime_module))
    lines: list[str] = []
    for paragraph in paragraphs:
        lines += [*textwrap.wrap(paragraph, 88, break_on_hyphens=False), ""]
    lines[0] = '"""' + lines[0]
    return [f"    {line}" if line else "" for line in lines[:-1]] + ['    """']


def _describe_conv(module: torch.nn.Module) -> str:
    """`HeteroGraphConv: a GraphConv per relation`, for the comment above a layer."""
    if not isinstance(module, dglnn.HeteroGraphConv):
        return f"{type(module).__name__}, on each batch's graph of its in-edges"
    classes = sorted({type(m).__name__ for m in module.mods.values()})
    return f"HeteroGraphConv: {'a ' if len(classes) == 1 else ''}{' or '.join(classes)} per relation"

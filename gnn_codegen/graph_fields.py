"""Stage 4, infer attributes: what the probe run (attributes.py) learns when forward fails on the
probe graph, about the graph data a user's message-passing module reads from the graph it is
given (`graph.edata["w"]`, `graph.srcdata["norm"]`, a message function's `edges.data["etype"]`),
and about inputs used as indices (`self.weight[etype]`).

A module kept whole (a leaf) gets each batch's block, which carries none of the graph's data, so
such a module is traced into instead (pipeline.py): there its reads become inputs of forward
read from the user's graph (graph_data.py), given to every batch by its rows. Where its message
passing cannot be followed (a Python message function), the refusal says how to pass the field
as an argument, which the generated loop gathers per batch like any other."""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.errors import UnsupportedModuleError
from gnn_codegen.ir import Program


def missing_key(exc: BaseException) -> str | None:
    """The key of the KeyError that made `exc`, or None. torch.fx's interpreter re-raises a
    module's KeyError as a RuntimeError from it, after adding lines of its own to the key."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyError) and len(seen.args) == 1 and isinstance(seen.args[0], str):
            return seen.args[0].split("\n", 1)[0]
        seen = seen.__cause__ or seen.__context__
    return None


def reads_key(module: torch.nn.Module, key: str) -> bool:
    """Whether the module's class spells `key` as a subscript (`["w"]`), where forward or a
    message function reads it: a KeyError of a graph's data, not of a dict of its own."""
    try:
        source = inspect.getsource(type(module))
    except (OSError, TypeError):
        return False
    return f'["{key}"]' in source or f"['{key}']" in source


def field_refusal(location: str, accessor: str, where: str, key: str,
                  module_class: type) -> UnsupportedModuleError:
    """The refusal of a module that reads graph data `key`, which stands where tracing into the
    module fails too; pipeline.py traces into `module_class` on seeing it."""
    error = UnsupportedModuleError(
        f'{location}: {accessor} ({where}) reads "{key}" of the graph it is given (graph.edata, '
        f"srcdata, dstdata or ndata, or edges.data in a message function), data the user's graph "
        "carries and a block of layer-wise inference does not. gnn-codegen gives a module such data "
        "where it can follow the module's message passing (update_all with DGL's built-in functions, "
        "dgl.function), and this module's it cannot follow. Read the field in forward and pass it to "
        f'the module as an argument (`{accessor}(g, h, g.edata["{key}"])`, the module setting it on '
        "its graph), or evaluate this model with its full-graph forward."
    )
    error.module_class = module_class  # type: ignore[attr-defined]
    return error


def index_high(modules: list[torch.nn.Module]) -> int:
    """The count of IDs an input used as an index may take: below the first dimension of every
    table the modules that read it hold (a relation's weights, an embedding), so that each ID
    the probe draws is in range of whichever the input indexes."""
    sizes = [p.shape[0] for m in modules for p in m.parameters() if p.dim() >= 2]
    return int(min(sizes)) if sizes else 1


def is_index_failure(exc: BaseException) -> bool:
    """forward failed because a float input was used as an index."""
    seen: Any = exc
    while seen is not None:
        if isinstance(seen, IndexError) and "used as indices" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def missing_key_refusal(key: str, program: Program, node: fx.Node | None) -> str:
    """forward failed on the probe graph looking up `key` where no module of the user's can be
    traced into for it: where, and what to do (no input width can help, so none is asked for)."""
    op = program.by_name.get(node.name) if node is not None else None
    where = f"{op.location}: " if op is not None and op.location else ""
    what = f"{op.accessor} " if op is not None and op.accessor else "forward "
    return (
        f'{where}{what}looks up "{key}" and fails (KeyError) on a probe graph that carries none of '
        "the data a graph may carry. Where that is data of the user's graph read inside a module, "
        'read it in forward (g.edata["' + key + '"] or g.ndata["' + key + '"]) and pass it to the '
        "module as an argument; or evaluate this model with its full-graph forward."
    )

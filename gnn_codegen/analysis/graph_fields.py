"""Graph data a user's message-passing module reads from the graph it is given (`graph.edata["w"]`,
`graph.srcdata["norm"]`, a message function's `edges.data["etype"]`), and inputs used as indices
(`self.weight[etype]`): what the probe run (attributes.py) learns when forward fails on the
probe graph, and the rewrite that gives such a module the user's graph's data on each block.

A module kept whole (a leaf) gets each batch's block, which carries none of the graph's data, so
such a module is traced into first (pipeline.py): there its reads become inputs of forward read
from the user's graph (graph_data.py), given to every batch by its rows. Where its message
passing cannot be followed (a Python message function), `give_graph_data` calls it through
write_out's with_graph_data helper instead, the data read from the user's graph as forward's
inputs and set on each block at its rows; probe.py proves that exact like any module."""

from __future__ import annotations

import inspect
import operator
from dataclasses import replace
from typing import TYPE_CHECKING

import torch
import torch.fx as fx

from gnn_codegen.errors import UnsupportedModuleError
from gnn_codegen.ir import Program

if TYPE_CHECKING:
    from gnn_codegen.trace.traced import Traced


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
    """The refusal of a module that reads graph data `key`, which stands where neither tracing
    into the module nor give_graph_data can follow it; pipeline.py tries both on seeing it."""
    error = UnsupportedModuleError(
        f'{location}: {accessor} ({where}) reads "{key}" of the graph it is given (graph.edata, '
        f"srcdata, dstdata or ndata, or edges.data in a message function), data the user's graph "
        "carries and a block of layer-wise inference does not. gnn-codegen gives a module the data "
        "of forward's own graph on each block where it calls the module on that graph with its "
        "arguments by position, and follows what the module reads where its message passing is "
        "update_all with DGL's built-in functions (dgl.function); this module and its call are "
        "neither. Call the module on forward's graph with its arguments by position, or read the field "
        f'in forward and pass it to the module as an argument (`{accessor}(g, h, g.edata["{key}"])`, '
        "the module setting it on its graph), or evaluate this model with its full-graph forward."
    )
    error.module_class = module_class  # type: ignore[attr-defined]
    error.graph_field = key  # type: ignore[attr-defined]
    return error


def index_high(modules: list[torch.nn.Module]) -> int:
    """The count of IDs an input used as an index may take: below the first dimension of every
    table the modules that read it hold (a relation's weights, an embedding), so that each ID
    the probe draws is in range of whichever the input indexes."""
    sizes = [p.shape[0] for m in modules for p in m.parameters() if p.dim() >= 2]
    return int(min(sizes)) if sizes else 1


def is_index_failure(exc: BaseException) -> bool:
    """forward failed because a float input was used as an index."""
    seen: BaseException | None = exc
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


def field_view(module_class: type, key: str) -> str | None:
    """"edata" or "ndata": where the class reads `key`, as its source spells the read (edges.data
    and .edata on edges; srcdata, dstdata, ndata, nodes.data, edges.src and edges.dst on
    nodes), or None where it reads it from both or its source says neither."""
    try:
        source = inspect.getsource(module_class)
    except (OSError, TypeError):
        return None
    spelled = (f'["{key}"]', f"['{key}']")
    on_edges = any(f"{v}{k}" in source for v in (".edata", "edges.data") for k in spelled)
    on_nodes = any(f"{v}{k}" in source for v in (".srcdata", ".dstdata", ".ndata", "nodes.data", "edges.src",
                                                 "edges.dst") for k in spelled)
    if on_edges == on_nodes:
        return None
    return "edata" if on_edges else "ndata"


def data_roles(fields: tuple[tuple[str, str], ...], extra: int) -> tuple[str | None, ...]:
    """The rows each argument of with_graph_data after its module is read at (ir.MessagePassing
    roles): the graph, the features on source rows, the fields (a constant), each field's
    value, then the `extra` arguments of the module's own after its features, each on the
    block's edges as a user's module's are (plan.mp_extra_arguments)."""
    return ("graph", "src", None, *("edge" if view == "edata" else "src" for view, _ in fields), *("edge",) * extra)


def give_graph_data(traced: Traced, fields_of: dict[type, tuple[tuple[str, str], ...]]) -> Traced:
    """Rewrite, in place, each call `module(g, feat, *args)` on forward's own graph of a class in
    `fields_of` into with_graph_data(module, g, feat, fields, *values, *args), each value read from g
    as an input of forward (lifted as graph_data.py lifts forward's own reads); the Traced with
    those inputs. Calls in other forms stay as they are (and the probe refuses them)."""
    from gnn_codegen.trace.graph_data import lift_graph_data
    from gnn_codegen.trace.write_out import HELPERS

    gm = traced.graph_module
    graph = gm.graph
    modules = dict(gm.named_modules())
    placeholder = next(n for n in graph.nodes if n.op == "placeholder" and n.target == traced.graph_arg)
    lifted = {(view, key): name for name, view, key in traced.graph_data}
    by_name = {n.name: n for n in graph.nodes}
    changed = False
    for node in list(graph.nodes):
        if node.op != "call_module" or type(modules.get(str(node.target))) not in fields_of:
            continue
        if node.kwargs or len(node.args) < 2 or node.args[0] is not placeholder or not isinstance(node.args[1], fx.Node):
            continue
        fields = fields_of[type(modules[str(node.target)])]
        with graph.inserting_before(node):
            values = [by_name[lifted[field]] if field in lifted else graph.call_function(
                operator.getitem, (graph.call_function(getattr, (placeholder, field[0])), field[1]))
                for field in fields]
            call = graph.call_function(HELPERS["with_graph_data"], (
                graph.get_attr(str(node.target)), placeholder, node.args[1], fields, *values, *node.args[2:]))
        for created in (call, *values):
            created.stack_trace = created.stack_trace or node.stack_trace
        node.replace_all_uses_with(call)
        graph.erase_node(node)
        changed = True
    if not changed:
        return traced
    gm.recompile()
    taken = {n.name for n in graph.nodes if n.op == "placeholder"}
    names, reads = lift_graph_data(gm, traced.graph_arg, taken, blocks=traced.blocks_style)
    return replace(traced, inputs=traced.inputs + names, graph_data=traced.graph_data + reads)

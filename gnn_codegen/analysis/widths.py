"""Stage 4, infer attributes, by running: the widths of values found by running the
modules on a probe graph (the search over forward's inputs' widths, and its refusals)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import FeatDimsError, UnsupportedOperationError
from gnn_codegen.ir import Program
from gnn_codegen.analysis.graph_fields import (
    field_refusal,
    index_high,
    is_index_failure,
    missing_key,
    missing_key_refusal,
    reads_key,
)
from gnn_codegen.analysis.input_specs import InputSpec, unknown_width_error
from gnn_codegen.user_classes import class_and_where
from gnn_codegen.trace.metapaths import metapaths, random_metapath_graph
from gnn_codegen.trace.relation_graphs import random_relations_graph
from gnn_codegen.trace.several_graphs import random_graphs
from gnn_codegen.random_graphs import random_edges
from gnn_codegen.lower.row_axis import axis_ops
from gnn_codegen.lower.row_ranges import range_ops
from gnn_codegen.trace.traced import Traced


# Primes, so that no width in a model coincides with a row count by accident.
PROBE_NODES = 29


PROBE_EDGES = 113


def probe_graph(num_nodes: int = PROBE_NODES, num_edges: int = PROBE_EDGES, seed: int = 0) -> dgl.DGLGraph:
    """A small random graph with a self-loop on every node (no zero in-degree errors)."""
    gen = torch.Generator().manual_seed(seed)
    return dgl.graph(random_edges(num_nodes, num_edges - num_nodes, gen, zero_in_degree=False), num_nodes=num_nodes)


class _Recorder(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule, skipped: frozenset[str] = frozenset()):
        super().__init__(gm)
        self.values: dict[str, Any] = {}
        self.current: fx.Node | None = None  # the node running (where forward failed)
        self.skipped = skipped  # ops the program left out, not to run: row ranges (row_ranges.py)

    def run_node(self, n: fx.Node) -> Any:
        self.current = n
        result = None if n.name in self.skipped else super().run_node(n)
        self.values[n.name] = result
        return result


def _refuse_graph_field(traced: Traced, program: Program, node: fx.Node | None, exc: Exception) -> None:
    """forward failed in a user's message-passing module reading data of its graph that the
    probe graph lacks: refuse it so that pipeline.py traces into it (graph_fields.py)."""
    key = missing_key(exc)
    if key is None or node is None or node.op != "call_module" or node.name not in program.by_name:
        return
    op = program.op(node.name)
    if op.kind != "mp" or op.mp is None or op.mp.verified:
        return
    module = traced.model.get_submodule(str(node.target))
    if reads_key(module, key):
        raise field_refusal(op.location or "forward", op.accessor, class_and_where(module), key,
                            type(module)) from None


def _probe_values(traced: Traced, program: Program, inputs: tuple[InputSpec, ...]) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(0)
    paths = metapaths(program)  # a heterograph whose metapath graphs have PROBE_NODES nodes and self-loops
    g = random_metapath_graph(paths, PROBE_NODES, zero_in_degree=False) if paths else (
        random_relations_graph(program, PROBE_NODES, zero_in_degree=False) or probe_graph())
    if program.graphs:  # several graphs side by side over the same nodes (several_graphs.py)
        g = random_graphs(program.graphs, PROBE_NODES, lambda seed: probe_graph(seed=seed))
    by_target = {spec.param: spec for spec in inputs}
    args = []
    for node in traced.graph_module.graph.nodes:
        if node.op != "placeholder":
            continue
        if node.target == traced.graph_arg:
            args.append(g)
        elif node.target in by_target:
            args.append(by_target[node.target].example(PROBE_NODES, PROBE_EDGES, gen))
        else:
            args.append(node.args[0] if node.args else None)  # its default (trace: as traced)
    recorder = _Recorder(traced.graph_module, range_ops(program.output) | axis_ops(program.output))
    with torch.no_grad():
        try:
            recorder.run(*args)
        except Exception as exc:
            _refuse_graph_field(traced, program, recorder.current, exc)
            try:
                _refuse_failure(exc, inputs, program, recorder.current)
            except (FeatDimsError, UnsupportedOperationError) as refusal:
                refusal.indexed = is_index_failure(exc)  # type: ignore[attr-defined]  # _search_inputs
                refusal.failed_at = recorder.current  # type: ignore[attr-defined]  # infer_attributes
                raise refusal from None
    return recorder.values


def _refuse_failure(exc: Exception, inputs: tuple[InputSpec, ...], program: Program, node: fx.Node | None) -> None:
    """Raise the refusal of a run of forward on the probe graph that failed with `exc` at `node`."""
    key = missing_key(exc)
    if key is not None:  # no width can help: say what is missing
        raise UnsupportedOperationError(missing_key_refusal(key, program, node))
    failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if any(s.guessed for s in inputs):
        raise unknown_width_error(inputs, failure)
    raise UnsupportedOperationError(
        f"running forward on a small probe graph with inputs of widths "
        f"{ {s.param: s.shape for s in inputs} } failed with {failure}. If an "
        "input width is wrong, give it with "
        "--feat-dims NAME=WIDTH."
    )


def _search_inputs(traced: Traced, program: Program, model: torch.nn.Module, inputs: tuple[InputSpec, ...],
                   given: dict[str, tuple[int, ...]],
                   failure: Exception) -> tuple[tuple[InputSpec, ...], dict[str, Any]]:
    """forward failed on the probe graph at the inputs found: the first inputs, changed in the
    ways below where nothing fixed them, at which it runs, or `failure`.

    - node inputs whose width nothing fixes: the widths that modules traced into declare for
      what forward computes from them (TAGConv(4, ...) on `x * 0.5`), then those that a Linear
      or weight matrix inside a user's message-passing module reads (its first may project
      something else);
    - a float input used as an index (`self.weight[etype]`): IDs below the leading size of every
      table of the modules that read it (graph_fields.index_high), an edge input first;
    - data forward reads from its graph (a module traced into reading `g.srcdata["norm"]` as
      `h * norm` in layers of other widths, `g.edata["w"].view(-1, 1)`), and edge inputs whose
      width nothing fixes: one number per row, as such norms and weights are (a column on
      nodes, flat on edges first).

    Widths vary fastest, then the data's shapes, then which input is IDs (only where a run
    failed using a float as an index): each combination is one run on a small graph."""
    users = program.consumers()
    free = [s for s in inputs if s.param not in given and s.dtype != "torch.int64"]
    fields = {target for target, _, _ in program.graph_data}
    widths = list(dict.fromkeys((*traced.candidate_widths, *_user_module_widths(program, model))))
    index_choices: list[InputSpec | None] = [None, *sorted(free, key=lambda s: s.rows != "edge")]
    shapes: list[tuple[tuple[int, ...], tuple[int, ...]] | None] = [None, ((1,), ()), ((1,), (1,)), ((), ())]

    def changed(spec: InputSpec, ids: InputSpec | None, width: int | None,
                shape: tuple[tuple[int, ...], tuple[int, ...]] | None) -> InputSpec:
        if spec is ids:
            modules = [model.get_submodule(program.module_path(program.op(u))) for u in users[spec.name]
                       if program.op(u).kind in ("mp", "module")] or [model]
            return replace(spec, shape=(), dtype="torch.int64", high=index_high(modules), guessed=False)
        if shape is not None and spec in free and (spec.param in fields or spec.guessed and spec.rows == "edge"):
            return replace(spec, shape=shape[0] if spec.rows == "node" else shape[1], guessed=True)
        if width is not None and spec.guessed and spec.rows == "node":
            return replace(spec, shape=(width,), guessed=False)
        return spec

    # IDs only where forward used a float as an index: a float input that runs as integers is
    # not one
    indexed = getattr(failure, "indexed", False)
    for ids in index_choices:
        for shape in shapes:
            for width in [None, *widths]:
                if shape is ids is width is None:
                    continue  # the inputs that failed
                if ids is not None and not indexed:
                    raise failure
                tried = tuple(changed(s, ids, width, shape) for s in inputs)
                try:
                    return tried, _probe_values(traced, program, tried)
                except (FeatDimsError, UnsupportedOperationError) as exc:
                    indexed = indexed or getattr(exc, "indexed", False)
    raise failure


def _user_module_widths(program: Program, model: torch.nn.Module) -> list[int]:
    """The in_features of the Linears inside users' message-passing modules, in order, then the
    rows of the weight matrices they hold themselves (`h @ self.weight`, a relation's
    `self.weight[etype]` of shape (relations, in, out))."""
    widths = []
    for op in program.ops:
        if op.kind == "mp" and op.mp is not None and not op.mp.inline and op.mp.verified is False:
            module = model.get_submodule(program.module_path(op))
            widths += [m.in_features for m in module.modules() if isinstance(m, torch.nn.Linear)]
            widths += [int(p.shape[-2]) for p in module.parameters(recurse=False) if p.dim() >= 2]
    return widths

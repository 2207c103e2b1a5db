"""Part of stage 2, trace: forward's Python decisions on what a traced value *is*, not on what it
holds (`if h.shape[-1] == self.out_dim:`, `if x.dtype == torch.long:`, `if h.dim() == 3:`),
decided while tracing from example values, each with the assumptions about forward's inputs it
rests on (ir.StaticDecision), which the generated inference checks where it starts (render.py).

torch.fx stops at such a test (Tracer.to_bool) because a proxy has no value. For a given model
and input widths and dtypes the answer is fixed, so it is worked out on real values: the fx graph
built so far is run, only the nodes the condition depends on, on example inputs and a small
graph. Two things make the answer one of metadata only, never of data:

- the condition reaches every tensor only through a question about its metadata (shape, size,
  ndim, dtype, is_floating_point), with nothing but Python's operators in between, so no value
  of any tensor (nor the graph's structure, nor a weight that a state_dict may change) enters it
  directly (`(x > 0).any()` or `h.sum() > 0` is refused as before);
- it is evaluated twice, on two graphs of different sizes and two draws of random inputs, and
  must come out the same: a test of a row count (`h.shape[0] > 100`) is a test of the graph.

The same goes for the numbers Python needs of a shape (`len(h.shape)`, `int(h.shape[1])`,
`range(...)`, `for d in h.shape`: MetadataProxy, _Tracer.iter), which the generated code then
writes as numbers.

What a decision assumes is what its answer rests on: the row shape, number of dimensions or
dtype of each input the tensors asked about are computed from, not through a graph (edge types
that pick a subgraph change which edges, not any shape) nor edge weights. A value computed from
inputs needs only the inputs' checks: its shape and dtype follow from theirs and the weights.

The widths of inputs come from what tells them at the time of the test: --feat-dims, a module
traced into that declares them, or a module that has already consumed the input (a Linear's
in_features, a convolution's in_feats, an nn.Embedding's IDs). A test of an input's width that
none of these tells is refused with the --feat-dims that settles it. An input's dtype is the
model's float dtype unless an nn.Embedding looks it up, or it is compared with integers (type
IDs)."""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, replace
from typing import Any, Mapping

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import FeatDimsError
from gnn_codegen.trace.edge_weight_norm import normalized_edge_weight
from gnn_codegen.trace.graph_data import graph_data_read
from gnn_codegen.analysis.input_specs import GUESSED_WIDTH, declared_width, model_float_dtype
from gnn_codegen.ir import Assumption, StaticDecision
from gnn_codegen.analysis.node_tables import _origin, node_features
from gnn_codegen.analysis.shape_keeping import SHAPE_KEEPING_MODULES, keeps_width
from gnn_codegen.trace.relation_graphs import probe_heterograph
from gnn_codegen.trace.decision_queries import _Query, _queries
from gnn_codegen.trace.decision_runs import (
    _get_attr,
    _probe_graph,
    _relative,
    _run,
    _untraced_modules,
    _user_line,
    _zero_in_degree_allowed,
)

# the sizes of the two example graphs: different, so a test of a row count shows itself
_PROBE_NODES = (9, 14)


@dataclass(frozen=True)
class _Input:
    """What is known of one of forward's inputs when a test is met."""

    shape: tuple[int, ...] | None  # past the row axis; None: nothing tells its width yet
    dtype: torch.dtype
    high: int = 0  # IDs an nn.Embedding looks up: below its size
    edges: bool = False  # a row per edge


def decide(condition: fx.Node, tracer: Any, graph_arg: str, widths: Mapping[str, tuple[int, ...]]) -> bool | None:
    """The branch forward takes at `condition`, recorded on the tracer (`static_decisions`) with
    what it assumes of forward's inputs; None when the condition reads a tensor's values."""
    value = concrete(condition, tracer, graph_arg, widths, bool)
    return None if value is None else bool(value)


def concrete(condition: fx.Node, tracer: Any, graph_arg: str, widths: Mapping[str, tuple[int, ...]],
             kind: type) -> Any:
    """The value Python needs of a traced value (a test's bool, `len(h.shape)`, `int(h.shape[1])`),
    as `kind`, recorded like a test; None when it reads a tensor's values."""
    queries = _queries(condition)
    if not queries:
        return None
    inputs = {name: _known_input(name, tracer, graph_arg, widths)
              for name in dict.fromkeys(_source(n, graph_arg) for n in _cone(condition)) if name}
    try:
        runs = [_evaluate(condition, tracer, graph_arg, inputs, seed) for seed in range(len(_PROBE_NODES))]
    except Exception:  # the graph so far does not run on example values: as before, refused
        runs = []
    # what the answer rests on: the inputs each tensor asked about is computed from, but not
    # through a graph (edge types that pick a subgraph change which edges, not any shape)
    asked = _asked_of_inputs(queries, graph_arg, runs[0] if runs else {})
    for name, reads in asked.items():
        if "shape" in reads and inputs[name].shape is None:
            where, source = _user_line()
            data = _data_key(name)
            key, spelled = (data[1], f"{graph_arg}.{name}") if data else (name, name)
            # an edge field is mostly a weight per edge (and head), broadcast against messages
            example = f"{key}=1, or {key}=2x1 for rows of shape (2, 1)" if name.startswith("edata[") else f"{key}=128"
            raise FeatDimsError(
                f"{_relative(where)} (`{source}`): forward tests the shape of its input {spelled} (or of what it "
                f"computes from it) before any module of the model says how wide it is. Give its "
                f"width with --feat-dims {key}=WIDTH (e.g. --feat-dims {example}), and the module is "
                "generated for that width."
            )
    answers = {kind(values[condition]) for values in runs}
    if len(answers) != 1:  # it did not run, or it tests the graph's size
        return None
    taken = answers.pop()
    assumptions: list[Assumption] = []
    for name, reads in asked.items():
        known = inputs[name]
        shape = known.shape if known.shape is not None else (GUESSED_WIDTH,)
        if "shape" in reads:
            assumptions.append(Assumption(name, "shape", shape))
        elif "ndim" in reads:
            assumptions.append(Assumption(name, "ndim", len(shape) + 1))
        if "dtype" in reads:
            assumptions.append(Assumption(name, "dtype", str(known.dtype)))
    where, source = _user_line()
    intermediate = any(_source(q.subject, graph_arg) is None for q in queries)
    decision = StaticDecision(source, where, taken, tuple(assumptions), intermediate)
    tracer.static_decisions = [*getattr(tracer, "static_decisions", []), decision]
    return taken


def _cone(node: fx.Node) -> set[fx.Node]:
    """`node` and every node it is computed from."""
    seen, stack = set(), [node]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(current.all_input_nodes)
    return seen


def _source(node: fx.Node, graph_arg: str) -> str | None:
    """The input a node is, by name: a parameter of forward, or its graph's data
    (`ndata['feat']`, an input once lifted: graph_data.py); None for any other node."""
    if node.op == "placeholder":
        return None if node.target == graph_arg else str(node.target)
    read = graph_data_read(node, graph_arg)
    return None if read is None else f"{read[0]}[{read[1]!r}]"


def _data_key(name: str) -> tuple[str, str] | None:
    """(view, key) of a source named by _source for graph data, else None."""
    view, bracket, rest = name.partition("[")
    return (view, ast.literal_eval(rest[:-1])) if bracket else None


def _sources(node: fx.Node, graph_arg: str, values: Mapping[fx.Node, Any]) -> set[str]:
    """The inputs a value is computed from, other than through a graph (by `values`, the nodes'
    values on an example: every input when there are none)."""
    found, seen, stack = set(), set(), [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        name = _source(current, graph_arg)
        if name is not None:
            found.add(name)
        elif not isinstance(values.get(current), dgl.DGLGraph):
            # edge weights (a convolution's `edge_weight=`, what EdgeWeightNorm normalises) scale
            # messages, never a result's shape
            weights = current.args[1] if current.target is normalized_edge_weight else current.kwargs.get("edge_weight")
            stack.extend(n for n in current.all_input_nodes if n is not weights)
    return found


def _asked_of_inputs(queries: list[_Query], graph_arg: str, values: Mapping[fx.Node, Any]) -> dict[str, set[str]]:
    """What each input of forward must be for the answers to hold: what is asked of it, or of
    a value computed from it (whose shape follows from the inputs' shapes and the model's
    weights, and whose dtype from their dtypes)."""
    asked: dict[str, set[str]] = {}
    for query in queries:
        for name in _sources(query.subject, graph_arg, values):
            asked.setdefault(name, set()).add(query.reads)
    return asked


def _known_input(name: str, tracer: Any, graph_arg: str, widths: Mapping[str, tuple[int, ...]]) -> _Input:
    """An input's row shape and dtype, from what tells them when the test is met."""
    floats = getattr(torch, model_float_dtype(tracer.root).removeprefix("torch."))
    data = _data_key(name)  # --feat-dims and modules traced into name graph data by its key
    if (data[1] if data else name) in widths:
        return _Input(tuple(widths[data[1] if data else name]), floats)
    declared = getattr(tracer, "declared_widths", {}).get(data or name)
    if declared:
        return _Input((declared,), floats)
    frontier = [n for n in tracer.graph.nodes if _source(n, graph_arg) == name]
    if any(user.kwargs.get("edge_weight") is node or user.target is normalized_edge_weight
           for node in frontier for user in node.users):
        return _Input((), floats, edges=True)  # a number per edge, as dgl.nn's convolutions take it
    compared = [user.args[1] for node in frontier for user in node.users
                if user.target in (operator.eq, operator.ne) and isinstance(user.args[1], int)]
    if compared:  # type IDs (`etype == 2`): integers, each of those values and more
        return _Input((), torch.int64, max(compared) + 2, edges=not name.startswith("ndata["))
    while frontier:
        node = frontier.pop(0)
        for user in node.users:
            if user.op == "call_module":
                module = tracer.root.get_submodule(str(user.target))
                if isinstance(module, torch.nn.Embedding) and user.args[:1] == (node,):
                    return _Input((), torch.int64, module.num_embeddings)
                width = declared_width(module)
                if width:
                    return _Input((width,), floats)
                if isinstance(module, SHAPE_KEEPING_MODULES) and user.args[:1] == (node,):
                    frontier.append(user)  # `self.dropout(x)` before the layer that says its width
            elif user.op in ("call_function", "call_method") and user.args[:1] == (node,) and \
                    keeps_width(user, tracer.root):
                frontier.append(user)
    return _Input(None, floats)


def _example(known: _Input, rows: int, generator: torch.Generator) -> torch.Tensor:
    shape = (rows, *(known.shape if known.shape is not None else (GUESSED_WIDTH,)))
    if known.dtype == torch.int64:
        return torch.randint(0, max(known.high, 1), shape, generator=generator)
    # positive: edge weights normalised by DGL's EdgeWeightNorm must be, and no value is asked
    return torch.rand(shape, generator=generator, dtype=known.dtype) + 0.1


def _evaluate(condition: fx.Node, tracer: Any, graph_arg: str, inputs: Mapping[str, _Input],
              seed: int) -> dict[fx.Node, Any]:
    """The values of the condition and the nodes it depends on, run on example values."""
    generator = torch.Generator().manual_seed(seed)
    cone = _cone(condition)
    # a table of the model read as node features (`x = self.emb.weight`) has a row per node of
    # every graph forward is given: both graphs have that many (node_tables.py)
    modules = dict(tracer.root.named_modules())
    with _untraced_modules():  # the table itself, not fx's proxy of it
        tables = [_get_attr(origin, tracer.root) for node in cone for feature in node_features(node, modules, frozenset())
                  if (origin := _origin(feature)) is not None]
    rows = tables[0].shape[0] if tables and isinstance(tables[0], torch.Tensor) else _PROBE_NODES[seed]
    graph = probe_heterograph(tracer, rows, generator) or _probe_graph(rows, generator)  # relation_graphs.py
    examples = {name: _example(known, graph.num_edges() if known.edges or name.startswith("edata[") else rows,
                               generator)
                for name, known in inputs.items()}
    constants = {qualname: value for value, qualname in getattr(tracer, "tensor_attrs", {}).items()}
    values: dict[fx.Node, Any] = {}
    with torch.no_grad(), _untraced_modules(), _zero_in_degree_allowed(tracer.root):
        for node in tracer.graph.nodes:
            if node not in cone:
                continue
            source = _source(node, graph_arg)
            if source is not None:
                values[node] = examples[source]
            else:
                values[node] = _run(node, values, tracer.root, graph, examples, constants)
    return values


def graph_data_named(decisions: tuple[StaticDecision, ...],
                     lifted_as: Mapping[tuple[str, str], str]) -> tuple[StaticDecision, ...]:
    """The decisions with graph data (`ndata['feat']`) named by the inputs that stand for it
    once lifted (graph_data.lift_graph_data)."""
    def named(assumption: Assumption) -> Assumption:
        data = _data_key(assumption.input)
        return replace(assumption, input=lifted_as.get(data, assumption.input)) if data else assumption

    return tuple(replace(d, assumptions=tuple(named(a) for a in d.assumptions)) for d in decisions)


class MetadataProxy(fx.Proxy):
    """fx's Proxy, but `len(h.shape)`, `int(h.shape[1])` and `range(h.shape[1])` are worked out
    like a test (concrete): fx itself has no value to give."""

    def __len__(self) -> int:
        size = self.tracer.create_proxy("call_function", len, (self,), {})
        value = self.tracer.concrete(size.node, int)  # type: ignore[attr-defined]
        if value is None:  # fx's own refusal, with its message
            return super().__len__()
        return int(value)

    def __int__(self) -> int:
        value = self.tracer.concrete(self.node, int)  # type: ignore[attr-defined]
        if value is None:
            raise TypeError(f"int() of a traced value that is no shape: {self.node.format_node()}")
        return int(value)

    __index__ = __int__

    def __getattr__(self, name: str) -> Any:
        return _MetadataAttribute(self, name)  # `h.shape`, whose len() is asked


class _MetadataAttribute(fx.proxy.Attribute, MetadataProxy):
    """An attribute of a traced value (`h.shape`), with MetadataProxy's len() and int()."""

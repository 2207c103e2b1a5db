"""Stage 4, infer attributes (NNVM's InferShape/InferType, in spirit): for every op of the
Program, whether its rows are nodes, nothing (parameters, shapes: rendered inline), a tuple of
node tensors, or the graph; and for node tensors their trailing shape and dtype.

Shapes come from running the traced module once on a small probe graph; input widths are read
from the modules that first consume each input, or given with --feat-dims."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from gnn_codegen.trace.edge_weight_norm import EDGE_WEIGHT_NORM
from gnn_codegen.errors import FeatDimsError, GraphValueError, UnsupportedOperationError, internal
from gnn_codegen.ir import Op, Program, Ref
from gnn_codegen.analysis.input_specs import InputSpec, infer_inputs
from gnn_codegen.analysis.leaf_failure import user_module_failed
from gnn_codegen.analysis.mp_arguments import mp_feature_spaces
from gnn_codegen.analysis.node_count import tables_by_node_id
from gnn_codegen.analysis.node_reductions import RUNTIME_METHODS, node_reduction
from gnn_codegen.analysis.rowwise import RESHAPES, START_DIM_MODULES, is_rowwise, is_rowwise_module
from gnn_codegen.lower.simplify import DST_COUNT_METHODS
from gnn_codegen.analysis.sized_tensors import EDGE_COUNTS, count_of, is_factory, prefix_count, row_count_of
from gnn_codegen.render.squeezed_rows import squeezes_every_axis
from gnn_codegen.trace.traced import Traced
from gnn_codegen.analysis.widths import PROBE_EDGES, PROBE_NODES, _probe_values, _search_inputs

# global: one value for all nodes, a reduction over them (node_reductions.py)
Rows = Literal["node", "edge", "none", "tuple", "graph", "inline", "global"]
@dataclass(frozen=True)
class TensorInfo:
    rows: Rows
    shape: tuple[int, ...] = ()  # trailing shape (after the row dimension) of a node tensor
    dtype: str = ""  # e.g. "torch.float32"


@dataclass(frozen=True)
class Attributes:
    info: tuple[tuple[str, TensorInfo], ...]
    inputs: tuple[InputSpec, ...]
    # tables forward indexes by node ID, which fix the graph's node count: (attribute path,
    # rows), node_count.py
    node_tables: tuple[tuple[str, int], ...] = ()

    def __getitem__(self, name: str) -> TensorInfo:
        return dict(self.info)[name]

    def as_dict(self) -> dict[str, TensorInfo]:
        return dict(self.info)


def _refuse_graph_access(program: Program) -> None:
    """Before running anything: graph data or structure read outside message passing."""
    graphs = {op.name for op in program.ops if op.kind == "graph"}  # forward's, and derived ones
    users = program.consumers()
    for op in program.ops:
        if op.kind in ("mp", "graph", "graph_value") or not graphs & set(op.refs()):
            continue
        if _counts_rows_of_a_factory(op, program, users[op.name]):
            continue  # torch.ones(g.num_edges(), 1): made per block with the block's count
        if op.kind == "method" and op.target in DST_COUNT_METHODS:
            raise _refuse(op, "counts the block's destination nodes outside a slice `h[:n]`; only "
                          "that slicing idiom is understood")
        what = _graph_use(program, op)
        raise UnsupportedOperationError(
            f"{op.location or 'forward'}: forward reads {what} outside a message-passing module. "
            "Layer-wise inference runs every layer on blocks of the graph, so graph data and "
            "structure must reach the model as arguments of forward (def forward(self, g, x, "
            "etypes), computed from the graph before the call) or be read inside a "
            "message-passing module; or evaluate this model with its full-graph forward."
        )


def _takes_only_dtype_and_device(op: Op) -> bool:
    """`t.to(other)`, `t.type_as(other)`: of `other`, only its dtype and device are read."""
    return op.kind == "method" and op.target in ("to", "type_as") and len(op.args) == 2 and not op.kwargs


def _counts_rows_of_a_factory(op: Op, program: Program, users: list[str]) -> bool:
    return op.kind == "method" and op.target in EDGE_COUNTS and bool(users) and all(
        is_factory(program.op(u)) and row_count_of(program.op(u), program) == ("edges", op.args[0].name)
        for u in users
    )


def _graph_use(program: Program, op: Op) -> str:
    """How the user's code spells a use of the graph: `g.edata['_TYPE']`, `g.in_degrees()`."""
    def spell(value: Any) -> str:
        if isinstance(value, Ref):
            used = program.op(value.name)
            if used.kind == "graph":
                return used.target or "g"
            if used.kind == "function" and used.target == "getattr" and len(used.args) == 2:
                return f"{spell(used.args[0])}.{used.args[1]}"
            if used.kind == "function" and used.target == "operator.getitem" and len(used.args) == 2:
                return f"{spell(used.args[0])}[{spell(used.args[1])}]"
            if used.kind == "method" and used.args:
                return f"{spell(used.args[0])}.{used.target}({'...' if len(used.args) > 1 or used.kwargs else ''})"
            return "the graph"
        return repr(value)
    # the outermost expression on the graph that this op belongs to
    users = program.consumers()
    current = op
    while len(users[current.name]) == 1:
        reader = program.op(users[current.name][0])
        if reader.kind not in ("function", "method") or reader.target not in ("getattr", "operator.getitem") and not (
            reader.kind == "method" and reader.args and reader.args[0] == Ref(current.name)
            and current.target == "getattr"
        ):
            break
        current = reader
    return f"`{spell(Ref(current.name))}`"


def _describe(op: Op) -> str:
    if op.kind == "module":
        return f"self.{op.target} ({op.class_name})"
    if op.kind == "method":
        return f".{op.target}(...)"
    return f"{op.target}(...)"


def _no_rows(op: Op) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"{op.location or 'forward'}: what forward returns has no row per node or edge: "
        "it follows from the model's weights or the graph's sizes alone, not from any node's features, "
        "so there is nothing to compute per node. Use forward's value itself; gnn-codegen writes "
        "inference for outputs with a row per node (or per edge).")


def _refuse(op: Op, why: str) -> UnsupportedOperationError:
    where = op.location or "forward"
    return UnsupportedOperationError(
        f"{where}: {_describe(op)} {why}. Layer-wise inference computes everything outside "
        "message-passing modules on one batch of nodes at a time, so only operations that treat "
        "each node's row on its own can be placed there. Move this computation into a "
        "message-passing module, or, if it does treat rows independently, mark its module with "
        "--leaf NAME."
    )


# reductions over rows: those node_reductions.py writes out in other forms (`h.max(0)`, with
# dtype=), and those it does not write out at all
_OTHER_REDUCTIONS = frozenset(RUNTIME_METHODS) | {"median", "mode", "prod", "norm", "logsumexp", "argmax", "argmin",
                                                  "quantile", "nanmean", "nansum"}


def _refuse_reduction(op: Op) -> UnsupportedOperationError:
    where = op.location or "forward"
    return UnsupportedOperationError(
        f"{where}: {_describe(op)} reduces over the rows of different nodes in a form gnn-codegen "
        "does not write out. The reductions over all nodes it computes exactly, in a pass over the "
        "stored rows before the layer that reads them, are .sum(0), .mean(0), .amax(0), .amin(0), "
        ".var(0) and .std(0) (with unbiased= or correction=), and .sum(), .mean(), .max(), .min(), "
        ".var() and .std() of every element. Write it as one of those (h.amax(0) for "
        "h.max(0).values), or evaluate this model with its full-graph forward."
    )


def infer_attributes(traced: Traced, program: Program, model: torch.nn.Module,
                     given: dict[str, tuple[int, ...]] | None = None,
                     leaves: frozenset[str] = frozenset()) -> tuple[Attributes, dict[str, Any]]:
    """The attributes of every op, and the value each took in the run on the probe graph (the
    shapes and dtypes probe.py makes its own inputs from)."""
    for op in program.ops:
        if op.kind == "mp":
            mp_feature_spaces(op)
    _refuse_graph_access(program)
    inputs = infer_inputs(program, model, given or {}, dict(traced.declared_widths))
    try:
        values = _probe_values(traced, program, inputs)
    except (FeatDimsError, UnsupportedOperationError) as failure:
        try:
            inputs, values = _search_inputs(traced, program, model, inputs, given or {}, failure)
        except UnsupportedOperationError as final:
            # every input's width known and nothing else tried helps: a user's module kept whole
            # failed for what it reads unseen, which tracing into it shows (leaf_failure.py)
            if not isinstance(final, GraphValueError):
                user_module_failed(traced.graph_module, program, getattr(failure, "failed_at", None),
                                   str(final).split(" failed with ", 1)[-1].rstrip(". "))
            raise
    specs = {s.name: s for s in inputs}
    info: dict[str, TensorInfo] = {}
    for op in program.ops:
        value = values.get(op.name)
        if op.kind == "graph":
            info[op.name] = TensorInfo("graph")
            continue
        if op.kind == "input":
            info[op.name] = TensorInfo(specs[op.name].rows, tuple(value.shape[1:]), str(value.dtype))
            continue
        if op.kind == "graph_value":  # g.out_degrees(): one entry per node; EdgeWeightNorm per edge
            rows = "edge" if op.target == EDGE_WEIGHT_NORM else "node"
            info[op.name] = TensorInfo(rows, tuple(value.shape[1:]), str(value.dtype))
            continue
        if is_factory(op) and row_count_of(op, program) is not None:
            # a constant per row, made where it is read with its readers' count (sized_tensors.py)
            info[op.name] = TensorInfo("inline")
            continue
        arg_rows = [info[r].rows for r in op.refs()]
        if _takes_only_dtype_and_device(op):  # t.to(feat): feat's dtype and device, none of its rows
            arg_rows = arg_rows[:1] if isinstance(op.args[0], Ref) else []
        # `h.mean(0)`, and `torch.softmax(w, dim=0)` of it: once for all nodes, before the batches
        reduces = node_reduction(op, lambda name: info[name].rows) is not None
        of_reductions = "global" in arg_rows and all(info[r].rows == "global" or program.op(r).kind == "attr"
                                                     for r in op.refs())
        if isinstance(value, torch.Tensor) and (reduces or of_reductions):
            info[op.name] = TensorInfo("global", tuple(value.shape), str(value.dtype))
            continue
        node_like = op.kind == "mp" or any(r in ("node", "edge", "tuple") for r in arg_rows)
        if not node_like:
            info[op.name] = TensorInfo("inline")
            continue
        if isinstance(value, torch.Tensor):
            if op.kind != "mp":
                _check_rowwise(op, program, info, values, model, leaves)
            if value.dim() == 0 or value.shape[0] not in (PROBE_NODES, PROBE_EDGES):
                raise _refuse(op, f"returns {tuple(value.shape)} rows from node rows")
            rows: Rows = "node" if value.shape[0] == PROBE_NODES else "edge"
            if op.kind != "mp" and any(r in ("node", "edge") and r != rows for r in arg_rows):
                raise _refuse(op, "combines node rows with edge rows")
            info[op.name] = TensorInfo(rows, tuple(value.shape[1:]), str(value.dtype))
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
            if op.kind not in ("mp", "module") and not (op.kind == "function" and op.target == "operator.getitem"):
                _check_rowwise(op, program, info, values, model, leaves)
            info[op.name] = TensorInfo("tuple", (len(value),))  # shape holds the tuple's length
        elif isinstance(value, (int, torch.Size, tuple, torch.device, torch.dtype)) or value is None:
            # a shape, or where a tensor lives (`.to(feats.device)`): read where it is used
            info[op.name] = TensorInfo("inline")
        else:
            raise _refuse(op, f"returns a {type(value).__name__}")
    for name in program.output_refs():
        if info[name].rows == "global":
            op = program.op(name)
            raise UnsupportedOperationError(
                f"{op.location or 'forward'}: forward returns {_describe(op)}, one value for all nodes "
                "(a graph-level readout), not a row per node. Generate inference for the per-node "
                "part and apply the readout to its result.")
        if info[name].rows in ("inline", "none"):  # forward does nothing per node
            raise _no_rows(program.op(name))
        if info[name].rows not in ("node", "edge"):
            raise internal(f"forward's output {name} is not indexed by nodes or edges")
    return Attributes(tuple(info.items()), inputs, tables_by_node_id(program, model, inputs)), values


def _check_rowwise(op: Op, program: Program, info: dict[str, TensorInfo], values: dict[str, Any],
                   model: torch.nn.Module, leaves: frozenset[str]) -> None:
    if op.helper:
        return  # a written-out convolution's work per source row (write_out.py): row-wise
    first_node = next(r for r in op.refs() if info[r].rows in ("node", "edge", "tuple"))
    first_value = values[first_node]
    ndim = first_value.dim() if isinstance(first_value, torch.Tensor) else 2
    if op.kind == "module":
        if op.class_name in leaves:
            return
        module = model.get_submodule(op.target)
        if type(module) is torch.nn.Sequential and is_rowwise_module(module):
            return
        module_dim = getattr(module, "dim", None)
        if op.module_class in START_DIM_MODULES:
            module_dim = getattr(module, "start_dim", module_dim)
        if not is_rowwise(op, ndim, module_dim):
            raise _refuse(op, "is not known to treat each node's row on its own")
        return
    name = op.target.rsplit(".", 1)[-1]
    if name == "getitem" and info[first_node].rows == "tuple":
        return
    counted = count_of(prefix_count(op), program)
    if counted and counted[0] == "tensor" and info[counted[1]].rows == info[first_node].rows == "node":
        # h[: x.size(0)] of two node tensors: all of h on the full graph; on a batch, the rows
        # of h that x has (its destination rows when x is a layer's result)
        return
    if squeezes_every_axis(op):
        return  # h.squeeze(): written with the dims it squeezes, never the rows' (squeezed_rows.py)
    if name == "squeeze" and op.kind == "method" and op.args[1:] == (0,) and not op.kwargs and \
            getattr(values[op.name], "shape", None) == first_value.shape:
        return  # h.squeeze(0) of many rows squeezes nothing: written without it (render_layer.py)
    if name == "flatten" and op.kind == "method" and len(op.args) == 1 and not op.kwargs and \
            getattr(values[op.name], "shape", (None,))[:1] == first_value.shape[:1]:
        return  # h.flatten() of (N, 1): a number per row, as on a batch of rows
    if name in RESHAPES:
        out = values[op.name]
        sizes = op.args[1:] if len(op.args) > 1 else ()
        if sizes and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        first = sizes[0] if sizes else None
        keeps = first == -1 or (isinstance(first, Ref) and info[first.name].rows == "inline")
        if keeps and isinstance(out, torch.Tensor) and out.dim() > 0 and out.shape[0] == first_value.shape[0]:
            return
        raise _refuse(op, "reshapes across the row dimension (write it as .view(-1, ...) or .flatten(1))")
    if not is_rowwise(op, ndim):
        if op.target.rsplit(".", 1)[-1] in _OTHER_REDUCTIONS:
            raise _refuse_reduction(op)
        raise _refuse(op, "mixes the rows of different nodes (or is not known to keep them apart)")

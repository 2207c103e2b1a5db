"""Forward's tensor inputs (part of stage 4, infer attributes): whether each is indexed by nodes
or by edges, its trailing shape and dtype, read from the modules that first consume it (a
Linear's in_features, RelGraphConv's relation count for edge types, an nn.Embedding's size for
the IDs it looks up), from the model itself for its tables, or given with --feat-dims."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import torch

from gnn_codegen.lower.edge_masks import mask_inputs
from gnn_codegen.trace.edge_weight_norm import EDGE_WEIGHT_NORM
from gnn_codegen.errors import FeatDimsError
from gnn_codegen.analysis.shape_keeping import SHAPE_KEEPING
from gnn_codegen.trace.graph_data import BLOCK_EDGE_IDS, BLOCK_NODE_IDS
from gnn_codegen.trace.node_counts import MADE, made_value
from gnn_codegen.ir import Op, Program, Ref, iter_refs, reads_metadata
from gnn_codegen.analysis.known_modules import is_dgl_module
from gnn_codegen.analysis.mp_arguments import mp_feature_spaces
from gnn_codegen.analysis.node_tables import table_of

_WIDTH_ATTRIBUTES = ("_in_src_feats", "_in_feats", "in_feats", "in_feat", "in_size", "in_channels", "in_dim")
# The width an input gets when nothing in the model fixes it (InputSpec.guessed)
GUESSED_WIDTH = 5


@dataclass(frozen=True)
class InputSpec:
    """One of forward's tensor inputs: indexed by nodes or by edges, its trailing shape, dtype."""

    name: str  # op name
    param: str  # forward's parameter name
    rows: Literal["node", "edge"]
    shape: tuple[int, ...]
    dtype: str = "torch.float32"
    high: int = 0  # integer inputs (edge types) take values in [0, high)
    # weights EdgeWeightNorm normalises: positive, as its norm="both" demands (edge_weight_norm.py)
    positive: bool = False
    # no module fixes its width (it only meets propagation and elementwise ops): checked with
    # GUESSED_WIDTH; the generated inference sizes its buffers from the first batch, whatever
    # width it is given
    guessed: bool = False
    # type IDs of a graph sorted by type (MessagePassing.sorted_types): ascending
    ascending: bool = False
    # a block's node or edge IDs in the graph (graph_data.BLOCK_NODE_IDS): 0, 1, ... by row
    ids_in_g: bool = False
    # made by forward from its graph's node count (node_counts.py): the call, its graph `{g}`
    made: str = ""

    def example(self, num_nodes: int, num_edges: int, generator: torch.Generator) -> torch.Tensor:
        rows = num_nodes if self.rows == "node" else num_edges
        if self.ids_in_g:
            return torch.arange(rows)
        if self.made:  # forward's own value, whatever the check gives: it makes it
            return made_value(self.made, rows)
        if self.dtype == "torch.bool":
            return torch.rand((rows, *self.shape), generator=generator) < 0.5
        if self.dtype == "torch.int64":
            ids = torch.randint(0, self.high, (rows, *self.shape), generator=generator)
            return ids.sort(dim=0).values if self.ascending else ids
        dtype = getattr(torch, self.dtype.removeprefix("torch."))
        if self.positive:
            return torch.rand((rows, *self.shape), generator=generator, dtype=dtype) + 0.1
        return torch.randn((rows, *self.shape), generator=generator, dtype=dtype)


def _module_width(module: torch.nn.Module) -> int | None:
    width = declared_width(module)
    return width if width else None  # 0: a lazy module that has not seen an input yet


def declared_width(module: torch.nn.Module) -> int | None:
    for attr in _WIDTH_ATTRIBUTES:
        value = getattr(module, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    for cls, attr in ((torch.nn.Linear, "in_features"), (torch.nn.BatchNorm1d, "num_features")):
        if isinstance(module, cls):
            return int(getattr(module, attr))
    if isinstance(module, torch.nn.LayerNorm):
        return int(module.normalized_shape[-1])
    # GINConv(apply_func=MLP), nn.Sequential: the first Linear inside reads the input. A user's
    # own module may first concatenate or project, so its Linears say nothing reliable.
    if is_dgl_module(module) or isinstance(module, torch.nn.Sequential):
        for sub in module.modules():
            if sub is not module and isinstance(sub, torch.nn.Linear):
                return int(sub.in_features)
            if sub is not module and is_dgl_module(sub):  # RelGraphConv's TypedLinear(in_size, ...)
                width = declared_width(sub)
                if width:
                    return width
    return None


def edge_values(program: Program) -> frozenset[str]:
    """Values indexed by edges: what message-passing calls take beyond their node features
    (edge weights, edge features, edge types), and what those are computed from."""
    edges: set[str] = set()
    for op in reversed(program.ops):
        if op.kind == "mp":
            edges.update(r for value, space in mp_feature_spaces(op) if space == "edge" for r in iter_refs(value))
        elif op.name in edges and not reads_metadata(op):
            edges.update(r for r in op.refs() if program.op(r).kind not in ("attr", "graph"))
    return frozenset(edges)


def normalised_weights(program: Program) -> set[str]:
    """The inputs EdgeWeightNorm normalises (edge_weight_norm.py)."""
    return {r for op in program.ops if op.kind == "graph_value" and op.target == EDGE_WEIGHT_NORM
            for r in iter_refs(op.args[1:])}


def _edge_input_spec(program: Program, model: torch.nn.Module, name: str) -> InputSpec | None:
    """Shape and dtype of an edge input, from the message-passing call that reads it."""
    param = program.op(name).target
    if name in normalised_weights(program):
        return InputSpec(name, param, "edge", ())  # DGL's EdgeWeightNorm needs one number per edge
    for op in program.ops:
        if op.kind != "mp":
            continue
        if op.mp is not None and op.mp.inline:  # a field of an inline message: a number per edge
            if any(name in iter_refs(value) for value in op.args[3:]):
                return InputSpec(name, param, "edge", (1,))
            continue
        module = model.get_submodule(program.module_path(op))
        for key, value in _keyed_arguments(op):
            if name not in iter_refs(value):
                continue
            if key == "edge_weight":
                return InputSpec(name, param, "edge", ())
            # RelGraphConv's edge types index its TypedLinear's relation weights
            num_rels = getattr(module, "num_rels", None) or getattr(getattr(module, "linear_r", None), "num_types", None)
            if num_rels and key in (2, "etypes"):
                return InputSpec(name, param, "edge", (), "torch.int64", int(num_rels))
            if num_rels and key in (3, "norm"):  # RelGraphConv's norm: one number per edge, (E, 1)
                return InputSpec(name, param, "edge", (1,))
            typed = _type_ids(module, key)
            if typed is not None and typed[0] == "edge":
                return InputSpec(name, param, "edge", (), "torch.int64", typed[1])
            width = getattr(module, "_in_edge_feats", None)
            edge_func = getattr(module, "edge_func", None)
            if width is None and isinstance(edge_func, torch.nn.Module):
                width = _module_width(edge_func)
            if width is None and key in (2, "edge_feat"):
                width = _module_width(module)  # GINEConv: edge features as wide as node features
            if isinstance(width, int):
                return InputSpec(name, param, "edge", (width,))
    return None


def _keyed_arguments(op: Op) -> list[tuple[int | str, Any]]:
    """A message-passing call's arguments after its features, by position in forward's call
    (2: the first after the graph and the features) or keyword."""
    return [(i, v) for i, v in enumerate(op.args[2:], start=2)] + list(op.kwargs)


def _type_ids(module: torch.nn.Module, key: int | str) -> tuple[str, int] | None:
    """HGTConv(g, x, ntype, etype): its node types index the TypedLinears of its keys, queries
    and values, its edge types those of its relations; (rows, how many types) for the argument
    at `key`, or None."""
    linear_k, relation_att = getattr(module, "linear_k", None), getattr(module, "relation_att", None)
    if not hasattr(linear_k, "num_types") or not isinstance(relation_att, torch.nn.ModuleList):
        return None
    if key in (2, "ntype"):
        return "node", int(linear_k.num_types)
    if key in (3, "etype") and len(relation_att) and hasattr(relation_att[0], "num_types"):
        return "edge", int(relation_att[0].num_types)
    return None


def _node_type_ids(program: Program, model: torch.nn.Module, name: str) -> InputSpec | None:
    """A node input that a module reads as node types (HGTConv's ntype, _type_ids)."""
    for op in program.ops:
        if op.kind != "mp" or (op.mp is not None and op.mp.inline):
            continue
        for key, value in _keyed_arguments(op):
            if name in iter_refs(value):
                typed = _type_ids(model.get_submodule(program.module_path(op)), key)
                if typed is not None and typed[0] == "node":
                    return InputSpec(name, program.op(name).target, "node", (), "torch.int64", typed[1])
    return None


def infer_inputs(program: Program, model: torch.nn.Module, given: dict[str, tuple[int, ...]],
                 declared: dict[str, int] | None = None) -> tuple[InputSpec, ...]:
    """`declared`: widths that modules traced into declare for inputs they take directly
    (trace.Traced.declared_widths), read when no module consumes the input otherwise."""
    normalised = normalised_weights(program)
    ascending = {r for op in program.ops if op.kind == "mp" and op.mp is not None and op.mp.sorted_types
                 for r in iter_refs((op.args[2:], op.kwargs))}
    specs = _inputs(program, model, given, declared or {})
    floats = model_float_dtype(model)
    return tuple(replace(spec, positive=spec.name in normalised,
                         ascending=spec.name in ascending and spec.dtype == "torch.int64",
                         dtype=floats if spec.dtype == "torch.float32" and not spec.made else spec.dtype)
                 for spec in specs)


def model_float_dtype(model: torch.nn.Module) -> str:
    """The dtype of the model's floating-point weights, which its float inputs must share
    (`model.double()` is fed float64 features; float32 ones fail in its first Linear): that of
    all of them where they agree, else float32."""
    dtypes = {t.dtype for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()}
    return str(dtypes.pop()) if len(dtypes) == 1 else "torch.float32"


def _inputs(program: Program, model: torch.nn.Module, given: dict[str, tuple[int, ...]],
            declared: dict[str, int]) -> tuple[InputSpec, ...]:
    users = program.consumers()
    edges = edge_values(program)
    specs: list[InputSpec] = []
    on_edges = {target for target, view, _ in program.graph_data if view in ("edata", BLOCK_EDGE_IDS)}
    masks = mask_inputs(program)
    on_edges |= {program.op(name).target for name in masks}
    tables = {target: path for target, path, _ in program.tables}
    block_ids = {target for target, view, _ in program.graph_data if view in (BLOCK_NODE_IDS, BLOCK_EDGE_IDS)}
    made = {target: key for target, view, key in program.graph_data if view == MADE}
    for name in program.inputs:
        target = program.op(name).target
        rows: Literal["node", "edge"] = "edge" if name in edges or target in on_edges else "node"
        if target in made:  # torch.ones(g.num_nodes(), 1): its shape and dtype as made
            value = made_value(made[target], 2)
            specs.append(InputSpec(name, target, "node", tuple(value.shape[1:]), str(value.dtype), made=made[target]))
            continue
        if target in block_ids:  # 0, 1, ...: IDs in the graph (graph_data.BLOCK_NODE_IDS)
            specs.append(InputSpec(name, target, rows, (), "torch.int64", ids_in_g=True))
            continue
        if target in tables:  # a table of the model: its own width and dtype (node_tables.py)
            table = table_of(model, tables[target])
            specs.append(InputSpec(name, target, "node", tuple(table.shape[1:]), str(table.dtype)))
            continue
        if target in given:
            specs.append(InputSpec(name, target, rows, given[target]))
            continue
        spec = _edge_input_spec(program, model, name) if rows == "edge" else None
        if spec is None and name in masks:  # what picks an edge subgraph's edges (edge_masks.py)
            spec = InputSpec(name, target, "edge", (), masks[name][0], masks[name][1])
        if spec is not None:
            specs.append(spec)
            continue
        ids = _embedding_ids(program, model, name, users) or _node_type_ids(program, model, name)
        if ids is not None:
            specs.append(ids)
            continue
        frontier, seen, width = [name], set(), None
        while frontier and width is None:
            current = frontier.pop(0)
            for user_name in users[current]:
                if user_name in seen:
                    continue
                seen.add(user_name)
                user = program.op(user_name)
                if user.kind == "mp" and user.mp is not None and user.mp.inline:
                    frontier.append(user_name)  # an inline update_all keeps the width of its fields
                elif user.kind == "module" or user.helper or (user.kind == "mp" and rows == "node"):
                    width = _module_width(model.get_submodule(program.module_path(user)))
                elif user.target.rsplit(".", 1)[-1] in SHAPE_KEEPING:
                    frontier.append(user_name)
                if width is not None:
                    break
        if width is None and rows == "node":
            width = declared.get(target)
        if width is None:  # forward takes any width, or fails on the probe graph (attributes.py)
            specs.append(InputSpec(name, target, rows, (GUESSED_WIDTH,), guessed=True))
            continue
        specs.append(InputSpec(name, target, rows, (width,)))
    return tuple(specs)


def unknown_width_error(specs: tuple[InputSpec, ...], failure: str) -> FeatDimsError:
    """The refusal when forward fails at the widths guessed for inputs no module fixes."""
    guessed = [s for s in specs if s.guessed]
    kind = "edge input" if guessed[0].rows == "edge" else "input"
    target = guessed[0].param
    return FeatDimsError(
        f"cannot tell the width of forward's {kind} '{target}' from the module that consumes it "
        f"(forward fails with width {GUESSED_WIDTH}: {failure}). Give it with --feat-dims "
        f"{target}=WIDTH (e.g. --feat-dims {target}=128)."
    )


def _embedding_ids(program: Program, model: torch.nn.Module, name: str,
                   users: dict[str, list[str]]) -> InputSpec | None:
    """An input that an nn.Embedding looks up (`self.emb(g.ndata[dgl.NID])`, node IDs or types):
    one integer per row, below the table's size."""
    readers = [program.op(u) for u in users[name]]
    if not readers or not all(r.kind == "module" and r.module_class == "torch.nn.modules.sparse.Embedding"
                              and r.args[:1] == (Ref(name),) for r in readers):
        return None
    high = min(model.get_submodule(r.target).num_embeddings for r in readers)
    op = program.op(name)
    return InputSpec(name, op.target, "node", (), "torch.int64", int(high))

"""Tables of the model that forward uses as node features: `x = self.emb.weight` (DGL's RGCN
entity classification example), a learnable feature matrix `self.feat`. Each such table has a
row per node of the graph. After tracing, its read becomes an input of the traced forward like a
parameter, so the layers read it per batch like any input; the generated inference reads it from
the model (`emb = self.emb.weight`), and the checks give it the rows of their own graphs."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
import torch.fx as fx

from gnn_codegen.trace.forward_defaults import required_first
from gnn_codegen.trace.inline_mp import update_all
from gnn_codegen.analysis.known_modules import is_message_passing
from gnn_codegen.names import NameAllocator


def node_features(node: fx.Node, modules: dict[str, torch.nn.Module], forced_mp: frozenset[str]) -> list[Any]:
    """The node-feature arguments of a message-passing call (nothing for other nodes)."""
    if node.op == "call_module" and is_message_passing(modules[str(node.target)], forced_mp):
        return [_first_operand(a) for a in node.args[1:2]]
    if node.op == "call_function" and node.target is update_all:
        return list(node.args[3:])
    return []


def _origin(value: Any) -> fx.Node | None:
    """The get_attr a feature argument comes from through the first operand of each op on the
    way (`F.dropout(self.emb.weight)`, `self.proj(self.feat)`, `self.feat * norm` in a module
    traced into), or None. First operands only: a weight is the second operand of what reads it
    (`F.linear(h, self.w)`), never the data that flows to the features."""
    seen = 0
    while isinstance(value, fx.Node) and seen < 64:
        if value.op == "get_attr":
            return value
        if value.op not in ("call_function", "call_method", "call_module") or not value.args:
            return None
        value, seen = _first_operand(value.args[0]), seen + 1
    return None


def _first_operand(value: Any) -> Any:
    while isinstance(value, (tuple, list)) and value:
        value = value[0]  # (src, dst) pairs: the source rows; torch.cat([x, ...]): the first
    return value


def _base_name(target: str) -> str:
    """`emb` for `emb.weight`, `feat` for `feat`."""
    parts = target.split(".")
    return (parts[-2] if parts[-1] == "weight" and len(parts) > 1 else parts[-1]).lstrip("_") or "table"


def lift_node_tables(gm: fx.GraphModule, model: torch.nn.Module, taken: set[str],
                     forced_mp: frozenset[str] = frozenset()) -> tuple[tuple[str, str], ...]:
    """Replace each read of a parameter or buffer of `model` that reaches a message-passing call
    as node features by a placeholder after the others; returns (placeholder, attribute path)
    for each."""
    graph = gm.graph
    modules = dict(gm.named_modules())
    tables: dict[str, fx.Node] = {}
    for node in list(graph.nodes):
        for feature in node_features(node, modules, forced_mp):
            origin = _origin(feature)
            if origin is not None and str(origin.target) not in tables and is_table(model, str(origin.target)):
                tables[str(origin.target)] = origin
    if not tables:
        return ()
    names = NameAllocator(set(taken) | {n.name for n in graph.nodes})
    lifted = []
    last = [n for n in graph.nodes if n.op == "placeholder"][-1]
    for target, read in tables.items():
        with graph.inserting_after(last):
            placeholder = graph.placeholder(names.take(_base_name(target)))
        for other in [n for n in graph.nodes if n.op == "get_attr" and n.target == target]:
            other.replace_all_uses_with(placeholder)
            graph.erase_node(other)
        lifted.append((str(placeholder.target), target))
        last = placeholder
    required_first(graph)  # after forward's parameters traced at a default
    gm.recompile()
    return tuple(lifted)


@contextlib.contextmanager
def tables_set_on(model: torch.nn.Module, tables: dict[str, torch.Tensor]) -> Iterator[None]:
    """While inside, each table of the model (attribute path -> value) is `value`, of the rows of
    the graph a check runs on; afterwards the model's own table again.

    The table is swapped for another tensor in every module that holds it (a table tied to two
    modules stays one), not filled with other rows in place: forward may hand the table itself
    on (`g.ndata["h"] = self.emb.weight` in a user's layer without a local scope), and what it
    left there must keep the rows it had, as a user's graph keeps them; rows swapped back in
    place changed that graph's column after the fact (a column of the table's rows on the
    check's larger graph, which the next call on it refused)."""
    saved: list[tuple[dict[str, Any], str, torch.Tensor]] = []
    with torch.no_grad():
        for path, value in tables.items():
            tensor = table_of(model, path)
            stand_in = _like(tensor, value.to(tensor.dtype))
            for slots, name in _slots_holding(model, tensor):
                saved.append((slots, name, tensor))
                slots[name] = stand_in
    try:
        yield
    finally:
        for slots, name, tensor in reversed(saved):
            slots[name] = tensor


def _like(tensor: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """value as what `tensor` is: a parameter (requiring grad as it does) or a plain buffer."""
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(value, requires_grad=tensor.requires_grad)
    return value


def _slots_holding(model: torch.nn.Module, tensor: torch.Tensor) -> list[tuple[dict[str, Any], str]]:
    """Each (module's parameter or buffer dict, name) that holds `tensor` itself."""
    found = []
    for module in model.modules():  # each module once, however often it is registered
        for slots in (module._parameters, module._buffers):
            found += [(slots, name) for name, held in slots.items() if held is tensor]
    return found


def table_of(model: torch.nn.Module, path: str) -> torch.Tensor:
    """The parameter or buffer at `path` (`emb.weight`)."""
    owner, _, name = path.rpartition(".")
    module = model.get_submodule(owner) if owner else model
    return module._parameters[name] if name in module._parameters else module.get_buffer(name)


def is_table(model: torch.nn.Module, path: str) -> bool:
    try:
        return table_of(model, path).dim() >= 1
    except (AttributeError, KeyError):
        return False

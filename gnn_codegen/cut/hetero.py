"""Cut a traced heterogeneous forward into stages: stage k computes, per destination node type,
every value of that type that k HeteroGraphConv calls lead to (its depth); stage 0, the work on
each node's own input features before the first one. What a later stage reads is stored, a row
per node of its type.

Each value is of one node type (its rows are that type's nodes) or a constant (of the weights
alone, computed once). A weight used as a node type's features (an embedding table) is of that
type. Operations between the calls must keep rows independent: each output row depends on the
same row of its inputs, which is what lets a batch compute them."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.trace.hetero_proxies import GRAPH_COUNTS
from gnn_codegen.trace.hetero import HeteroTraced
from gnn_codegen.trace.hetero_tracer import hetero_conv
from gnn_codegen.ir import Op, Ref
from gnn_codegen.lower.spelling import locations
from gnn_codegen.analysis.rowwise import EVAL_IDENTITY_MODULES, is_rowwise, qualified_name
from gnn_codegen.render.squeezed_rows import squeezes_every_axis, squeezes_first_axis

# operators whose second operand must not be of a node type: the first one's rows are kept
_ROWS_FROM_FIRST = (operator.matmul, torch.matmul, torch.mm)


@dataclass
class HeteroPlan:
    traced: HeteroTraced
    nodes: list[fx.Node]  # the live nodes, in order; eval-mode identities (Dropout) left out
    ntype: dict[fx.Node, str]  # the node type of each per-node value
    stage: dict[fx.Node, int]
    constants: list[fx.Node]  # computed once, from the weights alone (get_attr left out)
    stored: list[fx.Node]  # per-node values a later stage (or the result) reads
    output: Any  # forward's result, its nodes resolved past identities
    tables: dict[fx.Node, str] = field(default_factory=dict)  # weights read as a type's rows
    sizes: set[fx.Node] = field(default_factory=set)  # a batch's tensor sizes (`h.shape[0]`)
    # each live node's readers among the live nodes, through identities (resolve)
    users: dict[fx.Node, list[fx.Node]] = field(default_factory=dict)
    # the full graph's counts (`g.num_nodes("paper")`) and numbers computed from them alone
    counts: set[fx.Node] = field(default_factory=set)

    @property
    def num_stages(self) -> int:
        return max((s for s in self.stage.values()), default=0)

    def at(self, stage: int, ntype: str) -> list[fx.Node]:
        return [n for n in self.nodes if self.stage.get(n) == stage and self.ntype.get(n) == ntype
                and n.op != "placeholder" and n not in self.tables]


def result_type(plan: HeteroPlan) -> str | None:
    """What inference(nodes=...) takes: "" when forward returns a dict of node types (nodes is
    then a dict of IDs per type), the type when it returns one type's rows (nodes is then their
    IDs), None when it returns something else (no nodes= then)."""
    output = plan.output
    if isinstance(output, dict) and all(isinstance(v, fx.Node) for v in output.values()):
        return ""
    if isinstance(output, fx.Node) and plan.ntype.get(output):
        return plan.ntype[output]
    return None


def resolve(node: Any, modules: dict[str, torch.nn.Module]) -> Any:
    """The value a node stands for, past modules that are the identity in eval mode and past
    `h[:block.num_dst_nodes(t)]` on the whole graph (traced as `h[:None]`, trace.py)."""
    while isinstance(node, fx.Node):
        if node.op == "call_module" and qualified_name(type(modules[str(node.target)])) in EVAL_IDENTITY_MODULES:
            node = node.args[0]
        elif (node.op == "call_function" and node.target is operator.getitem
              and node.args[1] == slice(None, None, None)):
            node = node.args[0]
        else:
            break
    return node


# a tensor's sizes, and arithmetic on them: values of a batch (`h.shape[0]`), not rows
_SIZE_OPS = (operator.getitem, operator.mul, operator.add, operator.sub, operator.floordiv)


def _is_size(node: fx.Node, sizes: set[fx.Node]) -> bool:
    if node.op == "call_function" and node.target is getattr and node.args[1] == "shape":
        return True
    if node.op == "call_method" and node.target == "size":
        return True
    return (node.op == "call_function" and node.target in _SIZE_OPS
            and any(a in sizes for a in nodes_in(node.args))
            and all(a in sizes for a in nodes_in(node.args)))


def _keeps_rows_by_size(node: fx.Node, sizes: set[fx.Node], res: Any) -> bool:
    """`h.view(h.shape[0], -1)`, `h.reshape(h.shape[0], a * b)`: each row reshaped alone."""
    if not (node.op == "call_method" and node.target in ("view", "reshape") and len(node.args) >= 2):
        return False
    shape = node.args[1:] if not isinstance(node.args[1], (tuple, list)) else tuple(node.args[1])
    first = res(shape[0]) if isinstance(shape[0], fx.Node) else None
    return (first is not None and first.op == "call_function" and first.target is operator.getitem
            and first.args[1] == 0 and isinstance(first.args[0], fx.Node) and first.args[0].op == "call_function"
            and first.args[0].target is getattr)


def _refuse(node: fx.Node, traced: HeteroTraced, what: str) -> None:
    user, _ = locations(node, traced.path)
    where = user or f"{type(traced.model).__name__}.forward"
    raise UnsupportedOperationError(f"{where}: {what}")


def _as_op(node: fx.Node, modules: dict[str, torch.nn.Module]) -> Op:
    """The node as ir.Op, for rowwise.is_rowwise."""
    args = fx.node.map_arg(node.args, lambda n: Ref(n.name))
    kwargs = tuple(fx.node.map_arg(dict(node.kwargs), lambda n: Ref(n.name)).items())
    if node.op == "call_module":
        module = modules[str(node.target)]
        return Op(node.name, "module", str(node.target), args, kwargs, module_class=qualified_name(type(module)))
    name = str(node.target) if node.op == "call_method" else getattr(node.target, "__name__", "")
    return Op(node.name, "function" if node.op == "call_function" else "method", name, args, kwargs)


def build_hetero_plan(traced: HeteroTraced) -> HeteroPlan:
    gm = traced.graph_module
    modules = dict(gm.named_modules())
    graph_node = next(n for n in gm.graph.nodes if n.op == "placeholder" and n.target == traced.graph_arg)

    def res(value: Any) -> Any:
        return fx.node.map_aggregate(value, lambda v: resolve(v, modules) if isinstance(v, fx.Node) else v)

    output = res(traced.output)
    # live: what the result reads, walking back through resolved arguments
    live: set[fx.Node] = set()
    work = nodes_in(output)
    while work:
        node = work.pop()
        if node in live:
            continue
        live.add(node)
        work.extend(nodes_in(res((node.args, node.kwargs))))
    nodes = [n for n in gm.graph.nodes if n in live and n is not graph_node]
    users: dict[fx.Node, list[fx.Node]] = {n: [] for n in nodes}
    for node in nodes:
        for arg in nodes_in(res((node.args, node.kwargs))):
            if arg in users:
                users[arg].append(node)

    ntype: dict[fx.Node, str] = {}
    tables: dict[fx.Node, str] = {}
    for (_, t), node in traced.placeholders.items():
        ntype[node] = t
    # weights a HeteroGraphConv reads as a node type's features: that type's rows
    for node in nodes:
        if node.target is hetero_conv:
            for t, value in res(node.args[2]).items():
                if isinstance(value, fx.Node) and value.name in traced.constant_names:
                    tables[value] = t
    # and what is computed from them alone (DGL's rgcn-hetero: the self-loop's product with an
    # embedding), computed once for every node
    for node in nodes:
        if node.name in traced.constant_names and node not in tables:
            types = {tables[a] for a in nodes_in(res((node.args, node.kwargs))) if a in tables}
            if len(types) == 1:
                tables[node] = types.pop()
    untyped = set(traced.constant_names) - {n.name for n in tables}
    stage: dict[fx.Node, int] = {}
    sizes: set[fx.Node] = set()
    for node in nodes:
        if node.op == "placeholder" or node in tables:
            stage[node] = 0
            ntype.setdefault(node, tables.get(node, ""))
            continue
        if node.target is hetero_conv:
            inputs = res(node.args[2])
            depth = max((stage.get(v, 0) for v in inputs.values() if isinstance(v, fx.Node)), default=0)
            stage[node], ntype[node] = depth + 1, str(node.args[3])
            continue
        if node.name in untyped:
            continue
        args = nodes_in(res((node.args, node.kwargs)))
        types = {ntype[a] for a in args if a in ntype}
        if not types:
            continue  # a constant traced without a value (never: a guard)
        if len(types) > 1:
            _refuse(node, traced, f"this line combines rows of node types {' and '.join(sorted(types))}, which "
                    "a layer-wise loop over one node type at a time cannot compute")
        if _is_size(node, sizes):  # computed where it is read, from that stage's rows
            sizes.add(node)
            ntype[node] = types.pop()
            stage[node] = max(stage[a] for a in args if a in stage)
            continue
        op = _as_op(node, modules)
        typed_args = [a for a in nodes_in(res(node.args)) if a in ntype]
        if node.target in _ROWS_FROM_FIRST and (not res(node.args) or res(node.args)[0] not in typed_args
                                                 or any(a in ntype for a in nodes_in(res(node.args[1:])))):
            _refuse(node, traced, "a matrix product whose right operand holds one row per node mixes the "
                    "rows of different nodes; only products of node rows with weights keep rows independent")
        # h.squeeze(), h.squeeze(0): of the other axes alone, one node of the type refused (squeezed_rows.py)
        if not is_rowwise(op, 2) and not _keeps_rows_by_size(node, sizes, res) and not squeezes_every_axis(node) \
                and not squeezes_first_axis(node):
            _refuse(node, traced, f"{_describe(node)} is not known to keep each node's row independent of the "
                    "others, which a layer-wise loop over batches of nodes needs between HeteroGraphConv calls "
                    "(element-wise functions, nn.Linear, products with weights and such do)")
        ntype[node] = types.pop()
        stage[node] = max(stage[a] for a in args if a in stage)
    counts = _counts(nodes, res, traced)
    for node in counts:  # numbers that node rows are computed with, never a tensor of that size
        for user in users[node]:
            if not ntype.get(user) and user not in counts:
                _refuse(user, traced, "this line computes with the graph's size other than as a number (a tensor of "
                        "that size, say), which a layer-wise loop cannot do batch by batch; gnn-codegen reads the "
                        "full graph's counts as numbers that node rows are computed with "
                        "(h / g.num_nodes(\"paper\"))")
    _sink_tables(nodes, stage, tables, set(nodes_in(output)), users)
    _sink(nodes, stage, tables, set(nodes_in(output)), users, res)
    typed = [n for n in nodes if n in stage]
    stored = []
    for node in typed:
        if node.op == "placeholder" or node in tables:
            continue
        if node in sizes:
            if any(stage[u] != stage[node] for u in users[node]):
                _refuse(node, traced, "a tensor's size read by a later layer than the one that makes the "
                        "tensor; read it where it is used")
            continue
        later = any(stage.get(user, -1) > stage[node] for user in users[node])
        if later or node in nodes_in(output):
            stored.append(node)
    # computed once, from the weights alone: but a table sunk into the layer that reads it
    once = [n for n in nodes if n.name in traced.constant_names and n.op != "get_attr"
            and (n in tables or n not in stage)]
    return HeteroPlan(traced, nodes, ntype, stage, once, stored, output, tables, sizes, users, counts)


# Python's arithmetic on numbers, which keeps a count a number
_NUMBER_OPS = frozenset({operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                         operator.pow, operator.neg, operator.mod, abs, min, max, float, int, round})


def _counts(nodes: list[fx.Node], res: Any, traced: HeteroTraced) -> set[fx.Node]:
    """The full graph's counts forward reads (`g.num_nodes("paper")`), and the numbers computed
    from them (and constants) by Python's arithmetic: inference computes them once."""
    counts: set[fx.Node] = set()
    for node in nodes:
        if node.op == "call_method" and node.target in GRAPH_COUNTS:
            counts.add(node)
        elif node.op == "call_function" and node.target in _NUMBER_OPS:
            args = nodes_in(res((node.args, node.kwargs)))
            if args and any(a in counts for a in args) and all(a in counts or a.name in traced.constant_names
                                                               for a in args):
                counts.add(node)
    return counts


def _sink_tables(nodes: list[fx.Node], stage: dict[fx.Node, int], tables: dict[fx.Node, str],
                 results: set[fx.Node], users: dict[fx.Node, list[fx.Node]]) -> None:
    """A table computed from a type's table alone (rgcn-hetero's self-loop term
    `torch.matmul(self.embeds[t], self.loop_weight)` of the first layer) that only later stages
    read, and only on their destination rows (no HeteroGraphConv reads it as features): computed
    in the first of them, per batch, as the same term is in every later layer (from the rows
    the layer before stored), not once for every node of the type before the layers."""
    for node in reversed(nodes):
        if node not in tables or node.op == "get_attr" or node in results:
            continue
        readers = users[node]
        if not readers or any(u not in stage or u in tables or u.target is hetero_conv or stage[u] < 1
                              for u in readers):
            continue
        del tables[node]
        stage[node] = min(stage[u] for u in readers)


def _sink(nodes: list[fx.Node], stage: dict[fx.Node, int], tables: dict[fx.Node, str],
          results: set[fx.Node], users: dict[fx.Node, list[fx.Node]], res: Any) -> None:
    """Move an operation that only later stages read into the first of them, where its inputs
    are read anyway: the self-loop's `h @ loop_weight` of the next layer is then computed from
    the stored h, and no second tensor is stored beside it."""
    for node in reversed(nodes):
        if node not in stage or node.op == "placeholder" or node in tables or node.target is hetero_conv:
            continue
        readers = users[node]
        if not readers or node in results or any(stage[u] <= stage[node] for u in readers):
            continue
        kept = all(a.op == "placeholder" or a in tables or a in results
                   or any(stage[u] > stage[a] for u in users[a] if u is not node)
                   for a in nodes_in(res((node.args, node.kwargs))) if a in stage)
        if kept:
            stage[node] = min(stage[u] for u in readers)


def nodes_in(value: Any) -> list[fx.Node]:
    """The fx nodes inside a value (args, dicts, tuples), each once, in order."""
    found: list[fx.Node] = []
    fx.node.map_aggregate(value, lambda v: found.append(v) if isinstance(v, fx.Node) else None)
    return list(dict.fromkeys(found))


def _describe(node: fx.Node) -> str:
    if node.op == "call_module":
        return f"self.{node.target}"
    if node.op == "call_method":
        return f".{node.target}()"
    if node.target is operator.getitem:
        return "this indexing"
    return f"{getattr(node.target, '__name__', node.target)}()"

"""Trace, after graph_data.py: tensors forward makes from its graph's node count
(`x = torch.ones(g.num_nodes(), 1)` as features of a featureless graph, `torch.arange(g.num_nodes())`
to look up an embedding per node), on forward's graph or on a graph derived from it that keeps
its nodes (`dgl.add_self_loop(g)`). Each is a value of the whole graph, one row per node: it
becomes an input of the traced forward, which the generated inference makes once at the top from
the full graph it is given, as forward spells it, and gathers per batch like any other input. On
a block the count would be the block's (and `block.num_nodes()` is not even a count of one
kind of row), so it is never made per batch.

The lifted inputs are recorded as graph data (Traced.graph_data) under the view MADE, with the
call as forward writes it, the graph spelled `{g}`."""

from __future__ import annotations

import torch
import torch.fx as fx

from gnn_codegen.trace.graph_lineage import keeps_nodes
from gnn_codegen.names import NameAllocator
from gnn_codegen.render.code import constant

# the view of Traced.graph_data under which such inputs are recorded: no graph has it
MADE = "made_from_node_count"
# graph methods that count the nodes of a graph of one node type
NODE_COUNTS = frozenset({"num_nodes", "number_of_nodes"})
# torch functions whose first argument is a row count: a tensor with a row per node
_FACTORIES = {getattr(torch, name): name for name in ("ones", "zeros", "full", "arange")}
GRAPH = "{g}"  # where the spelled call names the graph


def _node_count(value: object, graph_arg: str) -> bool:
    return (isinstance(value, fx.Node) and value.op == "call_method" and value.target in NODE_COUNTS
            and len(value.args) == 1 and not value.kwargs and isinstance(value.args[0], fx.Node)
            and keeps_nodes(value.args[0], graph_arg))


def _spelled(node: fx.Node, graph_arg: str) -> str | None:
    """`torch.ones({g}.num_nodes(), 1)`, for a factory whose first size is a node count and whose
    other arguments are constants; None for anything else."""
    name = _FACTORIES.get(node.target) if node.op == "call_function" else None  # type: ignore[call-overload]
    if name is None or not node.args:
        return None
    # the sizes, as given (`ones(n, 1)` or `ones((n, 1))`), and what follows them
    tupled = isinstance(node.args[0], (tuple, list))
    if name == "full" or tupled:
        if not tupled or not node.args[0]:
            return None
        sizes, rest = list(node.args[0]), list(node.args[1:])
    elif name == "arange":
        if len(node.args) != 1:  # torch.arange(start, end): not a count of rows
            return None
        sizes, rest = [node.args[0]], []
    else:
        sizes, rest = list(node.args), []
    if not _node_count(sizes[0], graph_arg):
        return None
    dims = [f"{GRAPH}.num_nodes()", *(_constant(s) for s in sizes[1:])]
    if None in dims:
        return None
    size = f"({', '.join(dims)}{',' if len(dims) == 1 else ''})" if tupled else ", ".join(dims)
    others = [*(_constant(a) for a in rest), *(_constant(v) for v in node.kwargs.values())]
    if None in others:  # a size or a fill value computed in forward: left to the passes after
        return None
    parts = [size, *others[:len(rest)], *(f"{k}={v}" for k, v in zip(node.kwargs, others[len(rest):]))]
    return f"torch.{name}({', '.join(parts)})"


def _constant(value: object) -> str | None:
    try:
        return None if isinstance(value, fx.Node) else constant(value)
    except Exception:  # a value our constants cannot spell: left to the passes after (refused there)
        return None


def made_value(spelled: str, num_nodes: int) -> torch.Tensor:
    """The tensor a spelled call makes for a graph of num_nodes nodes (the check's and the
    probe's value of the input, the same as forward's)."""
    import dgl

    graph = dgl.graph(([], []), num_nodes=num_nodes)
    return eval(spelled.replace(GRAPH, "graph"), {"torch": torch, "graph": graph})  # our own spelling


def lift_node_counts(gm: fx.GraphModule, graph_arg: str, taken: set[str]
                     ) -> tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]:
    """Replace every tensor made from a node count by a placeholder of its own, after the last
    placeholder; returns the new inputs' names and (name, MADE, spelled call) for each."""
    graph = gm.graph
    names = NameAllocator(set(taken) | {n.name for n in graph.nodes})
    lifted: dict[str, fx.Node] = {}
    reads: list[tuple[str, str, str]] = []
    for node in list(graph.nodes):
        spelled = _spelled(node, graph_arg)
        if spelled is None:
            continue
        if spelled not in lifted:
            last = [n for n in graph.nodes if n.op == "placeholder"][-1]
            with graph.inserting_after(last):
                # (the factory's own fx name, `zeros`, stays taken by the node it replaces)
                name = names.take("ids" if spelled.startswith("torch.arange") else f"{node.target.__name__}_per_node")
                lifted[spelled] = graph.placeholder(name)
            reads.append((name, MADE, spelled))
        node.replace_all_uses_with(lifted[spelled])
        graph.erase_node(node)
    if not reads:
        return (), ()
    for node in reversed(list(graph.nodes)):  # the counts, unused now
        if node.op == "call_method" and node.target in NODE_COUNTS and not node.users:
            graph.erase_node(node)
    gm.recompile()
    return tuple(name for name, _, _ in reads), tuple(reads)

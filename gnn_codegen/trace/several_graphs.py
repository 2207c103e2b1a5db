"""Stage 2, trace (and the graphs the checks run on): a forward over several graphs side by side
(`forward(self, gs, h)`: HAN's GAT per metapath graph, each on the same h, then semantic
attention across them), as opposed to a list of blocks of one graph.

While traced, each item of the list is a graph of its own: a `graph_item(gs, i)` call of the
traced program, which layer-wise inference treats as a graph the user derives and passes (as
derived_graphs.py's graphs are ones forward derives): each gets full-neighbour batches of its
own over the same nodes. Which it is comes from the traced program, never from names: a list
is blocks where each item's message passing reads what message passing on the item before it
made, and nothing of later items (a chain: layer i's output feeds block i+1); it is several
graphs where, besides, message passing on two items reads the same values (side by side: the
same h, or every graph's results of the layer before). Anything else stays the blocks it was
taken for until now."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterator

import dgl
import torch
import torch.fx as fx

# how the generated code spells an item of forward's graphs (lower.py, render.py)
GRAPH_ITEM = "[]"


def graph_item(graphs: Any, index: int) -> Any:
    """forward's `gs[index]`: the traced program's node for one of its graphs."""
    return graphs[index]


def is_graph_item(node: Any) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target is graph_item


def side_by_side(graph: fx.Graph, is_message_passing: Callable[[fx.Node], Any]) -> int:
    """How many graphs forward uses side by side, as items of one list (the highest item index
    message passing runs on, plus one), or 0 where the items are blocks or used by no two
    message-passing calls. `is_message_passing(node)`: the graph node a message-passing call
    runs on, or None for other nodes."""
    item_of: dict[fx.Node, int] = {}  # graph node -> the item it is (or is derived from)
    # each node -> the items whose message passing it depends on (its own included)
    reads: dict[fx.Node, frozenset[int]] = {}
    # message passing -> (its item, the items of message passing it reads)
    calls: list[tuple[int, frozenset[int]]] = []
    for node in graph.nodes:
        if is_graph_item(node) and isinstance(node.args[1], int):
            item_of[node] = node.args[1]
        elif node.op == "call_function" and node.args and node.args[0] in item_of:  # dgl.add_self_loop(gs[0])
            item_of.setdefault(node, item_of[node.args[0]])
        inputs = frozenset().union(*(reads.get(n, frozenset()) for n in node.all_input_nodes))
        on = is_message_passing(node)
        if on is not None and on in item_of:
            calls.append((item_of[on], inputs))
            inputs = inputs | {item_of[on]}
        reads[node] = inputs
    items = {item for item, _ in calls}
    if len(items) < 2:
        return 0
    lowest = min(items)
    if all(read <= set(range(item)) and (item == lowest or item - 1 in read) for item, read in calls):
        return 0  # a chain: message passing on each item reads that on the one before: blocks
    # side by side: message passing on two items at once reads the same (forward's inputs,
    # or the last layer's results on every graph)
    if not any(a == b and x != y for (x, a) in calls for (y, b) in calls):
        return 0
    return max(items) + 1


def count_fixed_by_forward(attempt: Callable[[int], Any], side_by_side_in: Callable[[Any], int],
                           most: int) -> tuple[int, Any] | None:
    """The number of graphs forward takes side by side where forward's own Python fixes it
    (`for r in range(len(graphs)): conv(graphs[r], x_in[r])` with three x_in, mlcg-fd's BWGNN),
    for a list no count of blocks explains: the count at which the trace (`attempt(count)`, each
    item a graph of its own) uses that many graphs side by side, where one more graph makes
    forward fail. With the trace, or None."""
    one_more_fails = False
    for count in reversed(range(2, most + 2)):
        try:
            traced = attempt(count)
        except Exception:  # a speculative trace: any failure means not this count
            one_more_fails = True
            continue
        if one_more_fails and side_by_side_in(traced) == count:
            return count, traced
        one_more_fails = False
    return None


def drop_unused_items(gm: fx.GraphModule) -> None:
    """Remove the items of forward's list that nothing reads (the tracer makes one per position
    as soon as forward touches the list; forward's list may be shorter than those positions)."""
    for node in [n for n in gm.graph.nodes if is_graph_item(n) and not n.users]:
        gm.graph.erase_node(node)
    gm.recompile()


@contextlib.contextmanager
def forward_taking_graphs(model: torch.nn.Module, list_name: str, graph_params: tuple[str, ...]) -> Iterator[None]:
    """While inside, the model's class is a subclass of the same name whose forward takes
    forward's graph parameters (`forward(self, g1, g2, x)`) as one list, first, and the others
    as forward takes them: `forward(self, graphs, x)` calls the user's with g1=graphs[0],
    g2=graphs[1].
    Traced so, each graph is an item of that list, as for a forward that takes a list. torch.fx
    reads forward's parameters from its code object, hence a function written for them."""
    if not graph_params:
        yield
        return
    cls = type(model)
    params = [p for p in list(inspect.signature(cls.forward).parameters.values())[1:] if p.name not in graph_params]
    defaults = {f"_default_{p.name}": p.default for p in params if p.default is not p.empty}
    spelled = [f"{p.name}=_default_{p.name}" if f"_default_{p.name}" in defaults else p.name for p in params]
    call = [f"{name}={list_name}[{i}]" for i, name in enumerate(graph_params)] + [f"{p.name}={p.name}" for p in params]
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if positional < len(spelled):  # keyword-only as forward has them
        spelled.insert(positional, "*")
    source = (f"def forward({', '.join(['self', list_name, *spelled])}):\n"
              f"    return _forward(self, {', '.join(call)})\n")
    namespace: dict[str, Any] = {"_forward": cls.forward, **defaults}
    exec(compile(source, f"<{cls.__name__}.forward taking its graphs as a list>", "exec"), namespace)
    taking = type(cls.__name__, (cls,), {"forward": namespace["forward"], "__module__": cls.__module__})
    model.__class__ = taking
    try:
        yield
    finally:
        model.__class__ = cls


def random_graphs(count: int, num_nodes: int, make: Callable[[int], dgl.DGLGraph]) -> list[dgl.DGLGraph]:
    """`count` graphs over the same num_nodes nodes, each drawn by make(seed) with its own seed."""
    graphs = [make(i) for i in range(count)]
    if any(g.num_nodes() != num_nodes for g in graphs):
        raise ValueError("the graphs side by side must have the same nodes")
    return graphs


def first_graph(g: Any) -> Any:
    """The graph whose nodes are forward's rows: the first of several, or g itself."""
    return g[0] if isinstance(g, list) else g


def int_ids(g: Any) -> Any:
    """g with int32 IDs (g.int()), each graph of several."""
    return [one.int() for one in g] if isinstance(g, list) else g.int()


def in_forwards_order(program: Any, named: list[tuple[str, Any]]) -> list[Any]:
    """The values of `named` ((forward's parameter name, value): forward's graphs, then its other
    inputs taken as parameters) in the order of forward's signature where forward takes several
    graphs (forward(self, graph1, feat1, graph2, feat2)); else as they come, the graph first.
    The generated method's parameters (render.py) and the check's arguments (harness.py)."""
    if not program.graph_params:
        return [value for _, value in named]
    order = {name: i for i, (name, _) in enumerate(program.signature)}
    return [value for _, value in sorted(named, key=lambda item: order.get(item[0], len(order)))]

"""Stage 2b, write out: the traced calls of DGL's GraphConv, SAGEConv("mean"), GATConv and
GCN2Conv (gcn2_write_out.py) into the two parts of their forward() (templates/convs.py.j2): the
work on every source row, an op like any other, and the rest on each block, a message-passing op.

Called on a block, such a convolution transforms each of the block's source rows (GraphConv
scales by out-degree and may multiply by its weight, a narrowing SAGEConv applies fc_neigh,
GATConv applies fc and attn_l), and a batch's block holds several times its own node count in
source rows: a layer-wise loop that calls the module repeats that work for every batch that
reads a row. Written out, the source-row work is an op the cut (cut.py) places where it moves
fewest bytes: mostly once per node, at the end of the layer that makes its input, and the batch
loop only aggregates, reading the rows in place where they are on the device already; on each
batch's source rows where storing its input costs less than storing its result (a widening
Linear before a narrowing SAGEConv). GraphConv's out-degree norm reads the
full graph's out-degrees (`g.out_degrees()`, a value of the graph computed once), which also
makes it exact on blocks, whose own out-degrees count only their edges.

The pass works on the fx graph, before lowering: the parts are calls of real functions (this
module execs the template), so that the probe run (attributes.py) and the check (verify.py)
run them, and lower.py knows them by identity (HELPERS)."""

from __future__ import annotations

import inspect
import operator
from functools import partial
from types import SimpleNamespace
from typing import Any, Callable

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.trace.gcn2_write_out import write_out_gcn2_conv
from gnn_codegen.trace.graph_lineage import is_graph_node
from gnn_codegen.render.templating import exec_template

# how the note of a convolution's work per source row ends where it runs once per node (the
# cut may also run it per batch, where render_layer.py says so instead)
ONCE_PER_NODE = ", once per node"
# helper name -> the roles of its arguments after the module: "graph", "src" / "dst" rows,
# "edge" rows, None for a constant. Message-passing helpers take the graph second.
SECTIONS = (
    "sage_conv_source", "sage_conv_mean", "graph_conv_source", "graph_conv_aggregate", "gat_conv_source",
    "gat_conv_aggregate", "gat_conv_attention", "gat_conv_destination", "gat_fold", "gat_folded",
    "attention_term", "attention_weighted_sum", "check_in_degrees", "rel_graph_conv", "gcn2_conv_aggregate",
    # the sum over a block's in-edges that GraphConv's and SAGEConv's parts share
    "in_edge_sum",
    # a value computed once for the same tensors (gat_fold's; the heterogeneous helpers'
    # basis of weights), and its cache, a name the module defines beside it
    "once_for", "once_for_values",
    # a user's module given the whole graph's out-degrees or data on a block (graph_fields.py)
    "with_graph_out_degrees", "with_graph_data",
    # not convolutions: an LSTM's and a GRU's step with its states rows first (rows_first.py)
    "lstm_step", "gru_step",
    # not put into the graph: how render/layer.py writes a Linear over a concatenation of
    # columns without making it (its slices as wide as the parts, read at run time)
    "linear_of_concatenation",
)
MESSAGE_PASSING = {
    "sage_conv_mean": ("graph", "src", "dst", "edge"),
    "graph_conv_aggregate": ("graph", "src", None, "edge"),
    "gat_conv_aggregate": ("graph", "src", "src", "dst", "dst", "edge"),
    "gat_conv_attention": ("graph", "src", "src", "dst", "dst", "edge"),
    "with_graph_out_degrees": ("graph", "src", "src"),
    "rel_graph_conv": ("graph", "src", "dst"),  # etypes= and norm=: rows of edges
    "gcn2_conv_aggregate": ("graph", "src", "dst", "dst"),  # feat_0 and the norm: destination rows
}
# helpers around a user's module, which probe.py proves exact on blocks as it does the module
PROVEN_ON_BLOCKS = frozenset({"with_graph_out_degrees", "with_graph_data"})
# what each section calls, so that a module that uses one gets those too
NEEDS = {
    "gat_conv_source": ("attention_term",),
    "gat_conv_aggregate": ("gat_conv_attention", "attention_term", "attention_weighted_sum", "check_in_degrees"),
    "gat_conv_attention": ("attention_term", "attention_weighted_sum", "check_in_degrees"),
    "gat_conv_destination": ("gat_fold", "gat_folded", "once_for", "once_for_values", "attention_term"),
    "once_for": ("once_for_values",),
    "graph_conv_aggregate": ("check_in_degrees", "in_edge_sum"),
    "sage_conv_mean": ("in_edge_sum",),
    "gcn2_conv_aggregate": ("check_in_degrees", "in_edge_sum"),
}


def _load_helpers() -> dict[str, Callable[..., Any]]:
    names = SimpleNamespace(**{section: f"_{section}" for section in SECTIONS})
    # defined as functions of this module, as torch.fx spells a function it calls by its module
    namespace = exec_template("convs.py.j2", __name__, used=set(SECTIONS), names=names)
    return {section: namespace[f"_{section}"] for section in SECTIONS}


HELPERS = _load_helpers()
globals().update({f"_{section}": fn for section, fn in HELPERS.items()})
_SECTION_OF = {id(fn): section for section, fn in HELPERS.items()}


def helper_name(fn: Any) -> str | None:
    """The template section of a function this pass put into the graph, or None."""
    section = _SECTION_OF.get(id(fn))
    return section if section is not None and HELPERS[section] is fn else None


def helper_parameters(section: str) -> list[str]:
    """The parameter names of a section's function, for calls that name their constants; "" for
    a *values parameter, whose arguments no call can name."""
    parameters = inspect.signature(HELPERS[section]).parameters.values()
    return ["" if p.kind is inspect.Parameter.VAR_POSITIONAL else p.name for p in parameters]


def helper_optional(section: str) -> frozenset[str]:
    """The parameters of a section's function that have a default, which a call passes by name
    (`h_dst=x0` says which rows it is); none for a function of *values, whose arguments go by
    position."""
    parameters = inspect.signature(HELPERS[section]).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return frozenset()
    return frozenset(p.name for p in parameters if p.default is not inspect.Parameter.empty)


def helper_defaults(section: str) -> dict[str, Any]:
    """The parameters of a section's function that default to None, False or True, with their
    default: a call by keyword leaves out what it passes as that default (`out_degrees=None`
    where the norm reads none, `weight_first=False` where the weight comes after the sum)."""
    parameters = inspect.signature(HELPERS[section]).parameters.items()
    return {name: p.default for name, p in parameters if p.default is None or isinstance(p.default, bool)}


def sections_needed(used: set[str]) -> set[str]:
    needed = set(used)
    for section in used:
        needed.update(NEEDS.get(section, ()))
    return needed


def write_out(gm: fx.GraphModule, graph_arg: str, out_degrees_of_graph: frozenset[type] = frozenset()) -> fx.GraphModule:
    """Replace each known convolution call of `gm` by its two parts (in place; returns gm), and
    each call `module(g, feat)` of a class in `out_degrees_of_graph` (a user's module that reads
    its graph's out-degrees and cannot be traced into, pipeline.py) by one that gives it the
    whole graph's out-degrees on a block."""
    modules = dict(gm.named_modules())
    graph = gm.graph
    graphs = {n for n in graph.nodes if is_graph_node(n, graph_arg)}  # forward's, and derived ones
    _mark_looped(graph, graphs)
    for node in list(graph.nodes):
        if node.op != "call_module":
            continue
        module = modules[str(node.target)]
        if type(module) is dglnn.GCN2Conv:  # its own call, (g, feat, feat_0): gcn2_write_out.py
            _replace(graph, node, lambda: write_out_gcn2_conv(graph, node, _module(graph, node), graphs, partial(
                _helper, graph), _named, _source_note(node, "norm by in-degree")))
            continue
        recipe = {dglnn.GraphConv: _graph_conv, dglnn.SAGEConv: _sage_conv, dglnn.GATConv: _gat_conv,
                  dglnn.RelGraphConv: _rel_graph_conv}.get(type(module))
        if type(module) in out_degrees_of_graph:
            recipe = _with_graph_out_degrees
        # RelGraphConv's call has two more arguments: edge types and norm
        call = _Call.of(node, graphs, 4 if recipe is _rel_graph_conv else 3) if recipe else None
        if recipe is None or call is None:
            continue
        _replace(graph, node, lambda: recipe(graph, node, module, call))
    graph.lint()
    gm.recompile()
    return gm


def _replace(graph: fx.Graph, node: fx.Node, make: Callable[[], fx.Node | None]) -> None:
    """node's uses read make()'s result, made before node, and node goes (None: it stays)."""
    before = set(graph.nodes)
    with graph.inserting_before(node):
        result = make()
    if result is None:
        return
    for created in graph.nodes:
        if created not in before:  # messages quote the user's line of the call
            created.stack_trace = node.stack_trace
    node.replace_all_uses_with(result)
    graph.erase_node(node)


class _Call:
    """A convolution call `conv(g, feat)`, `conv(g, (src, dst))`, with an optional edge weight."""

    def __init__(self, graph: fx.Node, src: fx.Node, dst: fx.Node, edge_weight: Any, extra: dict[str, Any]):
        self.graph, self.src, self.dst, self.edge_weight, self.extra = graph, src, dst, edge_weight, extra

    @classmethod
    def of(cls, node: fx.Node, graphs: set[fx.Node], max_args: int = 3) -> "_Call | None":
        if len(node.args) < 2 or node.args[0] not in graphs:
            return None
        graph = node.args[0]
        feat = node.args[1]
        if isinstance(feat, (tuple, list)) and len(feat) == 2 and all(isinstance(f, fx.Node) for f in feat):
            src, dst = feat
        elif isinstance(feat, fx.Node):
            src = dst = feat
        else:
            return None
        kwargs = dict(node.kwargs)
        edge_weight = kwargs.pop("edge_weight", node.args[2] if len(node.args) > 2 else None)
        if len(node.args) > max_args:
            return None
        return cls(graph, src, dst, edge_weight, kwargs)

    def same_rows(self) -> bool:
        """dst is src, or src's destination prefix (`h[:block.num_dst_nodes()]`)."""
        dst = self.dst
        if dst is self.src:
            return True
        if dst.op != "call_function" or dst.target is not operator.getitem or dst.args[0] is not self.src:
            return False
        index = dst.args[1]
        if isinstance(index, tuple) and index:
            index = index[0]
        stop = index.stop if isinstance(index, slice) else None
        return (isinstance(index, slice) and index.start in (None, 0) and isinstance(stop, fx.Node)
                and stop.op == "call_method" and stop.target in ("num_dst_nodes", "number_of_dst_nodes"))


def _helper(graph: fx.Graph, section: str, *args: Any, **kwargs: Any) -> fx.Node:
    return graph.call_function(HELPERS[section], args, kwargs)


def _named(node: fx.Node, name: str, note: tuple[str, str] = ("", "")) -> fx.Node:
    """The name the generated code gives a value this pass made, and why it made it: (the
    convolution's module path, what of its forward the value is), see lower.py."""
    node.meta["gnn_codegen"] = (name, *note)
    return node


def _source_note(conv_call: fx.Node, what: str) -> tuple[str, str]:
    return str(conv_call.target), f"{what} on each source row{ONCE_PER_NODE}"


def _module(graph: fx.Graph, node: fx.Node) -> fx.Node:
    return graph.get_attr(str(node.target))


def _edge_kwargs(call: _Call) -> dict[str, Any]:
    return {} if call.edge_weight is None else {"edge_weight": call.edge_weight}


def _graph_conv(graph: fx.Graph, node: fx.Node, module: torch.nn.Module, call: _Call) -> fx.Node | None:
    if call.extra or not call.same_rows():  # weight= given to forward, or a bipartite pair
        return None
    conv = _module(graph, node)
    # DGL multiplies by W before aggregating where the layer narrows: per source row, once per node
    weight_first = module._in_feats > module._out_feats and module.weight is not None
    out_degrees = None
    if module._norm in ("both", "left"):
        out_degrees = _named(graph.call_method("out_degrees", (call.graph,)), "out_degrees")
    feat = call.src
    if out_degrees is not None or weight_first or _sent_on_alone(call, node):
        # the same words whatever the widths, so that layers alike but for them read alike
        what = "norm by out-degree (and weight, where it narrows)" if out_degrees is not None else \
            "weight, where it narrows,"
        feat = _named(_helper(graph, "graph_conv_source", conv, call.src, out_degrees), "feat",
                      _source_note(node, what))
    # weight_first left to the helpers, which decide it by the rule above from the module at run
    # time: the call reads the same in every layer, whatever its widths (layer_loops.py folds
    # such layers into one loop); check_built pins the widths it was checked with
    return _helper(graph, "graph_conv_aggregate", conv, call.graph, feat, **_edge_kwargs(call))


_LOOPED = "gnn_codegen_looped"  # node.meta: a module call from a line that calls others too
_AFTER_LOOPED = "gnn_codegen_after_looped"  # ... or one reading such a call's rows (_made_by_looped)


def _mark_looped(graph: fx.Graph, graphs: set[fx.Node]) -> None:
    """Marks each call of a module on a graph made from the same lines as such a call of another
    module: a line of forward run once per module, the user's loop over its layers
    (written_as_loop.py)."""
    calls = [n for n in graph.nodes if n.op == "call_module" and n.args and n.args[0] in graphs]
    modules_of: dict[str, set[str]] = {}
    for node in calls:
        if node.stack_trace:
            modules_of.setdefault(node.stack_trace, set()).add(str(node.target))
    for node in calls:
        if len(modules_of.get(node.stack_trace or "", ())) > 1:
            node.meta[_LOOPED] = True
    for node in calls:  # before any call is written out (its meta goes with it)
        if not node.meta.get(_LOOPED) and any(_made_by_looped(a, graphs) for a in node.all_input_nodes
                                              if a not in graphs):
            node.meta[_AFTER_LOOPED] = True


def _sent_on_alone(call: _Call, node: fx.Node) -> bool:
    """The source rows are a layer's result that this call alone reads (and its destination
    rows), and the call is the user's loop's: then the source step is written even where it
    does nothing for this module (GraphConv without out-degree norm, a SAGEConv, neither
    narrowing: it returns the rows it is given), so that every layer of the loop ends with
    its next layer's source step whatever that layer's widths and norm (gcn_norms'
    `norm="right"` between a "left" and a "none", a SAGE stack narrowing in its last layer
    alone: issue 37), and layer_loops.py folds them. It costs nothing at run time (SAGEConv's
    rows, returned beside themselves, are stored once by the runtime), and the cut places it
    where the rows are made (their bytes stored, and less work than per batch). Layers written
    out one by one get none: no loop to fold, and a step that does nothing is noise there."""
    if not (node.meta.get(_LOOPED) or node.meta.get(_AFTER_LOOPED)):
        return False
    src = call.src
    if not isinstance(src, fx.Node) or src.op not in ("call_function", "call_method", "call_module"):
        return False
    readers = {node} if call.dst is src else {node, call.dst}
    dst_alone = call.dst is src or (isinstance(call.dst, fx.Node) and set(call.dst.users) == {node})
    if not (set(src.users) <= readers and dst_alone):
        return False
    # past a Dropout (the identity in eval mode, dropped later): its input read by it alone
    while src.op == "call_module" and isinstance(_submodule(src), (torch.nn.Dropout, torch.nn.Identity)):
        if len(src.args) != 1 or not isinstance(src.args[0], fx.Node) or set(src.args[0].users) != {src}:
            return False
        src = src.args[0]
    return True


def _made_by_looped(value: Any, graphs: set[fx.Node]) -> bool:
    """Whether the rows come from a module call of the user's loop through work on rows alone
    (the loop's last round, `h = F.relu(self.norms[i](layer(g, h)))`, read by a layer written
    after the loop, `self.layers[-1](g, h)`): that round ends with the step as the others do."""
    seen: set[fx.Node] = set()
    todo = [value] if isinstance(value, fx.Node) else []
    while todo and len(seen) < 64:  # a round's own ops, not the whole forward
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.meta.get(_LOOPED):
            return True
        if node.op == "call_module" and node.args and node.args[0] in graphs:
            continue  # another layer's call, not the loop's: what it read is not this round's
        todo.extend(node.all_input_nodes)
    return False


def _submodule(node: fx.Node) -> torch.nn.Module | None:
    owner = node.graph.owning_module
    try:
        return None if owner is None else owner.get_submodule(str(node.target))
    except AttributeError:
        return None


def _with_graph_out_degrees(graph: fx.Graph, node: fx.Node, module: torch.nn.Module, call: _Call) -> fx.Node | None:
    """`module(g, feat)` -> with_graph_out_degrees(module, g, feat, g.out_degrees()): the
    out-degrees a value of the whole graph, as GraphConv's norm above."""
    if call.extra or call.edge_weight is not None or len(node.args) != 2 or not isinstance(node.args[1], fx.Node):
        return None
    out_degrees = _named(graph.call_method("out_degrees", (call.graph,)), "out_degrees")
    return _helper(graph, "with_graph_out_degrees", _module(graph, node), call.graph, call.src, out_degrees)


def _sage_conv(graph: fx.Graph, node: fx.Node, module: torch.nn.Module, call: _Call) -> fx.Node | None:
    if module._aggre_type != "mean" or call.extra:
        return None
    conv = _module(graph, node)
    feat = call.src
    # fc_neigh on each source row where DGL applies it before the mean (lin_before_mp: the
    # layer narrows); the helpers decide it by that rule from the module at run time, so that
    # the step is also written where it does nothing, on a layer's result that this call
    # alone reads: every layer of a stack then ends with the next one's step, whatever its
    # widths (layer_loops.py folds them; the runtime stores a result returned twice once)
    if module._in_src_feats > module._out_feats or _sent_on_alone(call, node):
        feat = _named(_helper(graph, "sage_conv_source", conv, call.src), "feat",
                      _source_note(node, "fc_neigh, where it narrows,"))
    return _helper(graph, "sage_conv_mean", conv, call.graph, feat, call.dst, **_edge_kwargs(call))


def _gat_conv(graph: fx.Graph, node: fx.Node, module: torch.nn.Module, call: _Call) -> fx.Node | None:
    if hasattr(module, "fc_src") or call.extra:  # separate source and destination weights
        return None
    conv = _module(graph, node)
    note = _source_note(node, "fc and attention term")
    source = _named(_helper(graph, "gat_conv_source", conv, call.src), "source", note)
    feat = _named(graph.call_function(operator.getitem, (source, 0)), "feat", note)
    el = _named(graph.call_function(operator.getitem, (source, 1)), "el", note)
    h_dst = call.dst if module.res_fc is not None else None
    if call.same_rows():  # the destination rows projected already: the source rows' own
        return _helper(graph, "gat_conv_aggregate", conv, call.graph, feat, el, feat, h_dst, **_edge_kwargs(call))
    # other destination rows: read by the attention's destination term alone (and the residual,
    # through res_fc), so not projected by fc but folded into er (gat_conv_destination)
    er = _named(_helper(graph, "gat_conv_destination", conv, call.dst), "er",
                (str(node.target), f"attention's destination term on each destination row{ONCE_PER_NODE}"))
    return _helper(graph, "gat_conv_attention", conv, call.graph, feat, el, er, h_dst, **_edge_kwargs(call))


def _rel_graph_conv(graph: fx.Graph, node: fx.Node, module: torch.nn.Module, call: _Call) -> fx.Node | None:
    """`conv(g, feat, etypes, norm)` -> rel_graph_conv(conv, g, feat, feat, etypes, norm): the
    relation weights applied per (destination, relation) sum, not per edge. Edge types given
    as a tensor (forward's), not as a list of counts. presorted=True says how DGL may find its
    segments on forward's graph (the helper sorts a block's itself): kept, so that the check
    gives forward a graph sorted by type (lower.py)."""
    args, kwargs = list(node.args), dict(node.kwargs)
    presorted = kwargs.pop("presorted", False)
    etypes = args[2] if len(args) > 2 else kwargs.pop("etypes", None)
    norm = args[3] if len(args) > 3 else kwargs.pop("norm", None)
    plain = isinstance(call.src, fx.Node) and call.dst is call.src and not kwargs and len(args) <= 4
    if not plain or not isinstance(etypes, fx.Node) or not (norm is None or isinstance(norm, fx.Node)) \
            or not isinstance(presorted, bool):
        return None
    # by keyword, as input_specs.py knows RelGraphConv's arguments (etypes: int64, norm: (E, 1))
    edge_args = {"etypes": etypes} if norm is None else {"etypes": etypes, "norm": norm}
    if presorted is True:  # kept to say so: forward's graph is sorted by type, so is the check's
        edge_args["presorted"] = True
    return _helper(graph, "rel_graph_conv", _module(graph, node), call.graph, call.src, call.src, **edge_args)

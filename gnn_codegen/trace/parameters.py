"""Stage 2, trace, forward's parameters: which is the graph (or the graphs side by side),
the names free for new ones, and the None defaults that forward hands on as inputs."""

from __future__ import annotations

import inspect
import re
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.trace.forward_defaults import none_fed_as_features
from gnn_codegen.trace.several_graphs import side_by_side
from gnn_codegen.errors import GnnCodegenError, SignatureError, TraceFailedError
from gnn_codegen.trace.inline_mp import update_all
from gnn_codegen.trace.kept_graph import graphs_on_the_model
from gnn_codegen.analysis.known_modules import is_message_passing
from gnn_codegen.analysis.node_tables import node_features


# What people call forward's graph (or list of blocks): g, graph, blocks, mfgs, g1, pos_graph,
# subgraphs, block_list, hg, G, and graphs side by side: g_cites, graph_coauthor, ...
_GRAPH_NAME = re.compile(r"(?:pos_|neg_|sub)?(?:g|graph|block|mfg|hg|bg|G)(?:s|\d+|_list)?|(?:g|graph)_[a-z]+")


def _forward_params(model: torch.nn.Module) -> list[inspect.Parameter]:
    params = list(inspect.signature(type(model).forward).parameters.values())[1:]
    if not params and not graphs_on_the_model(model):
        raise TraceFailedError(
            f"{type(model).__name__}.forward takes no arguments; it must take the graph (or a list of "
            "blocks) first, then the node features, e.g. `def forward(self, g, x)`."
        )
    return params


def _graph_parameters(params: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """forward's parameters named like a graph (or list of blocks), or annotated with DGLGraph."""
    return [p for p in params if _GRAPH_NAME.fullmatch(p.name) or "DGLGraph" in str(p.annotation)
            or "DGLBlock" in str(p.annotation)]


def _graph_parameter(model: torch.nn.Module, params: list[inspect.Parameter]) -> inspect.Parameter | None:
    """Forward's graph (or list of blocks): the parameter named like one (or annotated with
    DGLGraph), else the first one; None when forward takes none and the model keeps its graph
    (kept_graph.py). A forward of several graphs is refused with what to change (on a
    heterogeneous graph; trace() takes them as several_graphs.py says)."""
    name = type(model).__name__
    graphs = _graph_parameters(params)
    if len(graphs) > 1:
        raise SignatureError(
            f"{name}.forward takes {len(graphs)} graphs ({', '.join(p.name for p in graphs)}). "
            "gnn-codegen writes inference over one graph's blocks and does not know which graph "
            "the node outputs come from; generate it for a module whose forward takes one graph "
            "(the encoder of a link-prediction model, say) and apply the rest to its output."
        )
    if not graphs and graphs_on_the_model(model):
        return None
    return graphs[0] if graphs else params[0]


def _free_name(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _side_by_side(gm: fx.GraphModule, forced_mp: frozenset[str]) -> int:
    """How many graphs forward's list holds when they are used side by side (several_graphs.py)."""
    modules = dict(gm.named_modules())

    def graph_of(node: fx.Node) -> Any:
        if node.op == "call_module" and is_message_passing(modules[str(node.target)], forced_mp) \
                or node.op == "call_function" and node.target is update_all:
            return node.args[0] if node.args else None
        return None

    return side_by_side(gm.graph, graph_of)


def _feeds_none(model: torch.nn.Module, gm: fx.GraphModule, graph_arg: str, forced_mp: frozenset[str]) -> bool:
    """Whether the program hands a None default of forward's to message passing as features."""
    modules = dict(gm.named_modules())
    none_defaults = [p.name for p in inspect.signature(type(model).forward).parameters.values()
                     if p.default is None and p.name != graph_arg]
    return none_fed_as_features(gm.graph, none_defaults, lambda node: node_features(node, modules, forced_mp))


def _none_defaults_as_inputs(model: torch.nn.Module, graph_arg: str, forced_mp: frozenset[str],
                             retrace: Any) -> tuple[frozenset[str], Any]:
    """forward's parameters with a None default that it hands to message passing as features
    when traced at None (`def forward(self, g, inference=False, feat=None)`, called as
    `model(g, feat=x)`): forward cannot run so, so its callers always give them. Each is tried
    as an input in the order of forward's signature, then all together: the first choice whose
    trace (`retrace(names)`) feeds no None, with that trace; nothing where none does."""
    names = [p.name for p in inspect.signature(type(model).forward).parameters.values()
             if p.default is None and p.name != graph_arg]
    for choice in [*(frozenset({n}) for n in names), *([frozenset(names)] if len(names) > 1 else [])]:
        try:
            traced = retrace(choice)
        except GnnCodegenError:  # a speculative trace: any refusal means no
            continue
        if not _feeds_none(model, traced[0], graph_arg, forced_mp):
            return choice, traced
    return frozenset(), None

"""Stage 2, trace: the model instance into a torch.fx GraphModule whose message-passing modules
are leaves and whose graph argument is one placeholder, whatever the forward's style."""

from __future__ import annotations

import contextlib
import inspect
import keyword
import linecache
import operator
import os
import re
import sys
import warnings
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dgl.nn as dglnn
from dgl.base import DGLWarning
import torch
import torch.fx as fx

from gnn_codegen.type_offsets import TypeOffsets, split_outputs
from gnn_codegen.block_count import check_blocks_option, check_depth_is_the_models
from gnn_codegen.derived_graphs import traced_derived_graphs
from gnn_codegen.graph_lineage import is_graph_node
from gnn_codegen.edge_weight_norm import is_edge_weight_norm, traced_edge_weight_norms
from gnn_codegen.eval_flags import defaults_as_traced, eval_flags
from gnn_codegen.plain_containers import check_modes, is_unregistered_module_error, unregistered_module_message
from gnn_codegen.forward_defaults import (
    callable_defaults, callables_bound, none_fed_as_features, required_first, same_program_but,
)
from gnn_codegen.several_graphs import count_fixed_by_forward, drop_unused_items, forward_taking_graphs, side_by_side
from gnn_codegen.sized_tensors import traced_factories
from gnn_codegen.traced_len import traced_len
from gnn_codegen.shape_keeping import through_shape_keeping
from gnn_codegen.static_decisions import MetadataProxy, concrete, decide, graph_data_named
from gnn_codegen.static_shapes import decided
from gnn_codegen.errors import (
    DataDependentControlFlowError, FeatDimsError, GnnCodegenError, GraphUseError, SignatureError, TraceFailedError,
    UnsupportedOperationError,
)
from gnn_codegen.graph_data import graph_data_read, lift_graph_data
from gnn_codegen.graph_proxy import BlockListProxy, BlockProxy
from gnn_codegen.inline_mp import update_all
from gnn_codegen.input_specs import declared_width
from gnn_codegen.ir import StaticDecision
from gnn_codegen.kept_graph import forward_taking_the_graph, graphs_on_the_model, kept_graph
from gnn_codegen.known_modules import is_message_passing
from gnn_codegen.node_counts import lift_node_counts
from gnn_codegen.node_tables import lift_node_tables, node_features
from gnn_codegen.rows_first import lstm_states_rows_first, stacks_reduced_along_rows
from gnn_codegen.rowwise import is_rowwise_module

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

# What people call forward's graph (or list of blocks): g, graph, blocks, mfgs, g1, pos_graph,
# subgraphs, block_list, hg, G, and graphs side by side: g_cites, graph_coauthor, ...
_GRAPH_NAME = re.compile(r"(?:pos_|neg_|sub)?(?:g|graph|block|mfg|hg|bg|G)(?:s|\d+|_list)?|(?:g|graph)_[a-z]+")


@dataclass(frozen=True)
class Traced:
    model: torch.nn.Module  # the user's instance (its containers keep their types, unlike fx's copy)
    graph_module: fx.GraphModule
    graph_arg: str  # name of forward's graph (or list-of-blocks) parameter
    inputs: tuple[str, ...]  # forward's tensor parameters (all but the graph), in order
    blocks_style: bool  # forward indexes / iterates / measures its graph argument
    num_blocks: int  # how many blocks a blocks-style forward consumes
    # forward's graph and inputs in its own order, each with how a call passes it: "positional",
    # or "keyword" (a keyword-only parameter)
    signature: tuple[tuple[str, str], ...] = ()
    # where the model keeps the graph forward reads (`g` for self.g, `encoder.g`), when forward
    # takes none: graph_arg is then a parameter gnn-codegen added (kept_graph.py)
    kept_graph: tuple[str, ...] = ()
    # forward's inputs that it reads from the graph (`g.ndata["feat"]`): (input, "ndata" or
    # "edata", key), in the order of inputs (graph_data.py)
    graph_data: tuple[tuple[str, str, str], ...] = ()
    # forward's inputs that are tables of the model read as node features (`self.emb.weight`):
    # (input, attribute path), in the order of inputs (node_tables.py)
    tables: tuple[tuple[str, str], ...] = ()
    # forward's tests of the data its graph carries (`"w" in g.edata`), as decided while tracing:
    # ("ndata" or "edata", key, whether the graph has it), graph_proxy.py
    decisions: tuple[tuple[str, str, bool], ...] = ()
    # the graphs (fx node names) on which DGL's test for nodes without in-edges, in a module
    # traced into, was decided as none (_Tracer.to_bool)
    in_degree_checks: tuple[str, ...] = ()
    # widths the modules traced into declare for the inputs they take directly (TAGConv's
    # in_feats for `layer(g, features)`): (input, width), for inputs no module consumes otherwise
    declared_widths: tuple[tuple[str, int], ...] = ()
    # widths they declare for what forward computes from its inputs (`layer(g, x * 0.5)`): to
    # try for an input whose width nothing else tells (attributes.py)
    candidate_widths: tuple[int, ...] = ()
    # forward's training flags, passed as eval needs them (`training=False`): EVAL_FLAGS
    flags: tuple[tuple[str, bool], ...] = ()
    # forward converts its blocks (`dgl.block_to_graph(block)`, traced as the block itself:
    # derived_graphs.SAME_GRAPH), which a graph is not: its full-graph forward takes real blocks
    converts_blocks: bool = False
    # forward first makes its heterograph one graph of one type (dgl.to_homogeneous,
    # dgl.node_type_subgraph): the function's name and its arguments by keyword (homogenized.py);
    # None where it does not
    homogenized: tuple[str, tuple[tuple[str, Any], ...]] | None = None
    # what forward does by node type around that conversion (type_offsets.py)
    type_offsets: TypeOffsets | None = None
    # forward's tests of what its values are (`if h.shape[-1] == self.out_dim:`), decided while
    # tracing, with what each assumes of the inputs (static_decisions.py)
    static_decisions: tuple[StaticDecision, ...] = ()
    # forward's graph argument is a list of this many graphs used side by side over the same
    # nodes (several_graphs.py), each item a `graph_item` node of the program; 0: one graph
    # (or a list of its blocks)
    graphs: int = 0
    # forward's graph parameters when it takes several (`forward(self, g1, g2, x)`): the items of
    # graph_arg (a name gnn-codegen chose), in order
    graph_params: tuple[str, ...] = ()
    # forward's parameters with a None default that stand for a table it reads otherwise
    # (`if h is None: h = self.emb.weight`): (parameter, the table's input), forward_defaults.py
    optional: tuple[tuple[str, str], ...] = ()


# elementwise functions and methods of one tensor that keep its shape (and so its width), and
# modules that do
class _Tracer(fx.Tracer):
    def __init__(self, graph_arg: str, forced_leaves: frozenset[str], forced_mp: frozenset[str],
                 through: frozenset[type] = frozenset(), widths: dict[str, tuple[int, ...]] | None = None):
        super().__init__()
        self.graph_arg = graph_arg
        self.widths = widths or {}  # --feat-dims, for the examples static decisions are taken on
        self.forced_leaves = forced_leaves
        self.forced_mp = forced_mp
        self.through = through

    def create_node(self, *args: Any, **kwargs: Any) -> fx.Node:
        """Record where in the user's code each node was created, in the format of fx's
        record_stack_traces, without it: symbolizing fx's tracebacks imports torch._dynamo,
        which doubled the CLI's run time."""
        node = super().create_node(*args, **kwargs)
        frames = []
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith(_TORCH_DIR):
                code = linecache.getline(filename, frame.f_lineno).strip()
                frames.append(f'  File "{filename}", line {frame.f_lineno}, in {frame.f_code.co_name}\n    {code}')
            frame = frame.f_back
        node.stack_trace = "\n".join(reversed(frames))
        return node

    def to_bool(self, obj: fx.Proxy) -> bool:
        """`if (graph.in_degrees() == 0).any(): raise DGLError(...)`, DGL's check in the modules
        traced into: decided as no such nodes, and checked on the whole graph when inference is
        called (render.py), where forward would raise."""
        graph = _zero_in_degree_test(obj.node, self.graph_arg)
        if graph is not None:
            self.zero_in_degree_checks = [*getattr(self, "zero_in_degree_checks", []), graph]
            return False
        known = decided(obj.node, self.root)  # ChebConv's `if lambda_max.dim() == 1:`
        if known is not None:
            return known
        taken = decide(obj.node, self, self.graph_arg, self.widths)  # `if h.shape[-1] == self.out_dim:`
        if taken is not None:
            return taken
        return super().to_bool(obj)

    def iter(self, obj: fx.Proxy) -> Any:
        """`for d in h.shape:` (fx itself follows `n, d = h.shape`): item by item, as many as
        len() works out (MetadataProxy)."""
        try:
            return iter([obj[i] for i in range(len(obj))])
        except RuntimeError:  # no shape: fx's refusal
            return super().iter(obj)

    def concrete(self, node: fx.Node, kind: type) -> Any:
        """`len(h.shape)`, `int(h.shape[1])` (MetadataProxy): worked out like a test."""
        return concrete(node, self, self.graph_arg, self.widths, kind)

    def call_module(self, m: torch.nn.Module, forward: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if type(m) in self.through:  # its inside is traced: remember the width it declares
            features = args[1] if len(args) > 1 else None
            width = declared_width(m)
            if isinstance(features, fx.Proxy) and width:
                # forward's parameter, or its graph's data (`g.ndata["x"]`, an input once lifted),
                # or either through activations that keep its shape (`layer(g, F.relu(x))`)
                node = through_shape_keeping(features.node, self.root)
                read = graph_data_read(node, self.graph_arg)
                which = node.target if node.op == "placeholder" else read
                if which is not None:
                    self.declared_widths = {**getattr(self, "declared_widths", {}), which: width}
                else:
                    self.candidate_widths = (*getattr(self, "candidate_widths", ()), width)
        if is_edge_weight_norm(m):  # also one DGL's modules make in forward, not the model's
            return forward(*args, **kwargs)  # records one call (edge_weight_norm.py)
        return super().call_module(m, forward, args, kwargs)

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if type(m) in self.through:  # a user's message-passing module, traced into (pipeline.py)
            return False
        if type(m).__name__ in self.forced_leaves or is_message_passing(m, self.forced_mp):
            return True
        if type(m) is torch.nn.Sequential and len(m) and is_rowwise_module(m):
            return True  # keep `self.head(h)` as the user wrote it
        if type(m) in (dglnn.JumpingKnowledge, dglnn.TypedLinear):  # row-wise, one call (rowwise.py)
            return True
        return super().is_leaf_module(m, module_qualified_name)



@contextlib.contextmanager
def _attributes_kept(model: torch.nn.Module) -> Any:
    """Plain attributes forward sets while traced (SGConv(cached=True) keeps its propagated
    features in self._cached_h) are restored after: no tracing proxy is left on the model."""
    containers = ("_modules", "_parameters", "_buffers")
    saved = [(module, {k: v for k, v in vars(module).items() if k not in containers}) for module in model.modules()]
    try:
        yield
    finally:
        for module, attributes in saved:
            for key in [k for k in vars(module) if k not in attributes and k not in containers]:
                del vars(module)[key]
            vars(module).update(attributes)


def _zero_in_degree_test(node: fx.Node, graph_arg: str) -> str | None:
    """The graph's node name when `node` is `(graph.in_degrees() == 0).any()`, else None."""
    if not (node.op == "call_method" and node.target == "any" and len(node.args) == 1 and not node.kwargs):
        return None
    test = node.args[0]
    if not (isinstance(test, fx.Node) and test.op == "call_function" and test.target is operator.eq
            and len(test.args) == 2 and test.args[1] == 0 and isinstance(test.args[0], fx.Node)):
        return None
    degrees = test.args[0]
    if not (degrees.op == "call_method" and degrees.target == "in_degrees" and len(degrees.args) == 1
            and is_graph_node(degrees.args[0], graph_arg)):
        return None
    return degrees.args[0].name


def _forward_params(model: torch.nn.Module) -> list[inspect.Parameter]:
    params = list(inspect.signature(type(model).forward).parameters.values())[1:]
    if not params and not graphs_on_the_model(model):
        raise TraceFailedError(
            f"{type(model).__name__}.forward takes no arguments; it must take the graph (or a list of "
            "blocks) first, then the node features, e.g. `def forward(self, g, x)`."
        )
    return params


def _count_mp_modules(model: torch.nn.Module, forced_mp: frozenset[str]) -> int:
    count = 0
    for _, m in model.named_modules():
        if is_message_passing(m, forced_mp):
            count += 1
    return max(count, 1)


def _user_location(tb: Any, path: Path) -> str | None:
    for frame in reversed(traceback.extract_tb(tb)):
        if Path(frame.filename).resolve() == path.resolve():
            return f"{path}:{frame.lineno} (`{(frame.line or '').strip()}`)"
    return None


def _mp_depth(gm: fx.GraphModule, forced_mp: frozenset[str]) -> int:
    depth: dict[str, int] = {}
    modules = dict(gm.named_modules())
    deepest = 0
    for node in gm.graph.nodes:
        d = max((depth[n.name] for n in node.all_input_nodes), default=0)
        if node.op == "call_module" and is_message_passing(modules[str(node.target)], forced_mp):
            d += 1
        elif node.op == "call_function" and node.target is update_all:  # written inline
            d += 1
        depth[node.name] = d
        deepest = max(deepest, d)
    return deepest


# how many more blocks than message-passing modules a blocks-style forward may consume
_MORE_BLOCKS = 8


def _trace_once(model: torch.nn.Module, graph_arg: str, num_blocks: int, path: Path,
                leaves: frozenset[str], forced_mp: frozenset[str],
                kept: tuple[str, ...] = (), through: frozenset[type] = frozenset(),
                declared: frozenset[str] = frozenset(), widths: dict[str, tuple[int, ...]] | None = None,
                as_inputs: frozenset[str] = frozenset(), distinct: bool = False, graph_params: tuple[str, ...] = (),
                ) -> tuple[fx.GraphModule, bool, tuple[tuple[tuple[str, str, bool], ...], tuple[str, ...]]]:
    """as_inputs: None defaults traced as inputs (forward_defaults.py); distinct: each item of a
    list forward takes is a graph of its own; graph_params: forward's several graph parameters,
    traced as graph_arg's items (several_graphs.py)."""
    proxy_cls = type("_Blocks", (BlockListProxy,), {"num_blocks": num_blocks, "used_as_list": False,
                                                    "distinct_items": distinct})
    tracer = _Tracer(graph_arg, leaves, forced_mp, through, widths)
    tracer.declared_data = declared  # type: ignore[attr-defined]  # graph data --feat-dims names
    tracer.proxy = lambda node: (  # type: ignore[method-assign]
        proxy_cls(node, tracer) if node.op == "placeholder" and node.target == graph_arg
        else MetadataProxy(node, tracer)
    )
    name = type(model).__name__
    # Parameters with defaults (`edge_weight=None`, `return_attention=False`) are traced at their
    # default value, like Python would call forward(g, x); a training flag at eval's (EVAL_FLAGS).
    # A callable default is applied as Python applies it, and a None default that is forward's
    # features (`as_inputs`) is an input (forward_defaults.py).
    applied = callable_defaults(model)
    user_globals = type(model).forward.__globals__  # the user's, before forward is wrapped
    defaults = {
        p.name: p.default
        for p in inspect.signature(type(model).forward).parameters.values()
        if p.default is not inspect.Parameter.empty and p.name not in applied and p.name not in as_inputs
    }
    defaults.update(eval_flags(model))
    try:
        with warnings.catch_warnings(), forward_taking_graphs(model, graph_arg, graph_params), \
                callables_bound(model, applied), \
                forward_taking_the_graph(model, graph_arg, kept) if kept else contextlib.nullcontext(), \
                traced_derived_graphs(tracer, user_globals, BlockProxy), \
                traced_factories(tracer, user_globals), \
                traced_len(_user_globals(model)), \
                traced_edge_weight_norms(tracer), \
                _attributes_kept(model):
            # what DGL warns about a graph proxy (ChebConv's missing lambda_max) is no news to the
            # user, once per block count tried
            warnings.simplefilter("ignore", DGLWarning)
            graph = tracer.trace(model, concrete_args=defaults or None)
            defaults_as_traced(graph, defaults)
            required_first(graph)
    except FeatDimsError:
        raise  # a test of an input's width before anything tells it: names its line already
    except (GraphUseError, UnsupportedOperationError) as exc:
        where = _user_location(exc.__traceback__, path) or f"{name}.forward"
        raise type(exc)(f"{where}: {exc}") from None
    except fx.proxy.TraceError as exc:
        where = _user_location(exc.__traceback__, path) or f"{name}.forward"
        if "control flow" in str(exc) and not _raised_in_user_file(exc.__traceback__, path):
            raise TraceFailedError(
                f"{where}: this line calls library code that inspects the graph or a tensor while "
                "tracing (graph changes such as dgl.add_self_loop(g) do this). forward may only "
                "call message-passing modules on the graph and row-wise tensor operations: change "
                "the graph before calling the model (and pass the changed graph to `inference`)."
            ) from None
        if "control flow" in str(exc):
            raise DataDependentControlFlowError(
                f"{where}: forward branches or loops on a tensor's value, which depends on the data "
                "and so cannot become one fixed layer-wise loop. Compute the condition outside the "
                "model (a constructor argument or a flag), or mark the module that holds it as a leaf "
                "with --leaf NAME if it only mixes features of the same node."
            ) from None
        raise TraceFailedError(f"{where}: torch.fx could not trace forward: {exc}.") from None
    except Exception as exc:
        where = _user_location(exc.__traceback__, path) or f"{name}.forward"
        if is_unregistered_module_error(exc):
            raise TraceFailedError(f"{where}: {unregistered_module_message()}") from None
        known = _known_trace_failure(exc)
        if known:
            raise TraceFailedError(f"{where}: {known}") from None
        raise TraceFailedError(
            f"{where}: tracing forward with torch.fx failed with {type(exc).__name__}: {exc}. "
            "forward may call message-passing modules on the graph, read the graph's data and "
            "degrees, and compute on features; changing the graph (dgl.add_self_loop(g) in "
            "forward) and Python code that inspects tensor values cannot be turned into "
            "layer-wise inference. Message passing that gnn-codegen does not follow inline works "
            "when moved into its own nn.Module whose forward takes (graph, features)."
        ) from None
    decisions = (
        tuple((view, key, present) for (view, key), present in getattr(tracer, "graph_decisions", {}).items()),
        tuple(dict.fromkeys(getattr(tracer, "zero_in_degree_checks", []))),
        tuple(getattr(tracer, "declared_widths", {}).items()),
        tuple(dict.fromkeys(getattr(tracer, "candidate_widths", ()))),
        getattr(tracer, "converts_blocks", False),
        getattr(tracer, "homogenized", None),
        proxy_cls.measures,  # where forward measured its blocks (block_count.py)
        tuple(getattr(tracer, "static_decisions", ())),
        getattr(tracer, "type_offsets", None),
    )
    # tensors fx made from numbers while tracing (ChebConv's th.Tensor([2.0])): kept by the
    # GraphModule, not by the model (lower.py writes them out as numbers)
    constants = {qualname: t for t, qualname in tracer.tensor_attrs.items()
                 if qualname.startswith("_tensor_constant") and not hasattr(model, qualname)}
    try:
        for qualname, t in constants.items():
            setattr(model, qualname, t)
        return fx.GraphModule(model, graph, name), proxy_cls.used_as_list, decisions
    except SyntaxError:
        bad = [n.target for n in graph.nodes if n.op in ("call_module", "get_attr")
               and any(keyword.iskeyword(part) for part in str(n.target).split("."))]
        raise TraceFailedError(
            f"{name}: submodule or attribute name {bad[0] if bad else '?'} contains a Python keyword "
            "(e.g. a ModuleDict key 'in' or 'class'), which generated code cannot spell as an "
            "attribute. Rename the key."
        ) from None
    finally:
        for qualname in constants:
            delattr(model, qualname)


def _user_globals(model: torch.nn.Module) -> list[dict[str, Any]]:
    """The globals of forward's file and of the files of the user's modules it may call."""
    found = [type(model).forward.__globals__]
    for m in model.modules():
        namespace = getattr(type(m).forward, "__globals__", None)
        if namespace is not None and not type(m).__module__.startswith(("torch.", "dgl.")) \
                and all(namespace is not f for f in found):
            found.append(namespace)
    return found


def _raised_in_user_file(tb: Any, path: Path) -> bool:
    frames = traceback.extract_tb(tb)
    user = [i for i, f in enumerate(frames) if Path(f.filename).resolve() == path.resolve()]
    # fx's own frames (and the tracer's to_bool here) sit on top of the user's when the user's
    # code branches on a proxy
    return bool(user) and all("torch/fx" in f.filename or Path(f.filename).resolve() == Path(__file__).resolve()
                              for f in frames[user[-1] + 1:])


def _known_trace_failure(exc: BaseException) -> str:
    """What the user wrote, for torch.fx errors whose cause is a construct we can name."""
    text = str(exc)
    if "does not support item assignment" in text:
        return (
            "forward assigns into part of a tensor (`h[...] = ...`), which torch.fx cannot trace. "
            "Write it as a new tensor instead (torch.where, torch.cat, or h = h.index_put(...))."
        )
    if "argument of type" in text and ("DGLGraph" in text or "DGLHeteroGraph" in text):
        return (
            "forward passes a graph that is not its graph argument (a graph kept on the model, or "
            "one it makes) to a module or function; gnn-codegen follows only the graph forward takes."
        )
    return ""


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


def trace(model: torch.nn.Module, path: Path, leaves: frozenset[str] = frozenset(),
          forced_mp: frozenset[str] = frozenset(), through: frozenset[type] = frozenset(),
          declared: frozenset[str] = frozenset(), blocks: int | None = None,
          widths: dict[str, tuple[int, ...]] | None = None) -> Traced:
    """`through`: message-passing modules of the user's to trace into (their update_all calls
    become ops of their own) instead of keeping them as leaves. `blocks`: how many blocks a
    blocks-style forward is called with (--blocks), instead of the count its layers fix."""
    model.eval()  # `self.training` and Dropout must read as inference while tracing
    check_modes(model)  # modules in plain lists, which model.eval() does not reach (plain_containers.py)
    params = _forward_params(model)
    variadic = [p.name for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if variadic:
        raise TraceFailedError(
            f"{type(model).__name__}.forward takes *{variadic[0]}; name every input instead "
            "(e.g. `def forward(self, g, x)`) so the generated inference can take the same ones."
        )
    graph_params = tuple(p.name for p in _graph_parameters(params))
    if len(graph_params) < 2:
        graph_params = ()
    graph_param = None if graph_params else _graph_parameter(model, params)
    kept: tuple[str, ...] = ()
    if graph_params:  # forward(self, g1, g2, x): traced as a list of them (several_graphs.py)
        graph_arg = _free_name("graphs", {p.name for p in params})
    elif graph_param is None:  # forward(self, features) on self.g
        graph_arg, kept = kept_graph(model, {p.name for p in params})
    else:
        graph_arg = graph_param.name
    taken = [p for p in params if p.name in (graph_arg, *graph_params) or p.default is inspect.Parameter.empty]
    inputs = tuple(p.name for p in taken if p.name not in (graph_arg, *graph_params))
    signature = tuple((p.name, "keyword" if p.kind == p.KEYWORD_ONLY else "positional") for p in taken)

    def attempt(count: int, as_inputs: frozenset[str] = frozenset(), distinct: bool = False) -> Any:
        return _trace_once(model, graph_arg, count, path, leaves, forced_mp, kept, through, declared, widths,
                           as_inputs, distinct or bool(graph_params), graph_params)

    num_blocks = blocks or len(graph_params) or _count_mp_modules(model, forced_mp)
    try:
        gm, blocks_style, decisions = attempt(num_blocks)
    except TraceFailedError as first_error:
        if blocks is not None or graph_params:
            raise
        # A blocks-style forward may consume fewer blocks than there are message-passing modules
        # (one is unused, or two share a depth), or more (message passing written inline, or
        # several rounds in a module traced into): try the other counts before giving up, the
        # most first. A forward that indexes its layers by block (`for i in range(len(mfgs)):
        # self.convs[i]...`) traces with any count up to its layers', one that zips them with
        # its blocks with any count from its layers' on: the most that reaches as deep as it
        # has blocks is the model's own.
        for other in reversed(range(1, num_blocks + _MORE_BLOCKS + 1)):
            try:
                gm, blocks_style, decisions = attempt(other)
            except TraceFailedError:
                continue
            if _mp_depth(gm, forced_mp) == other:
                num_blocks = other
                break
        else:  # graphs side by side, as many as forward indexes (several_graphs.py)
            found = count_fixed_by_forward(lambda count: attempt(count, distinct=True),
                                           lambda traced: _side_by_side(traced[0], forced_mp), num_blocks + _MORE_BLOCKS)
            if found is None:
                raise first_error
            num_blocks, (gm, blocks_style, decisions) = found
    # graphs side by side: forward's graph parameters, or the items of its list that are not a
    # chain of blocks (traced once more with each item a graph of its own: the program tells)
    graphs = len(graph_params)
    if blocks_style and num_blocks > 1 and not graphs:
        try:
            distinct = attempt(num_blocks, distinct=True)
        except GnnCodegenError:  # a speculative trace: any refusal means no
            distinct = None
        graphs = _side_by_side(distinct[0], forced_mp) if distinct is not None else 0
        if graphs:
            gm, _, decisions = distinct
    if graphs:
        blocks_style = False
        drop_unused_items(gm)
    depth = _mp_depth(gm, forced_mp)
    check_blocks_option(blocks, blocks_style, graph_arg)
    if blocks is None and blocks_style and depth != num_blocks and depth > 0:
        # Two convolutions at one depth (or one conv called per block): the forward consumes
        # `depth` blocks, not one per module, so trace again with that many.
        num_blocks = depth
        gm, blocks_style, decisions = attempt(num_blocks)
    if blocks is None and blocks_style and depth > 0:

        def trace_with(count: int) -> tuple[int, tuple[tuple[str, int], ...]] | None:
            try:
                more, _, more_decisions = attempt(count)
            except GnnCodegenError:
                return None
            return _mp_depth(more, forced_mp), more_decisions[6]

        check_depth_is_the_models(trace_with, num_blocks, _mp_depth(gm, forced_mp), path, graph_arg)
    fed: frozenset[str] = frozenset()
    if _feeds_none(model, gm, graph_arg, forced_mp):  # `def forward(self, g, inference=False, feat=None)`
        fed, retraced = _none_defaults_as_inputs(model, graph_arg, forced_mp,
                                                 lambda names: attempt(num_blocks, names, distinct=bool(graphs)))
        if fed:
            gm, blocks_style, decisions = retraced
            blocks_style = blocks_style and not graphs
            if graphs:
                drop_unused_items(gm)
            # in forward's order, taken by keyword: as forward's callers give them
            fed_in_order = tuple(p.name for p in params if p.name in fed)
            inputs += fed_in_order
            signature += tuple((name, "keyword") for name in fed_in_order)
    taken = {p.name for p in params} | {graph_arg}

    def lifted_from(gm: fx.GraphModule) -> tuple[Any, Any, Any]:
        stacks_reduced_along_rows(gm)
        lstm_states_rows_first(gm)
        lifted, graph_data = lift_graph_data(gm, graph_arg, taken, blocks=blocks_style)
        if not blocks_style:  # torch.ones(g.num_nodes(), 1); a block's count is its own
            made, made_data = lift_node_counts(gm, graph_arg, taken | set(lifted))
            lifted, graph_data = lifted + made, graph_data + made_data
        return lifted, graph_data, lift_node_tables(gm, model, taken | set(lifted), forced_mp)

    type_offsets = split_outputs(gm, graph_arg, decisions[8], decisions[5])  # h[g.ndata[dgl.NTYPE] == k]
    lifted, graph_data, tables = lifted_from(gm)
    inputs += lifted + tuple(name for name, _ in tables)
    # `forward(self, g, h=None)` with `if h is None: h = self.emb.weight`: inference takes h=None
    # too, where forward given h is forward at its default with h read for the table
    optional = []
    for p in params:
        if p.default is not None or p.name in inputs or p.name == graph_arg or not tables:
            continue
        try:
            given, _, _ = attempt(num_blocks, fed | {p.name}, distinct=bool(graphs))
        except GnnCodegenError:  # a speculative trace: any refusal means no
            continue
        lifted_from(given)
        optional += [(p.name, table) for table, _ in tables
                     if same_program_but(gm.graph, given.graph, table, p.name)][:1]
    # widths declared for graph data, by the inputs that now stand for it
    lifted_as = {(view, key): name for name, view, key in graph_data}
    declared_widths = tuple((lifted_as.get(which, which), width) for which, width in decisions[2]
                            if lifted_as.get(which, which) in inputs)
    return Traced(model, gm, graph_arg, inputs, blocks_style, num_blocks if blocks_style else 1, signature,
                  kept, graph_data, tables, *decisions[:2], declared_widths, decisions[3],
                  flags=tuple(eval_flags(model).items()), converts_blocks=decisions[4], graphs=graphs,
                  graph_params=graph_params, optional=tuple(optional), homogenized=decisions[5],
                  static_decisions=graph_data_named(decisions[7], lifted_as), type_offsets=type_offsets)

"""Stage 2, trace: the model instance into a torch.fx GraphModule whose message-passing modules
are leaves and whose graph argument is one placeholder, whatever the forward's style."""

from __future__ import annotations

import contextlib
import inspect
import keyword
import warnings
from pathlib import Path
from typing import Any

from dgl.base import DGLWarning
import torch
import torch.fx as fx

from gnn_codegen.trace.type_offsets import split_outputs
from gnn_codegen.trace.block_count import check_blocks_option, check_depth_is_the_models
from gnn_codegen.trace.derived_graphs import traced_derived_graphs
from gnn_codegen.trace.edge_weight_norm import traced_edge_weight_norms
from gnn_codegen.trace.eval_flags import defaults_as_traced, eval_flags
from gnn_codegen.trace.plain_containers import (
    check_modes,
    is_unregistered_module_error,
    unregistered_module_message,
)
from gnn_codegen.trace.forward_defaults import (
    callable_defaults,
    callables_bound,
    required_first,
    same_program_but,
)
from gnn_codegen.trace.several_graphs import count_fixed_by_forward, drop_unused_items, forward_taking_graphs
from gnn_codegen.analysis.sized_tensors import traced_factories
from gnn_codegen.trace.traced_len import traced_len
from gnn_codegen.trace.static_decisions import MetadataProxy, graph_data_named
from gnn_codegen.errors import (
    DataDependentControlFlowError,
    FeatDimsError,
    GnnCodegenError,
    GraphUseError,
    TraceFailedError,
    UnsupportedOperationError,
)
from gnn_codegen.trace.graph_data import lift_graph_data
from gnn_codegen.trace.graph_proxy import BlockListProxy, BlockProxy
from gnn_codegen.trace.kept_graph import forward_taking_the_graph, kept_graph
from gnn_codegen.trace.node_counts import lift_node_counts
from gnn_codegen.analysis.node_tables import lift_node_tables
from gnn_codegen.trace.rows_first import lstm_states_rows_first, stacks_reduced_along_rows
from gnn_codegen.trace.fx_tracer import (
    _Tracer,
    _attributes_kept,
    _count_mp_modules,
    _mp_depth,
    _raised_in_user_file,
    _user_globals,
    _user_location,
)
from gnn_codegen.trace.parameters import (
    _feeds_none,
    _forward_params,
    _free_name,
    _graph_parameter,
    _graph_parameters,
    _none_defaults_as_inputs,
    _side_by_side,
)
from gnn_codegen.trace.traced import Traced

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

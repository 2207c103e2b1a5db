"""The check of a generated module for a heterogeneous model: its `inference` against the
model's full-graph forward on seeded random heterographs of the schema (a tenth of each
relation's destinations without its edges; once more with one relation left without any
edge), with the weights perturbed on a copy, for batch sizes that do and do not divide the
node counts, and once with the model on a simulated GPU and the graph and features on the
host (simulated_device.py)."""

from __future__ import annotations

import contextlib
import copy
import tempfile
import time
import traceback
from typing import TYPE_CHECKING, Any

import dgl
import torch
import torch.fx as fx

from gnn_codegen.errors import CheckFailedError, FeatDimsError, UnsupportedModuleError, first_line
from gnn_codegen.verify.harness import allclose, max_difference, some_nodes
from gnn_codegen.cut.hetero import result_type
from gnn_codegen.load.hetero_schema import Schema, random_heterograph
from gnn_codegen.trace.hetero import calls_own_layer
from gnn_codegen.trace.hetero_tracer import hetero_conv
from gnn_codegen.analysis.input_specs import GUESSED_WIDTH, declared_width, model_float_dtype
from gnn_codegen.trace.kept_graph import graph_set_on
from gnn_codegen.lower.spelling import locations
from gnn_codegen.analysis.node_tables import table_of, tables_set_on
from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.verify.simulated_device import SimulatedDevice
from gnn_codegen.verify.check import (
    ATOL,
    RTOL,
    SIMULATED,
    SIMULATED_WHOLE,
    STORAGE,
    BatchResult,
    CheckResult,
    cloned,
    instantiate,
    REPORT,
)

if TYPE_CHECKING:
    from gnn_codegen.generated import Generated

VERIFY_BATCH_SIZES = (47, 60)
SUBSET_SIZE = 30
# a layer whose relations' source rows were computed once per node reads them in place
# (_HeteroBatches._in_place), on a GPU where they fit in its memory; the other layers gather them
SUBSET = f"in place, for {SUBSET_SIZE} of the nodes (nodes=), on g.int()"
_EMPTY = "in place, one relation without edges"
# batch_size="auto" with a budget that makes several batches of each type at the check's sizes
AUTO_MEMORY = 2**14
AUTO = f"in place, the most that fit in max_memory={AUTO_MEMORY}"


def node_counts(generated: Generated, num_nodes: int) -> dict[str, int]:
    """Nodes per type: as many as the model's tables of the type have rows (an embedding per
    type), at most num_nodes (the check cuts longer tables: cut_tables), else about num_nodes
    over the types, a different count for each."""
    schema: Schema = generated.schema
    counts = {ntype: min(rows, num_nodes) for ntype, (_, rows) in _tables(generated).items()}
    share = max(8, num_nodes // max(1, len(schema.ntypes)))
    for i, ntype in enumerate(schema.ntypes):
        counts.setdefault(ntype, share + 7 * i)
    return counts


def _tables(generated: Generated) -> dict[str, tuple[str, int]]:
    """Node type -> (the attribute path of the model's table read as its rows, its rows)."""
    tables = {}
    for node, ntype in generated.hetero.tables.items():
        while node.op != "get_attr" and node.args and isinstance(node.args[0], fx.Node):
            node = node.args[0]  # a table computed from an embedding: `self.proj(embedding)`
        if node.op == "get_attr":
            tables[ntype] = (node.target, len(generated.hetero.traced.constants[node.name]))
    return tables


def cut_tables(generated: Generated, counts: dict[str, int], *models: torch.nn.Module) -> contextlib.ExitStack:
    """While inside, each table longer than its type's count in the check holds its first rows
    alone, in every model: a table as long as the user's graph (612,000 authors, say) made the
    check run thousands of batches per layer, for hours, where a few hundred rows prove as much."""
    stack = contextlib.ExitStack()
    for ntype, (path, rows) in _tables(generated).items():
        if rows > counts[ntype]:
            for model in models:
                stack.enter_context(tables_set_on(model, {path: table_of(model, path)[: counts[ntype]]}))
    return stack


def feature_widths(generated: Generated) -> dict[tuple[str, str], int]:
    """Each feature's width: --feat-dims, else what the first module that reads it declares."""
    dims = dict(generated.feat_dims)
    plan = generated.hetero
    widths = {}
    for (param, ntype), node in plan.traced.placeholders.items():
        if ntype in dims:
            widths[(param, ntype)] = dims[ntype][0]
            continue
        width = _declared(generated, node, ntype)
        if width is None:
            raise FeatDimsError(
                f"the width of {param}[\"{ntype}\"] is not fixed by the module that reads it: give it "
                f"with --feat-dims {ntype}=WIDTH (one item per node type with features)."
            )
        widths[(param, ntype)] = width
    return widths


def _declared(generated: Generated, node: Any, ntype: str) -> int | None:
    """The width the modules that read a feature declare: a module called on it, a relation's
    module reading it as source rows, or as destination rows (SAGEConv((src, dst), ...)); else,
    for a type only ever a destination, GUESSED_WIDTH (forward failing there asks for
    --feat-dims). A feature that only HeteroGraphConvs are given and none of them reads (their
    graph, a subgraph forward made, holds no relation of its type) takes GUESSED_WIDTH too:
    its width changes nothing forward computes, and the check runs forward on it."""
    model = generated.hetero.traced.model
    read_as_destination = False
    unread = bool(node.users)  # given to none but HeteroGraphConvs that never read it
    for user in node.users:
        if user.op == "call_module":
            unread, width = False, declared_width(model.get_submodule(str(user.target)))
        elif calls_own_layer(user, model):
            # a layer of the user's: the Linear it keeps for a relation from the type (DGL's
            # tutorial: a ModuleDict by relation name), else its first Linear
            width = _own_layer_width(model.get_submodule(str(user.args[0])), ntype, generated.schema)
            read_as_destination, unread = True, False
        elif user.target is hetero_conv:
            conv = model.get_submodule(str(user.args[0]))
            width = None
            for src, rel, dst in generated.schema.relations:
                mod = conv.mod_dict.get((src, rel, dst), conv.mod_dict.get(rel))
                if src == ntype:
                    unread = False
                    width = width or declared_width(mod)
                elif dst == ntype and dst == user.args[3] and src in user.args[2]:
                    unread = False
                    # SAGEConv((src, dst), ...) says it; GINConv's (1 + eps) * h_dst is as wide
                    # as its source rows; GraphConv ignores destination rows
                    read_as_destination = True
                    dst_width = getattr(mod, "_in_dst_feats", None)
                    width = width or (dst_width if isinstance(dst_width, int) else declared_width(mod))
        else:
            unread, width = False, None
        if width:
            return width
    return GUESSED_WIDTH if read_as_destination or unread else None


def _own_layer_width(layer: torch.nn.Module, ntype: str, schema: Schema) -> int | None:
    """The width a heterogeneous layer of the user's reads a type's features at."""
    keys = {rel: (src, rel, dst) for src, rel, dst in schema.relations}
    by_relation = False  # modules keyed by relation: only those from ntype say its width
    for module in layer.modules():
        if isinstance(module, torch.nn.ModuleDict):
            for key, sub in module.items():
                relation = keys.get(key) or next((r for r in schema.relations if str(r) == key), None)
                by_relation = by_relation or relation is not None
                if relation is not None and relation[0] == ntype:
                    width = declared_width(sub) or next(
                        (m.in_features for m in sub.modules() if isinstance(m, torch.nn.Linear)), None)
                    if width:
                        return width
    if by_relation:
        return None
    return next((m.in_features for m in layer.modules() if isinstance(m, torch.nn.Linear)), None)


def random_inputs(generated: Generated, counts: dict[str, int], seed: int) -> dict[str, dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed + 1)
    dtype = _float_dtype(generated)
    inputs: dict[str, dict[str, torch.Tensor]] = {}
    for (param, ntype), width in feature_widths(generated).items():
        inputs.setdefault(param, {})[ntype] = torch.randn(counts[ntype], width, generator=gen, dtype=dtype)
    return inputs


def _float_dtype(generated: Generated) -> torch.dtype:
    """Features in the dtype of the model's weights (float64 for a `model.double()`)."""
    return getattr(torch, model_float_dtype(generated.loaded.model).removeprefix("torch."))


def check_hetero(generated: Generated, num_nodes: int = 1000, seed: int = 0,
                 batch_sizes: tuple[int, ...] | None = None, atol: float = ATOL, rtol: float = RTOL) -> CheckResult:
    """The generated inference against forward (perturbed weights) on a random heterograph of
    about num_nodes nodes, in every way the check runs it (in place, gathered, on the simulated
    GPU, with a relation without edges, in files, "auto", for some nodes)."""
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    reference.eval()
    model, module = instantiate(generated, reference, "generated_hetero", gather=False)
    gathering, gathering_module = instantiate(generated, reference, "generated_hetero_gathering", gather=True)
    counts = node_counts(generated, num_nodes)
    with cut_tables(generated, counts, reference, model, gathering):
        return _check_runs(generated, reference, (model, module), (gathering, gathering_module), counts, seed,
                           batch_sizes, atol, rtol)


def _check_runs(generated: Generated, reference: torch.nn.Module, in_place: tuple[Any, Any], gathering: tuple[Any, Any],
                counts: dict[str, int], seed: int, batch_sizes: tuple[int, ...] | None, atol: float,
                rtol: float) -> CheckResult:
    (model, module), (gathering_model, gathering_module) = in_place, gathering
    schema: Schema = generated.schema
    g = random_heterograph(schema, counts, seed=seed)
    inputs = random_inputs(generated, counts, seed)
    started = time.perf_counter()
    expected = _forward(reference, generated, g, inputs)
    forward_seconds = time.perf_counter() - started
    sizes = batch_sizes or (97, max(counts.values()) + 1)
    runs = [(b, "in place") for b in sizes]
    runs += [(sizes[0], "gathered"), (sizes[0], SIMULATED), (sizes[0], SIMULATED_WHOLE), (sizes[0], _EMPTY),
             (sizes[0], STORAGE), ("auto", AUTO)]
    subset = result_type(generated.hetero)
    if subset is not None:
        runs.append((sizes[0], SUBSET))
    results, ok = [], True
    for batch_size, how in runs:
        graph, wanted = g, expected
        if how == _EMPTY:  # a relation without edges: its module still runs, as in forward
            graph = random_heterograph(schema, counts, seed=seed, empty=schema.relations[0])
            wanted = _forward(reference, generated, graph, inputs)
        nodes = None
        if how == SUBSET:  # a few nodes of the result's type (of its first type, for a dict)
            ntype = subset or next(iter(expected))
            nodes = some_nodes(counts[ntype], SUBSET_SIZE, seed)
            wanted = expected[nodes] if subset else {ntype: expected[ntype][nodes]}
            nodes = nodes if subset else {ntype: nodes}
            graph = g.int()  # int32 IDs (common at scale) in one run: no run more
        started = time.perf_counter()
        gathers = how in ("gathered", SIMULATED, STORAGE)
        try:
            actual = _run(gathering_model if gathers else model, generated, graph, inputs, batch_size, how, nodes)
        except Exception as exc:
            failing = gathering_module if gathers else module
            raise CheckFailedError(_failed(generated, failing, exc, batch_size, how)) from None
        seconds = time.perf_counter() - started
        try:
            difference = max_difference(_as_lists(actual), _as_lists(wanted))
            same = allclose(_as_lists(actual), _as_lists(wanted), atol, rtol) and _same_structure(actual, wanted)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise CheckFailedError(
                f"the generated inference returns a result of another shape or structure than "
                f"{generated.loaded.class_name}'s forward ({first_line(exc)}). {REPORT}"
            ) from None
        results.append(BatchResult(batch_size, how, difference, seconds))
        ok = ok and same
    zero_in = sum(int((g.in_degrees(etype=r) == 0).sum()) for r in schema.relations)
    return CheckResult(g.num_nodes(), g.num_edges(), zero_in, forward_seconds, tuple(results), atol, rtol, ok)


def verify_hetero(generated: Generated) -> CheckResult:
    sizes = VERIFY_BATCH_SIZES
    if _own_layer_calls(generated):
        # batches of one node: relations with edges in g but none into the batch, the runtime's
        # case for a layer of the user's (_HeteroBatches._subgraph), most often
        sizes = (*sizes, 1)
    try:
        result = check_hetero(generated, 240, batch_sizes=sizes)
    except CheckFailedError as exc:
        if "forward raised" in str(exc):
            raise
        raise _own_layer_refusal(generated, f"fails there ({exc})") or exc from None
    if not result.ok:
        worst = result.worst
        refusal = _own_layer_refusal(generated, f"gives other results there than on the whole graph (max "
                                                f"|difference| {worst.max_abs_diff:.3g}, batches of {worst.batch_size})")
        if refusal is not None:
            raise refusal
        raise CheckFailedError(
            f"the generated inference differs from {generated.loaded.class_name}'s full-graph forward "
            f"by up to {worst.max_abs_diff:.3g} (tolerance atol={result.atol}, rtol={result.rtol}) on a "
            f"random heterograph of {result.num_nodes} nodes and {result.num_edges} edges, with batches "
            f"of {worst.batch_size} nodes ({worst.sources}). {REPORT}"
        )
    return result


def _own_layer_calls(generated: Generated) -> list[fx.Node]:
    """The calls of heterogeneous layers of the user's own, in forward's order."""
    return [n for n in generated.hetero.nodes if calls_own_layer(n, generated.hetero.traced.model)]


def _own_layer_refusal(generated: Generated, what: str) -> UnsupportedModuleError | None:
    """Where the model runs a heterogeneous layer of the user's (run per batch on the graph of
    the batch's in-edges, proven by this check alone): the refusal naming it."""
    model = generated.hetero.traced.model
    calls = _own_layer_calls(generated)
    if not calls:
        return None
    path = str(calls[0].args[0])
    where = locations(calls[0], generated.loaded.path)[0] or f"{generated.loaded.class_name}.forward"
    return UnsupportedModuleError(
        f"{where}: self.{path} ({type(model.get_submodule(path)).__name__}), a heterogeneous layer of your "
        f"own, runs layer-wise on each batch's graph of its in-edges, and {what}. That is exact only for a "
        "layer that reads nothing of a node but its in-edges and their sources' features (no "
        "out-degrees, no other node's edges) and returns a result for each type a relation reaches. "
        "Write it with HeteroGraphConv, or evaluate this model with its full-graph forward."
    )


def _forward(model: torch.nn.Module, generated: Generated, g: dgl.DGLHeteroGraph,
             inputs: dict[str, dict[str, torch.Tensor]]) -> Any:
    with torch.no_grad():
        try:
            traced = generated.hetero.traced
            graph = [g] * traced.blocks if traced.blocks else g
            arguments = _forward_arguments(generated, g, inputs)
            if traced.kept:  # forward(self, feats) on self.g: g where the model keeps it
                with graph_set_on(model, traced.kept, g):
                    return model(**arguments)
            return model(**{traced.graph_arg: graph}, **arguments)  # by name: the graph may come later
        except Exception as exc:
            frames = [f for f in traceback.extract_tb(exc.__traceback__)
                      if f.filename == str(generated.loaded.path.resolve()) or f.filename == str(generated.loaded.path)]
            where = f" at {generated.loaded.path}:{frames[-1].lineno}" if frames else ""
            raise CheckFailedError(
                f"{generated.loaded.class_name}'s forward raised {type(exc).__name__} ({first_line(exc)}){where} "
                "on a random heterograph of the schema, with features of the widths gnn-codegen found (give "
                "others with --feat-dims NTYPE=WIDTH). Nothing was written."
            ) from None


def _run(model: torch.nn.Module, generated: Generated, g: dgl.DGLHeteroGraph,
         inputs: dict[str, dict[str, torch.Tensor]], batch_size: int, how: str, nodes: Any = None) -> Any:
    """The generated method on the CPU, `how` the check names its run (for `nodes` or all), or
    with the model on a simulated GPU and g and the inputs on the host."""
    method = getattr(model, generated.method_name)
    arguments = inference_arguments(generated, g, inputs)
    if how == STORAGE:  # results in files, read back before the folder goes
        with tempfile.TemporaryDirectory(prefix="gnn-codegen-check-") as storage:
            return cloned(method(g, *arguments.values(), batch_size=batch_size, device="cpu", storage=storage))
    if how == AUTO:
        return method(g, *arguments.values(), batch_size=batch_size, device="cpu", max_memory=AUTO_MEMORY)
    if nodes is not None:
        return method(g, *arguments.values(), batch_size=batch_size, device="cpu", nodes=nodes)
    if how not in (SIMULATED, SIMULATED_WHOLE):
        return method(g, *arguments.values(), batch_size=batch_size, device="cpu")
    with SimulatedDevice() as sim:
        sim.move_model(model)
        sim.on_host(*(t for d in inputs.values() for t in d.values()))
        sim.on_host(*(g.edges[rel].data[key] for _, key, rels in generated.hetero.traced.edge_data for rel in rels))
        return method(g, *arguments.values(), batch_size=batch_size, device=sim.device)


def inference_arguments(generated: Generated, g: dgl.DGLHeteroGraph,
               inputs: dict[str, dict[str, torch.Tensor]]) -> dict[str, dict[str, torch.Tensor]]:
    """forward's arguments of `inputs`; those it reads from its graph are set on g instead,
    and the edge data it reads from the graph (random weights in [0.5, 1.5), per graph)."""
    traced = generated.hetero.traced
    from_graph = dict(traced.graph_data)
    for name, key in from_graph.items():
        for ntype, tensor in inputs[name].items():
            g.nodes[ntype].data[key] = tensor
    gen = torch.Generator().manual_seed(g.num_edges())
    for _, key, relations in traced.edge_data:
        for rel in relations:
            g.edges[rel].data[key] = torch.rand(g.num_edges(rel), generator=gen, dtype=_float_dtype(generated)) + 0.5
    # a parameter forward takes as one type's features: that tensor
    return {name: next(iter(value.values())) if name in traced.tensor_inputs else value
            for name, value in inputs.items() if name not in from_graph}


def _forward_arguments(generated: Generated, g: dgl.DGLHeteroGraph,
                       inputs: dict[str, dict[str, torch.Tensor]]) -> dict[str, Any]:
    """forward's arguments of `inputs`, and the values --forward-args gives."""
    return {**inference_arguments(generated, g, inputs), **dict(generated.hetero.traced.forward_args)}


def _same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b)
    return True


def _failed(generated: Generated, module: Any, exc: BaseException, batch_size: int, how: str) -> str:
    generated_file = getattr(module, "__file__", "")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == generated_file]
    lines = generated.source.splitlines()
    where = ""
    if frames:
        line = frames[-1].lineno or 0
        where = f" at generated line {line} (`{lines[line - 1].strip()}`)" if 0 < line <= len(lines) else ""
    return (
        f"the generated inference raised {type(exc).__name__} ({first_line(exc)}){where}, on a random "
        f"heterograph with batches of {batch_size} nodes ({how}). {REPORT}"
    )


def _as_lists(value: Any) -> Any:
    """A result with its dicts as lists of their values, for harness.max_difference."""
    if isinstance(value, dict):
        return [_as_lists(v) for v in value.values()]
    if isinstance(value, (tuple, list)):
        return [_as_lists(v) for v in value]
    return value

"""Stage 4b, prove: every message-passing module outside the table of verified modules
(known_modules.EXACT) is run on a probe graph, whole and on the 1-hop blocks of several batch
partitions, and accepted only when both give the same rows. A user's own module, or a dgl.nn
module nobody pinned, is never assumed exact: a module that runs several rounds of message
passing or reads its source nodes' out-degrees is refused here, naming its source line and what
was observed. A module that fails on a block (it writes `graph.ndata`, which a block, with its
two node types, does not have) is proven on each block as a graph over its source nodes
instead (block_as_graph.py).

The module is called the way the generated code calls it, through the same runtime
(runtime.py): source rows gathered by the block's input nodes, destination rows where it takes
a pair, edge tensors by the block's edge IDs. Its weights are
perturbed away from their initial values (verify.perturb) on a copy, so that a lucky
initialisation cannot hide a difference."""

from __future__ import annotations

import copy
import inspect
import re
import warnings
from dataclasses import dataclass, replace
from typing import Any

import dgl
import torch

from gnn_codegen.analysis.block_as_graph import can_run_as_graph, destination_rows, run_as_graph
from gnn_codegen.errors import UnsupportedModuleError, first_line
from gnn_codegen.ir import Op, Program, Ref, iter_refs, map_refs
from gnn_codegen.analysis.mp_arguments import mp_extra_arguments, mp_feature_spaces, mp_features
from gnn_codegen.random_graphs import random_edges
from gnn_codegen.render.runtime import block_as_graph, runtime_class
from gnn_codegen.user_classes import class_and_where
from gnn_codegen.trace.write_out import HELPERS

ATOL = RTOL = 1e-4
# Graphs the module is proven on: a probe graph where every node has a self-loop, and one where
# some nodes have no in-edges at all (skipped when the module refuses it on the whole graph too).
_GRAPHS = ((37, 160, False), (41, 150, True))
_BATCH_SIZES = (1, 5, 16)  # 5 and 16 divide neither graph's node count


@dataclass(frozen=True)
class _Call:
    """How the generated loop calls one message-passing op: which argument values it reads on
    source rows, destination rows or edges."""

    op: Op
    module: torch.nn.Module
    spaces: tuple[tuple[Any, str], ...]
    # called on each block as a graph over its source nodes (block_as_graph.py)
    as_graph: bool = False


def probe_graph(num_nodes: int, num_edges: int, zero_in_degree: bool, seed: int) -> dgl.DGLGraph:
    """The proof's graphs: with zero_in_degree, a fifth of the nodes receive no edge."""
    gen = torch.Generator().manual_seed(seed)
    return dgl.graph(random_edges(num_nodes, num_edges, gen, zero_in_degree, sinks=(5, 2)), num_nodes=num_nodes)


def _example(value: torch.Tensor, rows: int, gen: torch.Generator) -> torch.Tensor:
    """A random tensor like the probe run's `value`, with `rows` rows."""
    shape = (rows, *value.shape[1:])
    if value.is_floating_point():
        return torch.randn(shape, generator=gen, dtype=value.dtype)
    high = int(value.max()) + 1 if value.numel() else 1
    return torch.randint(0, max(high, 1), shape, generator=gen, dtype=value.dtype)


_WAY_OUT = "or evaluate this model with its full-graph forward."
_ROUNDS = (
    "it runs several rounds of message passing, each one hop further",
    "Make each round its own single-hop module call in forward (what happens between rounds "
    "in forward too), " + _WAY_OUT,
)
_SOURCE_NORM = (
    "it normalises over each source node's out-edges with edge_softmax(norm_by='src'), of which a "
    "block holds only those into its batch",
    "A module runs layer-wise only when what it computes for a node reads that node's in-edges "
    "alone (edge_softmax by destination, one hop per module call); change it so, " + _WAY_OUT,
)
_OUT_DEGREES = (
    "it reads out-degrees, which a block counts only inside the block",
    "Compute what it reads of the whole graph (out-degrees, norms) outside the module and pass "
    "it to forward as a per-node input, " + _WAY_OUT,
)
_COUNTS = (
    "it reads the graph's node or edge count, which a block counts only inside the block",
    "Pass what it needs of the whole graph to forward as an input, " + _WAY_OUT,
)
_UNKNOWN = (
    "",
    "A module runs layer-wise only when it reads nothing but each node's in-edges (messages "
    "from in-neighbours, in-degrees); change it so, " + _WAY_OUT,
)


_NDATA = (
    "it uses graph.ndata, which a block, with its source and destination nodes, does not have",
    "Write graph.srcdata / graph.dstdata, as DGL's own modules do, " + _WAY_OUT,
)
_NOT_ON_BLOCKS = ("", "It must run on a block (dgl.create_block) as on a graph, " + _WAY_OUT)


def _diagnosis(module: torch.nn.Module, failed_on_block: bool = False) -> tuple[str, str]:
    """What in the module's forward reads more than each node's in-edges (or fails on a block),
    when its source says, and the way out for it."""
    try:
        source = inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return _NOT_ON_BLOCKS if failed_on_block else _UNKNOWN
    calls = re.findall(r"\.(?:update_all|multi_update_all|send_and_recv|pull|push)\(|dgl\.ops\.[a-z_]+\(", source)
    # a call in a loop's body (`for _ in range(self.k):`), DGL's sparse operators too
    # (`dgl.ops.copy_u_sum(g, y)`)
    in_a_loop = re.search(r"^(\s*)for\b.*:\n(?:\1\s+.*\n)*?\1\s+.*(?:\.(?:update_all|send_and_recv|pull|push)\("
                          r"|dgl\.ops\.[a-z_]+\()", source, re.MULTILINE)
    # an edge softmax over each source's out-edges (AGDN's attention): a block holds only some
    if re.search(r"norm_by\s*=\s*['\"]src['\"]", source):
        rounds = _ROUNDS[0] + ", and " if len(calls) > 1 or in_a_loop else ""
        return rounds + _SOURCE_NORM[0], _SOURCE_NORM[1]
    if len(calls) > 1 or in_a_loop:
        return _ROUNDS
    if "out_degrees" in source:
        return _OUT_DEGREES
    if failed_on_block:
        return _NDATA if ".ndata" in source else _NOT_ON_BLOCKS
    if re.search(r"\b(?:num_nodes|number_of_nodes|num_edges|number_of_edges)\(", source):
        return _COUNTS
    return _UNKNOWN


def _reads_out_degrees(module: torch.nn.Module) -> bool:
    try:
        return "out_degrees" in inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return False


def _refuse(call: _Call, observed: str, way_out: str, differs: bool = False) -> UnsupportedModuleError:
    op = call.op
    consequence = ", so its result would not equal forward's" if differs else ""
    error = UnsupportedModuleError(
        f"{op.location or 'forward'}: {op.accessor} ({class_and_where(call.module)}) {observed}. "
        f"Layer-wise inference runs it on the 1-hop block of each batch of nodes{consequence}. {way_out}"
    )
    error.module_class = type(call.module)  # type: ignore[attr-defined]  # pipeline.py traces into it
    return error


def _run(call: _Call, graph: Any, args: dict[str, Any]) -> Any:
    """Call the module on the whole `graph` with the values `args` (by op name) in its slots."""
    op = call.op

    def value(ref: Ref) -> Any:
        return args[ref.name]

    if op.helper:  # write_out.PROVEN_ON_BLOCKS: the helper around the module, as generated
        with torch.no_grad():
            return HELPERS[op.helper](call.module, graph, *(map_refs(a, value) for a in op.args[2:]))

    positional = [map_refs(a, value) for a in op.args[1:]]
    keywords = {k: map_refs(v, value) for k, v in op.kwargs}
    with torch.no_grad():
        return call.module(graph, *positional, **keywords)


def _flatten(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flatten(v)]
    return []


def _prove(call: _Call, values: dict[str, Any]) -> list[str]:
    """Raise the refusal, or return what the user should know of the proof (notes)."""
    module = call.module
    notes: list[str] = []
    full_name = {name for value, _ in call.spaces for name in iter_refs(value)}
    for seed, (num_nodes, num_edges, zero_in_degree) in enumerate(_GRAPHS):
        g = probe_graph(num_nodes, num_edges, zero_in_degree, seed)
        gen = torch.Generator().manual_seed(seed)
        space_of = {name: space for value, space in call.spaces for name in iter_refs(value)}
        args = {
            name: _example(values[name], g.num_edges() if space_of[name] == "edge" else g.num_nodes(), gen)
            for name in full_name
        }
        try:
            expected = _run(call, g, args)
        except Exception as exc:
            if zero_in_degree:
                # It refuses nodes without in-edges (dgl.nn's GATConv, a user's own `if
                # (graph.in_degrees() == 0).any(): raise`), and ran on the graph of self-loops
                # before. A block's destination nodes have the in-edges they have in g, so on
                # such a graph the generated code calls it on those nodes and raises as forward
                # does; on graphs where every node has an in-edge it is proven below.
                notes.append(_refuses_zero_in_degree(call, exc))
                continue
            raise _refuse(call, f"fails on a random graph of {num_nodes} nodes with "
                          f"{type(exc).__name__}: {first_line(exc)}", "It must run on any graph; " + _WAY_OUT) from None
        if not _equal(_run(call, g, args), expected):
            raise _refuse(call, "gives different results in two runs on the same graph in eval mode "
                          "(random numbers in forward?)", "Make its forward deterministic when "
                          "self.training is False (dropout only in training), " + _WAY_OUT, differs=True)
        for batch_size in _BATCH_SIZES:
            try:
                result = _run_layer_wise(call, g, args, batch_size, expected)
            except Exception as exc:
                why, way_out = _diagnosis(module, failed_on_block=True)
                error = _refuse(call, f"fails on a 1-hop block with {type(exc).__name__} "
                                f"({first_line(exc)}){'; ' + why if why else ''}", way_out)
                error.fails_on_block = True  # type: ignore[attr-defined]  # _prove_all: as a graph?
                raise error from None
            difference = _difference(expected, result)
            if difference is None:
                continue
            why, way_out = _diagnosis(module)
            nodes = "node" if batch_size == 1 else "nodes"
            blocks = ("1-hop blocks (each as a graph over its source nodes, as it fails on a block)"
                      if call.as_graph else "1-hop blocks")
            error = _refuse(
                call,
                f"gives other results on {blocks} than on the whole graph (max |difference| "
                f"{difference:.3g}, batches of {batch_size} {nodes} of a random {num_nodes}-node graph): "
                f"it reads more than the in-edges of each node{' (' + why + ')' if why else ''}",
                way_out, differs=True,
            )
            # pipeline.py may give it the whole graph's out-degrees instead (write_out.py)
            # (two update_all calls need not be rounds: NGCF's both read its input; proven then)
            error.reads_out_degrees = _reads_out_degrees(module)  # type: ignore[attr-defined]
            raise error
    return notes


def _refuses_zero_in_degree(call: _Call, exc: Exception) -> str:
    op = call.op
    return (
        f"{op.location or 'forward'}: {op.accessor} ({class_and_where(call.module)}) raises on a graph "
        f"with nodes without in-edges ({type(exc).__name__}: {first_line(exc)}): it was proven exact "
        "on the blocks of graphs where every node has an in-edge (as when forward adds self-loops), "
        "and on other graphs the generated method raises where forward does"
    )


def _run_on_block(call: _Call, block: Any, local: dict[tuple[str, str], Any]) -> Any:
    """The module on one block, called as the generated loop calls it (mp_feature_spaces): the
    features as source rows, or a pair (source rows, destination rows), edge tensors by edge."""
    op = call.op

    def rows(value: Any, space: str) -> Any:
        return map_refs(value, lambda ref: local[(ref.name, space)])

    if op.helper:  # its arguments after the graph at the rows of their roles
        values = [rows(value, role) if role in ("src", "dst", "edge") else value
                  for value, role in zip(op.args[2:], op.mp.roles[1:] if op.mp else ())]
        graph = block_as_graph(block) if call.as_graph else block  # (can_run_as_graph)
        with torch.no_grad():
            return HELPERS[op.helper](call.module, graph, *values)
    features = [rows(value, space) for value, space in mp_features(op)]
    feats = features[0] if len(features) == 1 else tuple(features)
    extra, by_keyword = mp_extra_arguments(op)
    positional = [rows(value, space) for value, space in extra]
    keywords = {k: rows(value, space) for k, value, space in by_keyword}
    graph = block_as_graph(block) if call.as_graph else block
    with torch.no_grad():
        return call.module(graph, feats, *positional, **keywords)


def _run_layer_wise(call: _Call, g: dgl.DGLGraph, args: dict[str, Any], batch_size: int, expected: Any) -> Any:
    """The module over batches of `batch_size` nodes through the generated runtime's `map`,
    called as the generated code calls it: its results for all nodes (and edges)."""
    keys = [(name, space) for space in ("src", "dst", "edge") for value, role in call.spaces
            if role == space for name in iter_refs(value)]
    rows = {space: [args[name] for name, role in keys if role == space] for space in ("src", "dst", "edge")}
    per_edge = tuple(i for i, t in enumerate(_flatten(expected))
                     if t.dim() and len(t) == g.num_edges() != g.num_nodes())

    # (the runtime hands no block without edges where g has some: _with_companion)
    def layer(block: Any, **tensors: torch.Tensor) -> Any:
        result = _run_on_block(call, block, dict(zip(keys, tensors.values())))
        flat = _flatten(result)
        if call.as_graph:  # the graph's first rows are the block's destinations
            flat = destination_rows(flat, block.num_dst_nodes(), per_edge)
        return tuple(flat) if len(flat) != 1 else flat[0]

    batches = runtime_class()(call.module, g, batch_size, "cpu", 2**30, False)
    # bound by name as the generated code binds them: a parameter per key, in the keys' order
    bound = {keyword: {f"{space}_{i}": x for i, x in enumerate(rows[space])}
             for keyword, space in (("source_rows", "src"), ("destination_rows", "dst"), ("edge_rows", "edge"))}
    returns = ["edges" if i in per_edge else "nodes" for i in range(len(_flatten(expected)))]
    return batches.map(layer, **bound, returns=returns)


def _difference(expected: Any, result: Any) -> float | None:
    """None when the layer-wise results equal the whole graph's; else the largest difference
    (inf where their shapes disagree)."""
    full, parts = _flatten(expected), _flatten(result)
    if len(full) != len(parts) or any(a.shape != b.shape for a, b in zip(full, parts)):
        return float("inf")
    worst = 0.0
    for whole, assembled in zip(full, parts):
        if not torch.allclose(assembled, whole, atol=ATOL, rtol=RTOL, equal_nan=True):
            diff = (assembled.double() - whole.double()).abs()
            worst = max(worst, float(diff.nan_to_num(float("inf")).max()))
    return worst if worst > 0 else None


def _equal(a: Any, b: Any) -> bool:
    ta, tb = _flatten(a), _flatten(b)
    return len(ta) == len(tb) and all(
        x.shape == y.shape and torch.allclose(x, y, atol=ATOL, rtol=RTOL, equal_nan=True) for x, y in zip(ta, tb)
    )


def prove_message_passing(program: Program, model: torch.nn.Module, values: dict[str, Any],
                          as_graph: frozenset[type] = frozenset()) -> tuple[Program, tuple[str, ...]]:
    """The program, with the ops to run on each block as a graph marked, and the notes of the
    proofs; or UnsupportedModuleError for the first message-passing op outside the verified table
    whose module is not exact on 1-hop blocks."""
    with warnings.catch_warnings():  # DGL warns about blocks without edges, which the probe makes
        warnings.simplefilter("ignore")
        return _prove_all(program, model, values, as_graph)


def _prove_all(program: Program, model: torch.nn.Module, values: dict[str, Any],
               as_graph: frozenset[type]) -> tuple[Program, tuple[str, ...]]:
    """Raise UnsupportedModuleError for the first message-passing op outside the verified table
    whose module is not exact on 1-hop blocks. `values`: the probe run's value of every op (for
    the shapes and dtypes of its arguments).

    A module that fails on a block is proven on each block as a graph over its source nodes
    (block_as_graph.py). Where that is exact and its class is in `as_graph`, the op is marked to
    run so (the program returned); where its class is not, the refusal says so
    (`exact_as_graph`): pipeline.py first traces into it, which runs what it can once per node."""
    from gnn_codegen.analysis.perturb import perturb

    marked: set[str] = set()
    notes: list[str] = []
    for op in program.ops:
        if op.kind != "mp" or op.mp is None or op.mp.verified:
            continue
        module = copy.deepcopy(model.get_submodule(program.module_path(op))).eval()
        perturb(module, seed=1)
        call = _Call(op, module, tuple(mp_feature_spaces(op)))
        try:
            notes += _prove(call, values)
        except UnsupportedModuleError as refusal:
            if not getattr(refusal, "fails_on_block", False) or not can_run_as_graph(op):
                raise
            try:
                notes += _prove(replace(call, as_graph=True), values)
            except UnsupportedModuleError as exc:
                # it runs as a graph but differs (rounds, out-degrees): that says more
                raise (refusal if getattr(exc, "fails_on_block", False) else exc) from None
            if type(module) not in as_graph:
                refusal.exact_as_graph = True  # type: ignore[attr-defined]
                raise refusal from None
            marked.add(op.name)
    return run_as_graph(frozenset(marked), program), tuple(notes)

"""Stage 9, verify: the generated module against the model it came from. Its `inference` runs
on a seeded random graph (nodes without in-edges included, unless the model refuses them), with
weights and normalisation statistics perturbed on a copy of the model, for batch sizes that do
and do not divide the node count, reading source rows in place and gathering them (as on a GPU),
twice with the model on a simulated GPU and the graph and inputs on the host, where a host
tensor meeting a device tensor fails (simulated_device.py): source rows gathered per batch, and
moved there whole (as where they fit in the GPU's memory), with its results kept in files
(storage=), and for a few nodes only (nodes=, alone, and with storage= on a graph of int32
IDs); its result must equal the model's full-graph forward (its rows for those nodes).

`verify` is the check gnn-codegen runs on every module before it writes it (a few hundred
nodes); `check` is `--check`, the same on a graph of the user's size. A difference, or an
exception from forward or from the generated code, is a CheckFailedError (exit 1) naming the
exception, the generated line and the user's line it computes: never a traceback."""

from __future__ import annotations

import ast
import copy
import re
import tempfile
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import dgl
import torch

from gnn_codegen.verify.graph_state import state_between_layers
from gnn_codegen.errors import CheckFailedError, UnsupportedModuleError, first_line
from gnn_codegen.trace.metapaths import rows_graph
from gnn_codegen.analysis.node_count import fixed_node_count
from gnn_codegen.trace.several_graphs import first_graph, int_ids
from gnn_codegen.verify.harness import (
    picked_nodes,
    allclose,
    flatten,
    full_graph_forward,
    gather_sources_always,
    generated_model,
    import_source,
    make_inputs,
    max_difference,
    nan_count,
    random_graph_for,
    returns_edge_rows,
    rows_for,
    run_inference,
    some_nodes,
    with_tables,
)
from gnn_codegen.generated import BatchResult, CheckResult, Generated
from gnn_codegen.lower.spelling import without_comment
from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.lower.row_ranges import nodes_for_check
from gnn_codegen.verify.simulated_device import SimulatedDevice


# The check before writing: N does not divide by the first batch size and does by the second.
VERIFY_NODES = 240
VERIFY_BATCH_SIZES = (47, 60)
ATOL = RTOL = 1e-4
# BatchResult.sources of the run with the model on a simulated GPU (simulated_device.py)
SIMULATED = "gathered, the model on a simulated GPU"
SIMULATED_WHOLE = "moved whole to a simulated GPU, the model there"
# and of the runs for some nodes only (nodes=...) and with the results in files (storage=DIR)
SUBSET_SIZE = 40
SUBSET = f"in place, for {SUBSET_SIZE} of the nodes (nodes=)"
STORAGE = "gathered, kept in files (storage=)"
STORAGE_SUBSET = f"gathered, kept in files, for {SUBSET_SIZE} of the nodes, on g.int()"


def check(generated: Generated, num_nodes: int = 1000, seed: int = 0,
          batch_sizes: tuple[int, ...] | None = None, atol: float = ATOL, rtol: float = RTOL) -> CheckResult:
    """Run the generated inference against the model's full-graph forward (see the module
    docstring); raises CheckFailedError where either raises, returns the differences."""
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    reference.eval()
    fixed = fixed_node_count(generated.attributes.node_tables)
    fixed_note = []
    if fixed is not None and fixed != num_nodes:  # a table indexed by node ID: forward runs on no other
        fixed_note.append(
            f"forward indexes {', '.join(f'self.{t} ({r} rows)' for t, r in generated.attributes.node_tables)} "
            f"by node ID, so the check ran on a graph of {fixed} nodes"
        )
        num_nodes = fixed
    if nodes_for_check(generated.program.output, num_nodes) != num_nodes:  # row_ranges.py
        num_nodes = nodes_for_check(generated.program.output, num_nodes)
        fixed_note.append(f"forward returns a range of rows that needs {num_nodes} nodes: the check ran on so many")
    models = {
        "in place": instantiate(generated, reference, "generated_inference", gather=False),
        "gathered": instantiate(generated, reference, "generated_gathering", gather=True),
    }
    g, inputs, notes = _graph_the_model_accepts(generated, reference, num_nodes, seed)
    notes = fixed_note + notes
    # g, the graph of its first metapath, or the first of several graphs side by side
    rows = first_graph(rows_graph(generated.program, g) if not generated.program.graphs else g)
    started = time.perf_counter()
    expected = full_graph_forward(reference, generated, g, inputs)
    forward_seconds = time.perf_counter() - started
    nans = nan_count(expected)
    if nans:  # the model's own: the generated inference must make them in the same places
        notes.append(
            f"{generated.loaded.class_name}'s forward returns NaN for {nans} values on the check's random "
            "graph (nodes without in-edges, say, where it divides by a degree of 0); the generated "
            "inference was checked to return NaN in exactly the same places"
        )
    results, ok = [], True
    sizes = batch_sizes or (97, num_nodes + 1)
    runs = [(b, sources) for b in sizes for sources in models]
    runs += [(sizes[0], SIMULATED), (sizes[0], SIMULATED_WHOLE), (sizes[0], STORAGE)]
    if not returns_edge_rows(generated):
        runs += [(sizes[0], SUBSET), (sizes[-1], STORAGE_SUBSET)]
    for batch_size, sources in runs:
        model, module = models["gathered" if sources in ("gathered", SIMULATED, STORAGE, STORAGE_SUBSET) else "in place"]
        nodes = some_nodes(rows.num_nodes(), SUBSET_SIZE, seed) if sources in (SUBSET, STORAGE_SUBSET) else None
        typed = generated.program.type_offsets  # a result picked by node type: IDs by type (type_offsets.py)
        picked = picked_nodes(typed, g, expected, SUBSET_SIZE, seed) if nodes is not None and typed and typed.picked else None
        nodes = picked[0] if picked else nodes
        started = time.perf_counter()
        try:
            # int32 IDs (g.int(), common at scale) in one run: no run more
            graph = int_ids(g) if sources == STORAGE_SUBSET else g
            actual = _run(model, generated, graph, inputs, batch_size, sources, nodes)
            expected_here = expected if nodes is None else picked[1] if picked else rows_for(
                generated, expected, nodes, rows.num_nodes())
            actual = actual if nodes is None else flatten(actual)
        except Exception as exc:
            raise CheckFailedError(_inference_failed(generated, module, exc, g, batch_size, sources)) from None
        seconds = time.perf_counter() - started
        try:
            difference = max_difference(actual, expected_here)
            same = allclose(actual, expected_here, atol, rtol)
        except (RuntimeError, ValueError, TypeError) as exc:  # shapes or structure differ
            raise CheckFailedError(
                f"the generated inference returns a result of another shape or structure than "
                f"{generated.loaded.class_name}'s forward ({first_line(exc)}) on a random graph of "
                f"{rows.num_nodes()} nodes. {REPORT}"
            ) from None
        results.append(BatchResult(batch_size, sources, difference, seconds))
        ok = ok and same
    if nans and int((rows.in_degrees() == 0).sum()):
        # NaN proves little where it stands: once more on a graph where every node has a self-loop
        loops = random_graph_for(generated, num_nodes, seed, zero_in_degree=False)
        loop_inputs = make_inputs(generated, num_nodes, seed, _edges(generated, first_graph(loops)))
        loop_expected = full_graph_forward(reference, generated, loops, loop_inputs)
        loop_actual = _run(models["in place"][0], generated, loops, loop_inputs, sizes[0], "in place")
        results.append(BatchResult(sizes[0], "in place, a graph of self-loops",
                                   max_difference(loop_actual, loop_expected), 0.0))
        ok = ok and allclose(loop_actual, loop_expected, atol, rtol)
    # a layer's state left on forward's graph for the next (graph_state.py): refused, named. Blocks
    # that are one object, as the docstring's forward([g] * L), carry it where distinct ones do not
    one_object = generated.program.blocks_style and not generated.program.converts_blocks
    shared = (lambda: full_graph_forward(reference, generated, g, inputs, one_object=True)) if one_object else None
    for run in ([lambda: full_graph_forward(reference, generated, g, inputs)] if not ok else []) + (
            [shared] if shared is not None and not allclose(shared(), expected, atol, rtol) else []):
        refusal = state_between_layers(reference, generated.program, run)
        if refusal:
            raise UnsupportedModuleError(refusal)
    zero_in = int((rows.in_degrees() == 0).sum())
    return CheckResult(rows.num_nodes(), rows.num_edges(), zero_in, forward_seconds, tuple(results), atol, rtol, ok,
                       tuple(notes))


def _run(model: torch.nn.Module, generated: Generated, g: dgl.DGLGraph, inputs: list[torch.Tensor],
         batch_size: int, sources: str, nodes: torch.Tensor | None = None) -> Any:
    """The generated method on the CPU, for `nodes` or all, its results in memory or in files
    (read back here), or with the model on a simulated GPU and g and the inputs on the host
    (simulated_device.py): every host tensor that meets a device tensor fails there."""
    if sources in (STORAGE, STORAGE_SUBSET):
        with tempfile.TemporaryDirectory(prefix="gnn-codegen-check-") as storage:
            result = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu",
                                   nodes=nodes, storage=storage)
            return [t.clone() for t in flatten(result)] if nodes is not None else cloned(result)
    if sources not in (SIMULATED, SIMULATED_WHOLE):
        return run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu", nodes=nodes)
    # the model's tables read as node features take the graph's rows before the model moves
    with with_tables(model, generated, inputs), SimulatedDevice() as sim:
        sim.move_model(model)
        sim.on_host(*inputs)
        return run_inference(model, generated, g, inputs, batch_size=batch_size, device=sim.device, tables_set=True)


def cloned(value: Any) -> Any:
    """value's tensors copied out of their files (which go with the check's directory); a dict
    (a heterogeneous model's result by node type) too."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: cloned(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(cloned(v) for v in value)
    return value


def verify(generated: Generated) -> CheckResult:
    """The check before writing: raises CheckFailedError unless the generated inference equals
    forward on a random graph of VERIFY_NODES nodes."""
    result = check(generated, VERIFY_NODES, batch_sizes=VERIFY_BATCH_SIZES)
    if not result.ok:
        worst = result.worst
        raise CheckFailedError(
            f"the generated inference differs from {generated.loaded.class_name}'s full-graph forward "
            f"by up to {worst.max_abs_diff:.3g} (tolerance atol={result.atol}, rtol={result.rtol}) on a "
            f"random graph of {result.num_nodes} nodes and {result.num_edges} edges, with batches of "
            f"{worst.batch_size} nodes and source rows {worst.sources}. {REPORT}"
        )
    return result


REPORT = (
    "Nothing was written. This is a bug in gnn-codegen: please report it with the model file and "
    "the command you ran (--no-verify writes the module anyway, unchecked)."
)


def instantiate(generated: Generated, reference: torch.nn.Module, name: str,
                 gather: bool) -> tuple[torch.nn.Module, ModuleType]:
    try:
        module = import_source(generated.source, generated.loaded.path.parent, name, generated.runtime_module)
        if gather:
            gather_sources_always(module)
        return generated_model(generated, module, reference), module
    except Exception as exc:
        raise CheckFailedError(
            f"the generated module does not import or build {generated.loaded.class_name} "
            f"({type(exc).__name__}: {first_line(exc)}). {REPORT}"
        ) from None


def _edges(generated: Generated, g: dgl.DGLGraph) -> int:
    """The rows of forward's edge inputs: g's edges, or those of the graph forward makes of its
    heterograph first (homogenized.py)."""
    return rows_graph(generated.program, g).num_edges() if generated.program.homogenized else g.num_edges()


def _graph_the_model_accepts(generated: Generated, reference: torch.nn.Module, num_nodes: int,
                             seed: int) -> tuple[dgl.DGLGraph, list[torch.Tensor], list[str]]:
    """A random graph with nodes without in-edges, or, where forward refuses it (GATConv's
    default, a user's own assert), one where every node has a self-loop, and inputs for it."""
    notes = []
    failure = None
    for zero_in_degree in (True, False):
        g = random_graph_for(generated, num_nodes, seed, zero_in_degree)
        inputs = make_inputs(generated, num_nodes, seed, _edges(generated, first_graph(g)))
        try:
            full_graph_forward(reference, generated, g, inputs)
        except Exception as exc:
            failure = failure or exc
            if zero_in_degree:
                notes.append(
                    f"{generated.loaded.class_name}'s forward refuses a graph with nodes without "
                    f"in-edges ({type(exc).__name__}: {first_line(exc)}), so the check used one where "
                    "every node has a self-loop"
                )
            continue
        return g, inputs, notes
    assert failure is not None
    raise CheckFailedError(_forward_failed(generated, failure, num_nodes))


def _forward_failed(generated: Generated, exc: BaseException, num_nodes: int) -> str:
    path = generated.loaded.path
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _same_file(f.filename, path)]
    where = f" at {path}:{frames[-1].lineno} (`{without_comment(frames[-1].line or '')}`)" if frames else ""
    widths = ", ".join(f"{s.param}: {' x '.join(map(str, s.shape)) or 1} per {s.rows}"
                       for s in generated.attributes.inputs)
    return (
        f"{generated.loaded.class_name}'s forward raised {type(exc).__name__} ({first_line(exc)}){where} "
        f"on a random graph of {num_nodes} nodes, with inputs of the widths gnn-codegen traced "
        f"({widths}). Every generated module is checked against forward before it is written, so "
        "forward must run on any graph and inputs of these widths; give other widths with "
        "--feat-dims NAME=WIDTH. Nothing was written."
    )


def _inference_failed(generated: Generated, module: ModuleType, exc: BaseException, g: dgl.DGLGraph,
                      batch_size: int, sources: str) -> str:
    generated_file = getattr(module, "__file__", "")
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if generated_file and _same_file(f.filename, Path(generated_file))]
    # the innermost line of `inference` itself (its layer functions included), not of the
    # runtime or a written-out convolution it called
    first, last = _method_lines(generated.source, generated.method_name)
    ours = [f for f in ours if first <= (f.lineno or 0) <= last] or ours
    lines = generated.source.splitlines()
    where = ""
    if ours:
        line = ours[-1].lineno or 0
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        where = f" at generated line {line} (`{without_comment(text)}`)"
        origin = _user_line(generated, line) or _user_line_of_copied_code(generated, text)
        if origin:
            where += f", which computes {origin}"
    return (
        f"the generated inference raised {type(exc).__name__} ({first_line(exc)}){where}, on a "
        f"random graph of {first_graph(rows_graph(generated.program, g) if not generated.program.graphs else g).num_nodes()} nodes with batches of {batch_size} nodes and source rows "
        f"{sources}. {REPORT}"
    )


def _method_lines(source: str, name: str) -> tuple[int, int]:
    """The first and last line of the generated method (`inference`)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node.lineno, node.end_lineno or node.lineno
    return 0, 0


def _user_line(generated: Generated, line: int) -> str:
    """The user's line that the generated statement at `line` computes (Rendered.origins)."""
    tree = ast.parse(generated.source)
    statement = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.If,
                                                               ast.With, ast.While, ast.Try)):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                statement = node
    if statement is None:
        return ""
    wanted = ast.unparse(statement)
    for text, location in generated.origins:
        if _normalised(text) == wanted:
            return location
    # a statement of a loop over the user's layers was rendered once per layer before the loop
    # folded them (`self.layers[1]`, `h_2`): it computes their user line where they all agree
    alike = {location for text, location in generated.origins if _per_layer(text) == _per_layer(wanted)}
    return alike.pop() if len(alike) == 1 else ""


def _per_layer(text: str) -> str:
    """`text` up to what differs between a loop's rounds: the index of a module list and the
    counted suffix of a name."""
    class _Erased(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            self.generic_visit(node)
            node.slice = ast.Name("_", ast.Load())
            return node

        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Name(re.sub(r"_\d+$", "", node.id), node.ctx)

    try:
        return ast.unparse(_Erased().visit(ast.parse(text)))
    except SyntaxError:
        return text


def _user_line_of_copied_code(generated: Generated, text: str) -> str:
    """The user's file line with this text, when the failing line is the user's own code that
    the generated module copies (a module's forward)."""
    if not text:
        return ""
    matches = [i for i, line in enumerate(generated.loaded.source.splitlines(), 1) if line.strip() == text]
    return f"{generated.loaded.path}:{matches[0]} (`{without_comment(text)}`)" if len(matches) == 1 else ""


def _normalised(text: str) -> str:
    try:
        return ast.unparse(ast.parse(text))
    except SyntaxError:
        return text


def _same_file(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except OSError:
        return False



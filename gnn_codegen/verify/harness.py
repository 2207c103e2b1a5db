"""Running a generated module beside the model it came from: import its source, build the
generated class with the model's weights, seeded random graphs and inputs, the model's
full-graph forward, and comparisons of their results. Used by verify.py and by the tests."""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import dgl
import torch

from gnn_codegen.trace.type_offsets import TypeOffsets, random_typed_heterograph, split_by_type
from gnn_codegen.errors import internal
from gnn_codegen.trace.graph_data import BLOCK_EDGE_IDS, BLOCK_NODE_IDS
from gnn_codegen.ir import iter_refs
from gnn_codegen.trace.plain_containers import with_held_state
from gnn_codegen.trace.kept_graph import graph_set_on
from gnn_codegen.trace.homogenized import (
    MADE_BY_CONVERSION,
    kept_fields,
    random_graph_converted,
    set_by_type,
    set_on_kept_type,
    subgraph_types,
)
from gnn_codegen.trace.node_counts import MADE
from gnn_codegen.trace.metapaths import metapaths, random_metapath_graph
from gnn_codegen.analysis.node_tables import tables_set_on
from gnn_codegen.trace.dict_inputs import packed_arguments
from gnn_codegen.trace.metapath_types import rows_type_named, rows_type_of
from gnn_codegen.lower.row_axis import RowAxis, rows_on_axis
from gnn_codegen.lower.row_ranges import RowRange, result_refs, rows_of_range
from gnn_codegen.random_graphs import random_graph
from gnn_codegen.trace.several_graphs import in_forwards_order, random_graphs

if TYPE_CHECKING:
    from gnn_codegen.ir import Program
    from gnn_codegen.generated import Generated


def random_graph_for(generated: Generated, num_nodes: int, seed: int = 0, zero_in_degree: bool = True,
                     avg_degree: int = 5) -> dgl.DGLGraph:
    """random_graph, or for a model over metapaths a heterograph whose metapath graphs have
    num_nodes nodes (metapaths.py)."""
    paths = metapaths(generated.program)
    typed = generated.program.type_offsets
    if typed is not None and typed.relations:  # of --metagraph's types (type_offsets.py)
        return random_typed_heterograph(typed, num_nodes, seed)
    if generated.program.homogenized is not None:  # forward converts a heterograph (homogenized.py)
        return random_graph_converted(generated.program.homogenized, num_nodes, *_type_counts(generated), seed,
                                      zero_in_degree)
    if generated.program.graphs:  # several graphs side by side over the same nodes (several_graphs.py)
        return random_graphs(generated.program.graphs, num_nodes, lambda i: with_parent_ids(random_graph(
            num_nodes, avg_degree, seed + 1000 * i, zero_in_degree), seed + i))
    if paths:  # its rows type named as forward's dict of features names it (metapath_types.py)
        with rows_type_named(rows_type_of(generated.program.dict_inputs)):
            return random_metapath_graph(paths, num_nodes, seed, zero_in_degree)
    return with_parent_ids(random_graph(num_nodes, avg_degree, seed, zero_in_degree), seed)


def with_parent_ids(g: dgl.DGLGraph, seed: int) -> dgl.DGLGraph:
    """g carrying IDs of a parent graph in dgl.NID and dgl.EID, as a graph made by
    dgl.to_homogeneous, a subgraph or a block does (issue 35, item 5): a generated module that
    reads them where forward reads IDs in g, or anything else, fails the check."""
    gen = torch.Generator().manual_seed(seed + 7)
    g.ndata[dgl.NID] = torch.randperm(g.num_nodes(), generator=gen)
    g.edata[dgl.EID] = torch.randperm(g.num_edges(), generator=gen)
    return g


def _type_counts(generated: Generated) -> tuple[int, int]:
    """Node and edge types of the check's heterograph for a forward that converts it: 2 and 3,
    fewer where the modules that read the conversion's type IDs take fewer."""
    counts = {"ndata": 2, "edata": 3}
    reads = _read_from_graph(generated.program)
    for spec in generated.attributes.inputs:
        view, key = reads.get(spec.name, ("", ""))
        if key == dgl.NTYPE and view in counts and spec.high:
            counts[view] = max(1, min(counts[view], spec.high))
    return counts["ndata"], counts["edata"]


def import_source(source: str, model_dir: Path, name: str = "generated_inference",
                  runtime: tuple[str, str] | None = None) -> ModuleType:
    """Import generated source as a module (its folder beside the model's, for local imports).
    runtime: (NAME, text) of the runtime module it imports (--runtime-module), written beside
    it and imported afresh, as the user's import will (never a NAME.py found elsewhere)."""
    with tempfile.TemporaryDirectory(prefix="gnn_codegen_check_") as folder:
        path = Path(folder) / f"{name}.py"
        path.write_text(source)
        module_name = f"_gnn_codegen_generated_{abs(hash(source))}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        folders = [str(model_dir.resolve())]
        if runtime is not None:
            (Path(folder) / f"{runtime[0]}.py").write_text(runtime[1])
            folders.insert(0, folder)
        before = sys.modules.pop(runtime[0], None) if runtime is not None else None
        sys.path[:0] = folders
        try:
            spec.loader.exec_module(module)
        finally:
            for entry in folders:
                sys.path.remove(entry)
            if runtime is not None:  # each import its own runtime module, as in a new process
                sys.modules.pop(runtime[0], None)
                if before is not None:
                    sys.modules[runtime[0]] = before
    return module


def gather_sources_always(module: ModuleType) -> ModuleType:
    """Make an imported generated module gather every layer's source rows, as it does when they
    are not on the device (a GPU): on the CPU, layers that only aggregate read the rows in
    place instead. check() runs both ways, so both are proven on a machine without a GPU."""
    for name, runtime in list(vars(module).items()):
        if name.startswith(("_FullNeighbourBatches", "_HeteroBatches")) and isinstance(runtime, type):
            runtime.map = functools.partialmethod(_never_in_place, runtime.map)
    return module


def _never_in_place(self: Any, original: Any, layer: Any, *args: Any, **kwargs: Any) -> Any:
    kwargs["in_place"] = False
    return original(self, layer, *args, **kwargs)


def full_graph_forward(model: torch.nn.Module, generated: Generated, g: dgl.DGLGraph,
                       inputs: list[torch.Tensor], one_object: bool = False) -> Any:
    """forward(...) with the graph (a list of blocks in the blocks style, or where the model
    keeps it) and `inputs` (in the order of Program.inputs) in forward's own parameter
    positions, or on the graph where forward reads them there. one_object: blocks that are one
    graph object, as `[g] * L` (graph_state.py)."""
    program = generated.program
    g, arguments = with_graph_data(generated, g, inputs, for_inference=False)
    # distinct graph objects over the same structure: `block is blocks[-1]` must mean what it says
    if not program.blocks_style:  # one graph, or several side by side (a list: several_graphs.py)
        blocks = []
    elif program.converts_blocks:  # dgl.block_to_graph takes a block: the whole graph's, every node a destination
        blocks = [dgl.to_block(g, torch.arange(g.num_nodes(), device=g.device)) for _ in range(program.num_blocks)]
    else:
        blocks = [g.local_var()] * program.num_blocks if one_object else [g.local_var() for _ in range(program.num_blocks)]
    forward_inputs = [program.op(name).target for name in program.inputs
                      if name not in _read_from_graph(program) and name not in _tables(program)]
    # forward's dicts of features by node type (dict_inputs.py): each given whole
    values = dict(packed_arguments(list(zip(forward_inputs, arguments)), program.dict_inputs))
    values[program.op(program.graph).target] = blocks if program.blocks_style else g
    values.update(zip(program.graph_params, g))  # forward(self, g1, g2, x): the graphs side by side
    positional = [values[name] for name, kind in program.signature if kind == "positional"]
    keywords = {name: values[name] for name, kind in program.signature if kind == "keyword"}
    keywords.update(program.flags)  # training=False: forward as eval runs it
    with torch.no_grad(), graph_set_on(model, program.kept_graph, g), with_tables(model, generated, inputs):
        return model(*positional, **keywords)


def _inputs_of(program: Program, by_target: dict[str, Any]) -> dict[str, Any]:
    """Input op -> what `by_target` says of its target, for the inputs it names."""
    return {name: by_target[program.op(name).target] for name in program.inputs
            if program.op(name).target in by_target}


def _tables(program: Program) -> dict[str, str]:
    """Input op -> attribute path, for the tables of the model forward reads as node features."""
    return _inputs_of(program, {target: path for target, path, _ in program.tables})


def with_tables(model: torch.nn.Module, generated: Generated, inputs: list[torch.Tensor]) -> Any:
    """While inside, the model's tables read as node features (node_tables.py) hold their
    inputs' values (in the order of Program.inputs), which have the rows of the check's graph."""
    tables = _tables(generated.program)
    values = {tables[name]: value for name, value in zip(generated.program.inputs, inputs) if name in tables}
    return tables_set_on(model, values)


def _read_from_graph(program: Program) -> dict[str, tuple[str, str]]:
    """Input op -> (view, key) for the inputs forward reads from the graph."""
    return _inputs_of(program, {target: (view, key) for target, view, key in program.graph_data})


def with_graph_data(generated: Generated, g: dgl.DGLGraph, inputs: list[torch.Tensor],
                    for_inference: bool = True) -> tuple[dgl.DGLGraph, list[torch.Tensor]]:
    """The graph and the arguments that forward and inference take for `inputs` (in the order
    of Program.inputs): those forward reads from the graph (`g.ndata["feat"]`) are set on a
    copy of g that shares its structure; the others stay arguments, in order. A block's IDs
    (graph_data.BLOCK_NODE_IDS) are IDs in g, which forward on [g] * L reads from g's field;
    inference's g carries other IDs there, a parent graph's, as dgl.to_homogeneous leaves them,
    which inference must not read."""
    program = generated.program
    from_graph, tables = _read_from_graph(program), _tables(program)
    g = g.local_var() if from_graph else g
    arguments = []
    for name, value in zip(program.inputs, inputs, strict=True):
        if name in from_graph:
            view, key = from_graph[name]
            if view == MADE:  # torch.ones(g.num_nodes(), 1): forward and inference make it
                continue
            if program.homogenized is not None and subgraph_types(program.homogenized):  # on the kept type
                set_on_kept_type(g, program.homogenized, view, key, value)
                continue
            if program.homogenized is not None:  # on each type of the heterograph, if converted
                if key not in MADE_BY_CONVERSION and key in kept_fields(program.homogenized, view):
                    set_by_type(g, view, key, value)
                continue
            if view in (BLOCK_NODE_IDS, BLOCK_EDGE_IDS):
                view = "ndata" if view == BLOCK_NODE_IDS else "edata"
                value = value.flip(0) if for_inference else value
            getattr(g, view)[key] = value
        elif program.type_offsets and program.op(name).target in program.type_offsets.inputs:
            arguments.append(split_by_type(g, value))  # a dict by node type (type_offsets.py)
        elif name not in tables:
            arguments.append(value)
    return g, arguments


def run_inference(model: torch.nn.Module, generated: Generated, g: dgl.DGLGraph, inputs: list[torch.Tensor],
                  *args: Any, tables_set: bool = False, **kwargs: Any) -> Any:
    """The generated method on g and `inputs` (in the order of Program.inputs), as a user calls
    it: inputs forward reads from the graph are on the graph, tables it reads as node features
    are the model's (set here, unless the caller did: tables_set)."""
    with contextlib.nullcontext() if tables_set else with_tables(model, generated, inputs):
        return getattr(model, generated.method_name)(*inference_arguments(generated, g, inputs), *args, **kwargs)


def inference_arguments(generated: Generated, g: dgl.DGLGraph, inputs: list[torch.Tensor]) -> list[Any]:
    """The generated method's positional arguments for g and `inputs`: the graph (carrying the
    inputs forward reads from it), then the other inputs."""
    g, arguments = with_graph_data(generated, g, inputs)
    program = generated.program
    from_graph, tables = _read_from_graph(program), _tables(program)
    taken = [program.op(n).target for n in program.inputs if n not in from_graph and n not in tables]
    # forward's dicts of features by node type (dict_inputs.py): the method takes each whole
    named = packed_arguments(list(zip(taken, arguments)), program.dict_inputs)
    if not program.graph_params:
        return [g, *(value for _, value in named)]
    # forward(self, graph1, feat1, graph2, feat2): in forward's order, as the generated method takes them
    return in_forwards_order(program, [*zip(program.graph_params, g), *named])


def make_inputs(generated: Generated, num_nodes: int, seed: int, num_edges: int | None = None) -> list[torch.Tensor]:
    """Seeded random inputs for forward: node inputs get num_nodes rows, edge inputs num_edges."""
    gen = torch.Generator().manual_seed(seed + 1)
    edges = num_nodes if num_edges is None else num_edges
    # an input forward never reads gets rows of neither count: whatever rows a caller gives
    # forward, inference must take too (render.py checks no rows of it)
    unread = generated.program.unread_inputs() if generated.program is not None else frozenset()
    return [spec.example(_UNREAD_ROWS, _UNREAD_ROWS, gen) if spec.name in unread else spec.example(num_nodes, edges, gen)
            for spec in generated.attributes.inputs]


# rows of an input forward never reads, in the checks: no graph of theirs has as many nodes or edges
_UNREAD_ROWS = 3


def generated_model(generated: Generated, module: ModuleType,
                    reference: torch.nn.Module | None = None) -> torch.nn.Module:
    """The generated class holding the weights of `reference` (the model it was generated from,
    by default)."""
    cls = getattr(module, generated.loaded.class_name)
    reference = generated.loaded.model if reference is None else reference
    try:
        model = cls(**dict(generated.loaded.init))
    except TypeError:  # NAME was a factory function: same modules, generated class
        model = copy.deepcopy(reference)
        model.__class__ = cls
    # a model in float64 (`model.double()` after building it, as its user does again before
    # loading its weights): load_state_dict keeps the dtype of the tensors it copies into
    floats = {t.dtype for t in reference.state_dict().values() if t.is_floating_point()}
    if len(floats) == 1:
        model = model.to(floats.pop())
    model.load_state_dict(reference.state_dict())
    with_held_state(model, reference)  # modules in plain lists: not in the state_dict
    return model.eval()


def returns_edge_rows(generated: Generated) -> bool:
    """Whether forward returns a value per edge (inference then takes no `nodes`)."""
    return any(generated.attributes[n].rows == "edge" for n in iter_refs(generated.program.output))


def rows_for(generated: Generated, value: Any, nodes: torch.Tensor, num_nodes: int | None = None) -> list[torch.Tensor]:
    """forward's results `value`, flattened, each with a row per node taken at `nodes`: what
    inference(..., nodes=nodes) returns. num_nodes: the graph's, where forward returns a range
    of rows (row_ranges.py: those of `nodes` in the range)."""
    refs = result_refs(generated.program.output)
    flat = flatten(value)
    if len(refs) != len(flat):
        raise internal(f"forward returns {len(flat)} tensors for {len(refs)} results")
    if num_nodes is None and any(isinstance(ref, RowRange) for ref in refs):
        raise internal("rows of a range of nodes asked for without the graph's node count")
    return [rows_of_range(ref, t, nodes, num_nodes or 0) if isinstance(ref, RowRange)
            else rows_on_axis(ref, t, nodes) if isinstance(ref, RowAxis) and generated.attributes[ref.name].rows == "node"
            else t[nodes] if generated.attributes[ref.name].rows == "node" else t for t, ref in zip(flat, refs)]


def some_nodes(num_nodes: int, count: int, seed: int) -> torch.Tensor:
    """`count` node IDs in no order, one of them twice: inference(nodes=...) keeps both."""
    picked = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed))[:count]
    return torch.cat([picked, picked[:1]]) if len(picked) else picked


def flatten(value: Any) -> list[torch.Tensor]:
    """The tensors of a result, in the order ir.iter_refs walks its parts (a dict's values)."""
    if isinstance(value, torch.Tensor):
        return [value]
    parts = value.values() if isinstance(value, dict) else value
    return [t for v in parts for t in flatten(v)]


def max_difference(a: Any, b: Any) -> float:
    """The largest |a - b|, where NaN in both counts as equal (a forward that makes NaN, say
    `torch.pow(0, -0.5)` for nodes without in-edges, is matched NaN for NaN) and NaN in one only
    as infinitely different."""
    pairs = list(zip(flatten(a), flatten(b), strict=True))
    worst = 0.0
    for x, y in pairs:
        if not x.numel():
            continue
        both = torch.isnan(x) & torch.isnan(y)
        difference = (x.detach() - y.detach()).abs().masked_fill(both, 0.0).nan_to_num(nan=float("inf"))
        worst = max(worst, float(difference.max()))
    return worst


def allclose(a: Any, b: Any, atol: float, rtol: float) -> bool:
    """torch.allclose, NaN in the same places counting as equal (see max_difference)."""
    return all(torch.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True)
               for x, y in zip(flatten(a), flatten(b), strict=True))


def nan_count(value: Any) -> int:
    return sum(int(torch.isnan(t).sum()) for t in flatten(value) if t.is_floating_point())


def picked_nodes(found: TypeOffsets, hg: dgl.DGLHeteroGraph, expected: Any, count: int,
                 seed: int) -> tuple[Any, list[torch.Tensor]]:
    """The check's `nodes=` for a result picked by node type (IDs of that type; a dict of them by
    type for a dict of picks), and forward's rows for them, flattened as inference returns them."""
    ntypes = hg.ntypes
    ids = {ntypes[k]: some_nodes(hg.num_nodes(ntypes[k]), max(count // len(found.picked), 1), seed + k)
           for _, k in found.picked}
    if found.picked[0][0] is None:
        ((_, k),) = found.picked
        return ids[ntypes[k]], [expected[ids[ntypes[k]]]]
    return ids, [expected[key][ids[ntypes[k]]] for key, k in found.picked]

"""Stage 8, verify (--check): run the model's full-graph forward and the generated `inference`
on a seeded random graph (with zero-in-degree nodes where the model allows them) and compare."""

from __future__ import annotations

import copy
import functools
import importlib.util
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import dgl
import torch

from gnn_codegen.perturb import perturb
from gnn_codegen.pipeline import Generated


@dataclass(frozen=True)
class BatchResult:
    batch_size: int
    sources: str  # "in place" or "gathered", see gather_sources_always
    max_abs_diff: float
    seconds: float


@dataclass(frozen=True)
class CheckResult:
    num_nodes: int
    num_edges: int
    zero_in_degree_nodes: int
    forward_seconds: float
    batches: tuple[BatchResult, ...]
    atol: float
    rtol: float
    ok: bool

    @property
    def max_abs_diff(self) -> float:
        return max(b.max_abs_diff for b in self.batches)


def random_graph(num_nodes: int, avg_degree: int = 5, seed: int = 0, zero_in_degree: bool = True) -> dgl.DGLGraph:
    """Edges drawn uniformly; with zero_in_degree, one node in ten receives no edge at all,
    otherwise every node also gets a self-loop."""
    gen = torch.Generator().manual_seed(seed)
    num_edges = num_nodes * avg_degree
    src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    if zero_in_degree:
        keep = dst % 10 != 3
        src, dst = src[keep], dst[keep]
    else:
        loops = torch.arange(num_nodes)
        src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    return dgl.graph((src, dst), num_nodes=num_nodes)


def import_source(source: str, model_dir: Path, name: str = "generated_inference") -> ModuleType:
    """Import generated source as a module (its folder beside the model's, for local imports)."""
    with tempfile.TemporaryDirectory(prefix="gnn_codegen_check_") as folder:
        path = Path(folder) / f"{name}.py"
        path.write_text(source)
        module_name = f"_gnn_codegen_generated_{abs(hash(source))}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(model_dir.resolve()))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(model_dir.resolve()))
    return module


def gather_sources_always(module: ModuleType) -> ModuleType:
    """Make an imported generated module gather every layer's source rows, as it does when they
    are not on the device (a GPU): on the CPU, layers that only aggregate read the rows in
    place instead. check() runs both ways, so both are proven on a machine without a GPU."""
    for name, helper in list(vars(module).items()):
        if name.startswith("_full_neighbour_blocks") and callable(helper):
            setattr(module, name, functools.partial(_without_all_sources, helper))
    return module


def _without_all_sources(helper: Any, g: dgl.DGLGraph, batch_size: int, progress: bool = False,
                         all_sources: bool = False) -> Any:
    return helper(g, batch_size, progress)


def full_graph_forward(model: torch.nn.Module, generated: Generated, g: dgl.DGLGraph,
                       inputs: list[torch.Tensor]) -> Any:
    # distinct graph objects over the same structure: `block is blocks[-1]` must mean what it says
    blocks = [g.local_var() for _ in range(generated.program.num_blocks)]
    graph_arg: Any = blocks if generated.program.blocks_style else g
    with torch.no_grad():
        return model(graph_arg, *inputs)


def make_inputs(generated: Generated, num_nodes: int, seed: int, num_edges: int | None = None) -> list[torch.Tensor]:
    """Seeded random inputs for forward: node inputs get num_nodes rows, edge inputs num_edges."""
    gen = torch.Generator().manual_seed(seed + 1)
    edges = num_nodes if num_edges is None else num_edges
    return [spec.example(num_nodes, edges, gen) for spec in generated.attributes.inputs]


def generated_model(generated: Generated, module: ModuleType) -> torch.nn.Module:
    """The generated class holding the original model's state_dict."""
    cls = getattr(module, generated.loaded.class_name)
    reference = generated.loaded.model
    try:
        model = cls(**dict(generated.loaded.init))
    except TypeError:  # NAME was a factory function: same modules, generated class
        model = copy.deepcopy(reference)
        model.__class__ = cls
    model.load_state_dict(reference.state_dict())
    return model.eval()


def _flatten(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _flatten(v)]


def max_difference(a: Any, b: Any) -> float:
    pairs = list(zip(_flatten(a), _flatten(b), strict=True))
    return max(float((x - y).abs().max()) if x.numel() else 0.0 for x, y in pairs)


def allclose(a: Any, b: Any, atol: float, rtol: float) -> bool:
    return all(torch.allclose(x, y, atol=atol, rtol=rtol) for x, y in zip(_flatten(a), _flatten(b), strict=True))


def check(generated: Generated, num_nodes: int = 1000, seed: int = 0,
          batch_sizes: tuple[int, ...] | None = None, atol: float = 1e-4, rtol: float = 1e-4) -> CheckResult:
    reference = generated.loaded.model
    perturb(reference, seed)
    reference.eval()
    models = {
        "in place": generated_model(generated, import_source(generated.source, generated.loaded.path.parent)),
        "gathered": generated_model(generated, gather_sources_always(
            import_source(generated.source, generated.loaded.path.parent, "generated_gathering")
        )),
    }
    g = random_graph(num_nodes, seed=seed, zero_in_degree=True)
    inputs = make_inputs(generated, num_nodes, seed, g.num_edges())
    try:
        full_graph_forward(reference, generated, g, inputs)
    except dgl.DGLError as exc:
        if "in-degree" not in str(exc):
            raise
        g = random_graph(num_nodes, seed=seed, zero_in_degree=False)  # the model refuses them
        inputs = make_inputs(generated, num_nodes, seed, g.num_edges())
    zero_in = int((g.in_degrees() == 0).sum())
    started = time.perf_counter()
    expected = full_graph_forward(reference, generated, g, inputs)
    forward_seconds = time.perf_counter() - started
    results, ok = [], True
    for batch_size in batch_sizes or (97, num_nodes + 1):
        for sources, model in models.items():
            started = time.perf_counter()
            actual = model.inference(g, *inputs, batch_size=batch_size, device="cpu")
            seconds = time.perf_counter() - started
            results.append(BatchResult(batch_size, sources, max_difference(actual, expected), seconds))
            ok = ok and allclose(actual, expected, atol, rtol)
    return CheckResult(num_nodes, g.num_edges(), zero_in, forward_seconds, tuple(results), atol, rtol, ok)

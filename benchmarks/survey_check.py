"""The survey's own check of a written module, independent of gnn-codegen's check before writing:
build a case's graph and forward's arguments from the table (tests/models/survey/cases.py) on a
seeded torch.Generator, run the user's forward and the generated `inference` for two batch sizes,
and compare every result. Needs torch and dgl only (never gnn_codegen), so it judges a module
written by any tree.

    python benchmarks/survey_check.py NAME GENERATED.py     # prints one JSON line
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import dgl
import torch

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.models.survey.cases import SurveyCase, by_name  # noqa: E402

NUM_NODES = 200
NUM_EDGES = 800
NODES_PER_TYPE = 50
EDGES_PER_RELATION = 150
BATCH_SIZES = (7, 64)
TOLERANCE = 1e-4  # relative to the largest magnitude of the forward's result (at least 1)


def _relations(schema: str) -> list[tuple[str, str, str]]:
    return [tuple(r.split(":")) for r in schema.split(",")]  # type: ignore[misc]


def _homo_graph(gen: torch.Generator, self_loops: bool) -> dgl.DGLGraph:
    # a tenth of the nodes get no in-edge (unless self-loops are added, as users of modules that
    # refuse such nodes do)
    dst_pool = torch.randperm(NUM_NODES, generator=gen)[: NUM_NODES - NUM_NODES // 10]
    src = torch.randint(0, NUM_NODES, (NUM_EDGES,), generator=gen)
    dst = dst_pool[torch.randint(0, len(dst_pool), (NUM_EDGES,), generator=gen)]
    g = dgl.graph((src, dst), num_nodes=NUM_NODES)
    return dgl.add_self_loop(g) if self_loops else g


def _hetero_graph(gen: torch.Generator, schema: str, num_nodes: dict | None, every_node_reached: bool):
    counts = {}
    for s, _, d in _relations(schema):
        for t in (s, d):
            counts[t] = (num_nodes or {}).get(t, NODES_PER_TYPE)
    data = {}
    for s, r, d in _relations(schema):
        src = torch.randint(0, counts[s], (EDGES_PER_RELATION,), generator=gen)
        dst = torch.randint(0, counts[d], (EDGES_PER_RELATION,), generator=gen)
        if every_node_reached:
            src = torch.cat([src, torch.randint(0, counts[s], (counts[d],), generator=gen)])
            dst = torch.cat([dst, torch.arange(counts[d])])
        data[(s, r, d)] = (src, dst)
    return dgl.heterograph(data, num_nodes_dict=counts)


def build_graph(case: SurveyCase, seed: int) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    if case.graph == "homo":
        g = _homo_graph(gen, case.self_loops)
    elif case.graph == "hetero":
        g = _hetero_graph(gen, case.relations, case.num_nodes, case.self_loops)
    elif case.graph == "typed":
        # the homogeneous graph dgl.to_homogeneous makes: NTYPE/ETYPE and the parent's NID/EID
        g = dgl.to_homogeneous(_hetero_graph(gen, case.relations, case.num_nodes, case.self_loops))
    else:
        raise ValueError(f"unknown graph kind {case.graph!r}")
    for where, fields in case.gdata.items():
        for name, shape in fields.items():
            frame = g.ndata if where == "ndata" else g.edata
            rows = g.num_nodes() if where == "ndata" else g.num_edges()
            frame[name] = torch.rand((rows, *shape), generator=gen) * 0.9 + 0.1
    return g


def build_args(case: SurveyCase, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """forward's arguments and inference's (the same, with a blocks list replaced by its graph).
    Every call builds fresh graphs: forward may write fields on the graph it is given."""
    gen = torch.Generator().manual_seed(seed + 1)
    g = build_graph(case, seed)
    forward_args: list[Any] = []
    inference_args: list[Any] = []
    for spec in case.args:
        kind, _, rest = spec.partition(":")
        if kind == "g":
            forward_args.append(g)
            inference_args.append(g)
        elif kind == "g2":
            other = build_graph(case, seed + 100)
            forward_args.append(other)
            inference_args.append(other)
        elif kind == "blocks":
            if case.parent_ids:
                sampled = build_graph(case, seed)
                sampled.ndata[dgl.NID] = torch.arange(g.num_nodes())
                g.ndata[dgl.NID] = torch.randperm(g.num_nodes(), generator=gen)
                forward_args.append([sampled] * int(rest))
            else:
                forward_args.append([g] * int(rest))
            inference_args.append(g)
        elif kind == "graphs":
            graphs = [build_graph(case, seed + 100 + k) for k in range(int(rest))]
            forward_args.append(graphs)
            inference_args.append(graphs)
        else:
            value = _tensor(kind, rest, g, gen)
            forward_args.append(value)
            inference_args.append(value)
    return forward_args, inference_args


def _tensor(kind: str, rest: str, g: dgl.DGLGraph, gen: torch.Generator) -> Any:
    if kind == "x":
        return torch.randn(g.num_nodes(), int(rest), generator=gen)
    if kind == "xt":
        ntype, width = rest.split(":")
        return torch.randn(g.num_nodes(ntype), int(width), generator=gen)
    if kind == "seq":
        steps, width = rest.split(":")
        return torch.randn(g.num_nodes(), int(steps), int(width), generator=gen)
    if kind == "ids":
        return torch.randint(0, int(rest), (g.num_nodes(),), generator=gen)
    if kind == "e":
        return torch.randn(g.num_edges(), int(rest), generator=gen)
    if kind == "hd":
        return {t: torch.randn(g.num_nodes(t), int(w), generator=gen)
                for t, w in (item.split("=") for item in rest.split(","))}
    raise ValueError(f"unknown argument spec {kind!r}")


def user_class(case: SurveyCase) -> type:
    module = importlib.import_module(f"tests.models.survey.{case.family}")
    return getattr(module, case.name)


def build_model(cls: type, case: SurveyCase) -> torch.nn.Module:
    # the same seed for every build: modules kept in plain Python lists are not in state_dict
    torch.manual_seed(0)
    model = cls(**(case.init or {}))
    return model.eval()


def reference_model(case: SurveyCase) -> torch.nn.Module:
    model = build_model(user_class(case), case)
    gen = torch.Generator().manual_seed(7)
    for module in model.modules():
        # normalisation statistics away from their (0, 1) start, as a trained model's are
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.running_mean is not None:
            module.running_mean.copy_(torch.randn(module.running_mean.shape, generator=gen) * 0.3)
            module.running_var.copy_(torch.rand(module.running_var.shape, generator=gen) + 0.5)
    return model


def flatten(value: Any, path: str = "") -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [(path or "result", value)]
    if isinstance(value, dict):
        return [item for key in sorted(value, key=str) for item in flatten(value[key], f"{path}[{key!r}]")]
    if isinstance(value, (tuple, list)):
        return [item for i, v in enumerate(value) for item in flatten(v, f"{path}[{i}]")]
    raise TypeError(f"cannot compare a {type(value).__name__} at {path or 'result'}")


def compare(reference: Any, result: Any) -> tuple[float, str]:
    """The largest difference relative to the reference's magnitude, and where; inf when the
    structure or a shape differs."""
    ref, out = flatten(reference), flatten(result)
    if [p for p, _ in ref] != [p for p, _ in out]:
        return float("inf"), f"structure differs: {[p for p, _ in ref]} vs {[p for p, _ in out]}"
    worst, where = 0.0, ""
    for (path, a), (_, b) in zip(ref, out):
        if a.shape != b.shape:
            return float("inf"), f"{path}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        a64, b64 = a.double(), b.double().to(a.device)
        both_nan = torch.isnan(a64) & torch.isnan(b64)
        diff = (a64 - b64).abs().masked_fill(both_nan, 0.0)
        scale = max(1.0, float(a64.abs().masked_fill(torch.isnan(a64), 0.0).max()) if a64.numel() else 1.0)
        rel = float(diff.max()) / scale if diff.numel() else 0.0
        if rel != rel:  # NaN where the reference has none
            rel = float("inf")
        if rel > worst:
            worst, where = rel, path
    return worst, where


def _depth_note(case: SurveyCase, written: torch.nn.Module) -> str:
    """Where forward takes blocks, the depth the written inference assumed (its docstring says
    `self.forward([g] * N, ...)`), when it is not the number of blocks the case calls forward with."""
    blocks = [int(spec.split(":")[1]) for spec in case.args if spec.startswith("blocks:")]
    match = re.search(r"forward\(\[g\] \* (\d+)", written.inference.__doc__ or "")
    if blocks and match and int(match.group(1)) != blocks[0]:
        return (f"; the written inference computes forward([g] * {match.group(1)}, ...) (its docstring), "
                f"forward was called with {blocks[0]} blocks")
    return ""


def check(name: str, generated: Path) -> dict:
    case = by_name()[name]
    reference = reference_model(case)
    spec = importlib.util.spec_from_file_location(f"survey_generated_{name}", generated)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    written = build_model(getattr(module, name), case)
    written.load_state_dict(reference.state_dict())
    with torch.no_grad():
        forward_args, _ = build_args(case)
        try:
            expected = reference(*forward_args)
        except Exception as exc:  # the survey's own inputs are wrong: say so, never blame the tool
            return {"outcome": "harness-error", "detail": f"forward failed: {type(exc).__name__}: {exc}"}
        worst, where = 0.0, ""
        for batch_size in BATCH_SIZES:
            _, inference_args = build_args(case)
            try:
                got = written.inference(*inference_args, batch_size=batch_size, device="cpu")
            except Exception as exc:
                return {"outcome": "inference-error",
                        "detail": f"batch_size={batch_size}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            rel, at = compare(expected, got)
            if rel > worst:
                worst, where = rel, f"{at} (batch_size={batch_size})"
    if worst > TOLERANCE:
        return {"outcome": "WRONG", "max_rel_diff": worst,
                "detail": f"largest difference at {where}{_depth_note(case, written)}"}
    return {"outcome": "exact", "max_rel_diff": worst, "detail": ""}


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1], Path(sys.argv[2]))))

"""--explain for a heterogeneous model: each layer as the generated code runs it, per destination
node type, with every dict of rows it stores (shape, dtype, bytes per node and for a number of
nodes of each type) and the rows its relations compute once per node before the type's batches
(kept while they run). The shapes are measured: the generated inference runs once on a small
random heterograph of the schema, as the check before writing does.

JSON schema ("gnn-codegen/explain-hetero/1"):
  model: "FILE:NAME"; node_types: [str]; relations: [[src, etype, dst]]; nodes_per_type: int
  stages: [{index: 0 (each node's own features, before layer 1) or k, what: str,
            types: [{ntype, stores: [{tensor, shape, dtype, bytes_per_row, bytes}],
                     relation_rows: [{relation: [src, etype, dst], parts: [{shape, dtype}],
                                      bytes_per_row, bytes}]}]}]
  stored_bytes: every stored row, for nodes_per_type nodes of each type
  peak_relation_rows_bytes: the most relation rows kept at once (one type's, in one layer)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from gnn_codegen.render.hetero import RUNTIME
from gnn_codegen.load.hetero_schema import random_heterograph

if TYPE_CHECKING:
    from gnn_codegen.generated import Generated

SCHEMA = "gnn-codegen/explain-hetero/1"
# nodes of each type of the graph the generated code runs on to measure its rows' shapes
_PROBE_NODES = 120


def explain_hetero(generated: Generated, nodes_per_type: int) -> dict[str, Any]:
    calls = _measured_calls(generated)
    stages = []
    for stage, what, types in generated.hetero_layout:
        entries = []
        for ntype, names, _ in types:
            stored, relation_rows = calls.pop(0)
            entries.append({
                "ntype": ntype,
                "stores": [_row(f'{name}["{ntype}"]', t, nodes_per_type) for name, t in zip(names, stored)],
                "relation_rows": [_relation_rows(rel, parts, nodes_per_type) for rel, parts in relation_rows],
            })
        stages.append({"index": stage, "what": what, "types": entries})
    stored_bytes = sum(s["bytes"] for stage in stages for t in stage["types"] for s in t["stores"])
    peak_relation_rows = max((sum(r["bytes"] for r in t["relation_rows"]) for stage in stages
                              for t in stage["types"]), default=0)
    return {"schema": SCHEMA, "model": generated.target, "node_types": list(generated.schema.ntypes),
            "relations": [list(r) for r in generated.schema.relations], "nodes_per_type": nodes_per_type,
            "stages": stages, "stored_bytes": stored_bytes, "peak_relation_rows_bytes": peak_relation_rows}


def _row(name: str | None, shape_dtype: tuple[tuple[int, ...], torch.dtype], nodes: int) -> dict[str, Any]:
    shape, dtype = shape_dtype
    per_row = int(torch.Size(shape).numel()) * torch.empty(0, dtype=dtype).element_size()
    row = {"shape": list(shape), "dtype": str(dtype).removeprefix("torch."), "bytes_per_row": per_row,
           "bytes": per_row * nodes}
    return row if name is None else {"tensor": name, **row}


def _relation_rows(rel: tuple[str, str, str], parts: list[Any], nodes: int) -> dict[str, Any]:
    rows = [_row(None, part, nodes) for part in parts]
    per_row = sum(r["bytes_per_row"] for r in rows)
    return {"relation": list(rel), "parts": [{"shape": r["shape"], "dtype": r["dtype"]} for r in rows],
            "bytes_per_row": per_row, "bytes": per_row * nodes}


def _measured_calls(generated: Generated) -> list[tuple[list[Any], list[Any]]]:
    """For each batch loop the generated inference runs (map_rows before layer 1, then map per
    layer and type, in order): the (row shape, dtype) of each result, and of each relation's
    rows that map_sources made for it."""
    from gnn_codegen.verify.hetero import inference_arguments, cut_tables, random_inputs, node_counts
    from gnn_codegen.analysis.perturb import perturb
    from gnn_codegen.verify.check import instantiate

    import copy

    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 0)
    model, module = instantiate(generated, reference, "generated_hetero_explain", gather=False)
    runtime = getattr(module, RUNTIME)
    calls: list[tuple[list[Any], list[Any]]] = []
    made: list[Any] = []  # relation rows made since the last batch loop
    inside = []  # map_sources runs map_rows itself: not a loop of the method's

    def shapes(value: Any) -> list[Any]:
        values = value if isinstance(value, tuple) else (value,)
        return [(tuple(v.shape[1:]), v.dtype) for v in values]

    def recording(original: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            if not inside:
                calls.append((shapes(result), list(made)))
                made.clear()
            return result
        return run

    def sources(original: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            inside.append(1)
            try:
                result = original(self, *args, **kwargs)
            finally:
                inside.pop()
            made.extend((rel, shapes(rows)) for rel, rows in result.items())
            return result
        return run

    runtime.map = recording(runtime.map)
    runtime.map_rows = recording(runtime.map_rows)
    if hasattr(runtime, "map_sources"):
        runtime.map_sources = sources(runtime.map_sources)
    counts = node_counts(generated, _PROBE_NODES * len(generated.schema.ntypes))
    with cut_tables(generated, counts, model):
        g = random_heterograph(generated.schema, counts, seed=0)
        arguments = inference_arguments(generated, g, random_inputs(generated, counts, 0))
        with torch.no_grad():
            getattr(model, generated.method_name)(g, *arguments.values(), batch_size=64, device="cpu")
    return calls


def explain_hetero_text(data: dict[str, Any]) -> str:
    from gnn_codegen.explain.plan_text import human_bytes

    layers = sum(1 for s in data["stages"] if s["index"])
    lines = [f"Plan for {data['model']}: {layers} layer{'s' if layers != 1 else ''} on a heterogeneous graph "
             f"({len(data['node_types'])} node types, {len(data['relations'])} relations); bytes for "
             f"{data['nodes_per_type']:,} nodes of each type."]
    for stage in data["stages"]:
        lines += ["", stage["what"] + "."]
        for entry in stage["types"]:
            lines.append(f"  into {entry['ntype']}:")
            for rows in entry["relation_rows"]:
                src, etype, _ = rows["relation"]
                parts = " + ".join(_shape(part) for part in rows["parts"])
                lines.append(f"    first  {etype}, once per {src} node: {parts} ({rows['bytes_per_row']} B), "
                             f"{human_bytes(rows['bytes'])}, kept for the batches")
            for store in entry["stores"]:
                lines.append(f"    store  {store['tensor']}: {_shape(store)} ({store['bytes_per_row']} B), "
                             f"{human_bytes(store['bytes'])}")
    lines += [
        "",
        f"Stored: {human_bytes(data['stored_bytes'])} (each layer's results for every node of its types, in host "
        "memory, or in files with storage=; a layer's inputs are freed after the last layer that reads them).",
    ]
    if data["peak_relation_rows_bytes"]:
        lines.append(f"Relation rows kept at once: at most {human_bytes(data['peak_relation_rows_bytes'])} (in files "
                     "too with storage=).")
    return "\n".join(lines) + "\n"


def _shape(row: dict[str, Any]) -> str:
    return f"{'x'.join(map(str, row['shape'])) or '1'} {row['dtype']}"

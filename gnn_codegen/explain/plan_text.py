"""--explain: the plan as a person reads it (text), as a program reads it (JSON), and as a
picture (Graphviz DOT): stages and their ops, every stored tensor with its rows, width, dtype
and bytes, and the total cost against the simple rule's (a cut right after each layer).

JSON schema ("gnn-codegen/explain/1"), every byte count for `nodes` nodes:
  model: "FILE:NAME"; nodes: int; fanout: float (source rows gathered per stored row, and
  edges per node); optimal: bool (false when the search stopped early, see cut.py)
  stages: [{index: 0 (the prologue) or k, kind: "prologue" | "layer" | "pass" (over ranges of
            nodes, between layers or after the last: cut.mp_depths), layer: the layer's number,
            or how many layers come before the stage, name: "layer 2", "pass before layer 3", ...,
            ops: [{value, what, rows: "src" | "dst" | "edge" | "node", source}],
            loads: [{tensor, rows}], stores: [tensor], frees: [tensor]}]
  tensors: [{tensor (its name in the generated code), value (the op), input: bool,
             written_in: stage index (0 for inputs and the prologue), rows: "node" | "edge",
             shape: [int] (after the row dimension), dtype, bytes_per_row,
             read_in: [{stage, rows}], stored_bytes, reloaded_bytes}]
  cost, simple_rule_cost: {stored_bytes, reloaded_bytes, total_bytes, work_bytes}
  saving: 1 - cost.total_bytes / simple_rule_cost.total_bytes
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from gnn_codegen.cut.cost import Cost, transfers
from gnn_codegen.trace.edge_weight_norm import EDGE_WEIGHT_NORM
from gnn_codegen.ir import Op
from gnn_codegen.analysis.node_reductions import node_reduction
from gnn_codegen.generated import Generated
from gnn_codegen.cut.plan import spell_graph

SCHEMA = "gnn-codegen/explain/1"
DEFAULT_NODES = 1_000_000
_ROWS = {"src": "source rows", "dst": "destination rows", "edge": "edges", "node": "node rows"}
# one fill colour per stage (the prologue first), cycled for deep models
_COLOURS = ("#e8e8e8", "#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd")


def describe_op(op: Op) -> str:
    if op.helper and op.kind != "mp":  # a written-out convolution's work per source row
        return f"{op.accessor} ({op.class_name})'s per-node work"  # once per node, for its source rows
    if op.kind == "graph_value":
        return f"{op.accessor}(g, ...)" if op.target == EDGE_WEIGHT_NORM else f"g.{op.target}()"
    if op.kind in ("mp", "module"):
        return f"{op.accessor} ({op.class_name})"
    if op.kind == "method":
        return f".{op.target}()"
    if op.kind == "input":
        return f"input {op.target}"
    return op.target.removeprefix("operator.")


def _cost(cost: Cost, nodes: int) -> dict[str, float]:
    return {
        "stored_bytes": cost.stored * nodes, "reloaded_bytes": cost.reloaded * nodes,
        "total_bytes": cost.total * nodes, "work_bytes": cost.work * nodes,
    }


def _reduction(op: Op, info: dict[str, Any]) -> str:
    """`.mean(0)`: how a reduction over all nodes reduces (node_reductions.py)."""
    reduction = node_reduction(op, lambda name: info[name].rows)
    return describe_op(op) if reduction is None else f".{reduction.how}({'0' if reduction.over_rows_only else ''})"


def shown_indices(plan: Any) -> dict[int, int]:
    """The cut's stage index -> the one --explain shows: the stages that run, numbered in order
    (the cut also numbers the passes before layers that nothing took, cut.pass_slots)."""
    first = 0 if plan.stages and plan.stages[0].index == 0 else 1
    return {0: 0, **{stage.index: position + first for position, stage in enumerate(plan.stages)}}


def explain_data(generated: Generated, nodes: int = DEFAULT_NODES) -> dict[str, Any]:
    program, plan, cut = generated.program, generated.plan, generated.plan.cut
    shown = shown_indices(plan)
    buffers = dict(generated.buffers)
    info = generated.attributes.as_dict()
    stages = []
    for stage in plan.stages:
        ops = []
        for placed in stage.ops:
            op = program.op(placed.name)
            ops.append({
                "value": op.name, "what": describe_op(op),
                "rows": "node" if stage.index == 0 or stage.node_pass else placed.space, "source": op.location,
            })
        graph = spell_graph(program, program.op(stage.graph)) if stage.graph else ""
        stages.append({
            "index": shown[stage.index], "kind": _kind(stage), "layer": stage.layer, "name": plan.stage_name(stage),
            "ops": ops,
            "graph": graph,  # the graph whose blocks the layer runs on, as forward spells it
            "loads": [{"tensor": buffers[v], "rows": "node" if stage.index == 0 or stage.node_pass else rows}
                      for v, rows in stage.loads],
            "stores": [buffers[v] for v in stage.stores], "frees": [buffers[v] for v in stage.frees],
            # reductions over all nodes, in a pass over stored rows before the batch loop
            "reductions": [{"value": buffers.get(r, r), "of": buffers.get(v, v), "what": _reduction(program.op(r), info),
                            "source": program.op(r).location} for r, v in stage.reductions],
        })
    tensors = []
    for t in transfers(cut.nodes, cut.placement, cut.fanout):
        value = info[t.name]
        tensors.append({
            "tensor": buffers.get(t.name, t.name), "value": t.name, "input": program.op(t.name).kind == "input",
            "written_in": shown[t.stage], "rows": t.rows, "shape": list(value.shape),
            "dtype": value.dtype.replace("torch.", ""), "bytes_per_row": t.row_bytes,
            "read_in": [{"stage": shown[k], "rows": rows} for k, rows in t.loads],
            "stored_bytes": t.stored * nodes, "reloaded_bytes": t.reloaded * nodes,
        })
    cost, simple = _cost(cut.cost, nodes), _cost(cut.simple_cost, nodes)
    return {
        "schema": SCHEMA, "model": generated.target, "nodes": nodes, "fanout": cut.fanout,
        "optimal": cut.placement.optimal, "stages": stages, "tensors": tensors,
        "cost": cost, "simple_rule_cost": simple,
        "saving": 1 - cost["total_bytes"] / simple["total_bytes"] if simple["total_bytes"] else 0.0,
    }


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError


def _kind(stage: Any) -> str:
    return "prologue" if stage.index == 0 else "pass" if stage.node_pass else "layer"


def stage_names(data: dict[str, Any]) -> dict[int, str]:
    """Stage index -> `prologue`, `layer 2`, `pass before layer 3`, `pass after the last layer`."""
    return {0: "prologue", **{s["index"]: s["name"] for s in data["stages"]}}


def explain_text(data: dict[str, Any]) -> str:
    num_layers = sum(1 for s in data["stages"] if s["kind"] == "layer")
    names = stage_names(data)
    lines = [
        f"Plan for {data['model']}: {num_layers} layer{'s' if num_layers != 1 else ''}"
        + (", with a prologue" if any(s["kind"] == "prologue" for s in data["stages"]) else "")
        + f"; costs for {data['nodes']:,} nodes, fanout {data['fanout']:g}.",
    ]
    for stage in data["stages"]:
        title = {"prologue": "Prologue (once per node)", "layer": f"Layer {stage['layer']} of {num_layers}",
                 "pass": names[stage["index"]].capitalize() + " (once per node)"}[stage["kind"]]
        if stage.get("graph") and "(" in stage["graph"]:  # a graph forward derives from its own
            title += f", on {stage['graph']}"
        lines += ["", title]
        for reduction in stage.get("reductions", []):
            lines.append(f"  reduce {reduction['of']}{reduction['what']} over all nodes, before the batches "
                         f"(read as {reduction['value']})")
        for load in stage["loads"]:
            lines.append(f"  load   {load['tensor']} on {_ROWS[load['rows']]}")
        for op in stage["ops"]:
            lines.append(f"  run    {op['what']} on {_ROWS[op['rows']]}")
        for name in stage["stores"]:
            lines.append(f"  store  {name}")
        if stage["frees"]:
            lines.append(f"  free   {', '.join(stage['frees'])}")
    header = ("tensor", "written", "read", "shape", "dtype", "bytes/row", "stored", "reloaded")
    rows = [header]
    for t in data["tensors"]:
        read = ", ".join(f"{names[r['stage']]} ({r['rows']})" for r in t["read_in"]) or "output"
        rows.append((
            t["tensor"], "input" if t["input"] else names[t["written_in"]], read,
            "x".join(map(str, t["shape"])) + (" per edge" if t["rows"] == "edge" else ""), t["dtype"],
            str(t["bytes_per_row"]), human_bytes(t["stored_bytes"]), human_bytes(t["reloaded_bytes"]),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["", "Stored tensors (written to host memory for every row, reloaded by later stages):"]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    cost, simple = data["cost"], data["simple_rule_cost"]
    lines += [
        "",
        f"Total: {human_bytes(cost['stored_bytes'])} stored + {human_bytes(cost['reloaded_bytes'])} reloaded "
        f"= {human_bytes(cost['total_bytes'])}.",
        f"Simple rule (cut right after each layer): {human_bytes(simple['total_bytes'])}"
        + (f"; this plan moves {data['saving']:.0%} fewer bytes." if data["saving"] > 0.0005 else "; the same plan."),
    ]
    if not data["optimal"]:
        lines.append("The search stopped early: this is the cheapest plan found, not proven the cheapest.")
    return "\n".join(lines) + "\n"


def explain_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def _dot_id(name: str) -> str:
    return json.dumps(name)


def explain_dot(generated: Generated, data: dict[str, Any]) -> str:
    """The traced graph (inline expressions folded into their readers), one cluster per stage,
    stored tensors drawn with a double border and their edges to later stages bold."""
    program, cut = generated.program, generated.plan.cut
    shown = shown_indices(generated.plan)
    stage_of = {name: shown[k] for name, k in cut.placement.stage}
    stored = {t["value"]: t for t in data["tensors"]}
    num_layers = sum(1 for s in data["stages"] if s["kind"] == "layer")
    names = stage_names(data)
    lines = [
        "digraph plan {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [color="#666666"];',
        f"  label={_dot_id(_dot_title(data, cut))};",
        '  labelloc=t; fontname="Helvetica";',
    ]
    by_stage: dict[int, list[str]] = {}
    for node in cut.nodes:
        by_stage.setdefault(stage_of[node.name], []).append(node.name)
    info = generated.attributes.as_dict()
    for index in sorted(by_stage):
        title = "inputs and prologue" if index == 0 else names.get(index, f"stage {index}")
        title += f" of {num_layers}" if title.startswith("layer ") else ""
        lines += [f"  subgraph cluster_{index} {{", f"    label={_dot_id(title)};", '    style="rounded";']
        colour = _COLOURS[index % len(_COLOURS)]
        for name in by_stage[index]:
            op = program.op(name)
            shape = "x".join(map(str, info[name].shape)) if info[name].rows in ("node", "edge") else "tuple"
            label = f"{describe_op(op)}\n{shape}"
            attrs = [f"label={_dot_id(label)}", f'fillcolor="{colour}"']
            if op.kind == "mp":
                attrs.append("penwidth=2")
            if name in stored and op.kind != "input":
                attrs.append("peripheries=2")
                t = stored[name]
                attrs[0] = f"label={_dot_id(label + chr(10) + 'stored: ' + t['tensor'])}"
            lines.append(f"    {_dot_id(name)} [{', '.join(attrs)}];")
        lines.append("  }")
    for node in cut.nodes:
        for dep in dict.fromkeys(node.deps):
            crosses = stage_of[dep] < stage_of[node.name] or program.op(dep).kind == "input"
            style = ' [penwidth=2.5, color="#cc0000"]' if crosses and dep in stored else ""
            lines.append(f"  {_dot_id(dep)} -> {_dot_id(node.name)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_title(data: dict[str, Any], cut: Any) -> str:
    return (f"{data['model']}: {cut.cost.total:g} bytes stored and reloaded per node "
            f"(simple rule: {cut.simple_cost.total:g}), fanout {cut.fanout:g}")


def render_dot(dot_path: Path) -> list[Path]:
    """SVG and PNG beside the DOT file when Graphviz's `dot` is installed; [] otherwise."""
    dot = shutil.which("dot")
    if dot is None:
        return []
    written = []
    for fmt in ("svg", "png"):
        out = dot_path.with_suffix(f".{fmt}")
        subprocess.run([dot, f"-T{fmt}", str(dot_path), "-o", str(out)], check=True, capture_output=True)
        written.append(out)
    return written


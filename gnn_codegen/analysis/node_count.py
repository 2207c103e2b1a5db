"""Part of stage 4, infer attributes: tables of the model that forward indexes by node ID
(XGCN's `self.base_emb_table(blocks[0].srcdata[dgl.NID])`). Such a table has a row per node of the
graph the model was built for, so it fixes the graph's node count: the check before writing runs
on a graph of that many nodes (verify.py), and the generated inference refuses another (render.py)."""

from __future__ import annotations

import torch

from gnn_codegen.analysis.input_specs import InputSpec
from gnn_codegen.ir import Program, Ref


def tables_by_node_id(program: Program, model: torch.nn.Module,
                      inputs: tuple[InputSpec, ...]) -> tuple[tuple[str, int], ...]:
    """(the table's attribute path, its rows) for each nn.Embedding that forward calls on node
    IDs of its graph (a block's srcdata[dgl.NID], which layer-wise inference reads as 0, 1, ...
    of the whole graph)."""
    ids = {spec.name for spec in inputs if spec.ids_in_g and spec.rows == "node"}
    found: dict[str, int] = {}
    for op in program.ops:
        if op.kind != "module" or not op.args or not isinstance(op.args[0], Ref) or op.args[0].name not in ids:
            continue
        module = model.get_submodule(str(op.target))
        if isinstance(module, torch.nn.Embedding):
            found[str(op.target)] = int(module.num_embeddings)
    return tuple(found.items())


def fixed_node_count(tables: tuple[tuple[str, int], ...]) -> int | None:
    """The node count the tables fix (the smallest, where they disagree: forward fails on more)."""
    return min((rows for _, rows in tables), default=None)

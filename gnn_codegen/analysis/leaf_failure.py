"""Part of stage 4, infer attributes: a user's message-passing module, kept whole, that fails on
the probe graph. What it reads there is hidden from the tracer (XGCN's LightGCNConv reads the
graph's edge field 'ew' inside), so the pipeline traces into it (pipeline._proven_program), where
its graph reads become inputs and its update_all calls hops of their own."""

from __future__ import annotations

import torch.fx as fx

from gnn_codegen.errors import UnsupportedModuleError
from gnn_codegen.ir import Program
from gnn_codegen.analysis.known_modules import is_dgl_module, is_message_passing


def user_module_failed(gm: fx.GraphModule, program: Program, node: fx.Node | None, failure: str) -> None:
    """Raise UnsupportedModuleError naming the module class (for the pipeline to trace into)
    when the probe run failed in a user's message-passing module kept as a leaf."""
    if node is None or node.op != "call_module":
        return
    module = gm.get_submodule(str(node.target))
    if is_dgl_module(module) or not is_message_passing(module):
        return
    op = next((op for op in program.ops if op.name == node.name), None)
    where = f"{op.location}: " if op is not None and op.location else ""
    error = UnsupportedModuleError(
        f"{where}self.{node.target} ({type(module).__name__}) fails on a probe graph with {failure}; "
        "gnn-codegen cannot tell what it reads from the graph. Pass what it reads as an argument of "
        "its forward, or evaluate this model with its full-graph forward."
    )
    error.module_class = type(module)  # type: ignore[attr-defined]  # pipeline.py traces into it
    error.traced_into_explains = True  # type: ignore[attr-defined]
    raise error

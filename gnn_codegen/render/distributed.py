"""The generated `inference` on DistDGL (dgl.distributed): for the programs the distributed
runtime (templates/dist_batches.py.j2) does not run yet, the check at the method's entry that
refuses a DistGraph, naming the user's line (what a DistGraph takes: the runtime's docstring).
The runtime itself dispatches on g (`_FullNeighbourBatches.__new__`): the method's body is the
same on both."""

from __future__ import annotations

from gnn_codegen.ir import Op, Program
from gnn_codegen.render.quoted_lines import line_said, raised


def not_distributed(program: Program, derived: list[Op]) -> str | None:
    """Why forward's program does not run on a DistGraph yet (None: it does): the runtime reads
    one graph, a DistGraph, where forward may not convert it, derive graphs from it, or take
    several."""
    if program.homogenized is not None:
        return f"forward makes its heterograph homogeneous ({program.homogenized[0]})"
    if program.graph_params:
        return "forward takes several graphs"
    if derived:
        op = derived[0]
        where = f" at {line_said(op.location)}" if op.location else ""
        return f"forward derives a graph from its graph, {op.target.rsplit('.', 1)[-1]}{where}"
    for op in program.ops:
        # a message-passing module of the user's, called as a whole: its reduce may read a
        # node's messages in order (a Python mailbox function), and partition_graph renumbers
        # edges without keeping a node's in-edges in order; DGL's own modules and message
        # passing written with dgl.function's builtins do not depend on it
        if op.kind == "mp" and op.mp is not None and not op.mp.inline and op.module_class \
                and not op.module_class.startswith("dgl."):
            where = f" at {line_said(op.location)}" if op.location else ""
            return (f"{op.accessor} ({op.class_name}) is a message-passing module of yours{where}, whose "
                    "reduce may read each node's in-edges in their order, which partition_graph does not keep")
    return None


def refusal(g: str, reason: str) -> list[str]:
    """The lines at the method's entry that refuse a DistGraph, for a program that does not run
    on one (not_distributed)."""
    message = (f"inference on a dgl.distributed.DistGraph is not done yet where {reason}: "
               f"call it with a dgl.DGLGraph")
    return raised(f"isinstance({g}, dgl.distributed.DistGraph)", message)


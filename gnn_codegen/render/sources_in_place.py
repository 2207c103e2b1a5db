"""Stage 6, render: whether a layer's function may read its source rows where they are (the
runtime's `in_place=True`: blocks take all of g's nodes as sources, the stored rows are not
gathered per batch), and where it may not though it reads source rows, why, in words a comment
can say (`self.layers[1] (SAGEConv) reads them outside messages`)."""

from __future__ import annotations

from gnn_codegen.analysis.mp_arguments import mp_feature_spaces
from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Op, Program, Ref


def sources_in_place(program: Program, stage: Stage, node_ranges: bool) -> tuple[bool, str]:
    """(in place, why not): in place where every stored tensor the stage reads on source rows
    feeds only convolutions that touch source rows inside messages (known_modules,
    write_out.py); then, on the device that holds them, the rows are read where they are.
    Why not is "" where the stage reads no source rows, or works on them itself."""
    loads = [name for name, space in stage.loads if space == "src"]
    if node_ranges or not loads:
        return False, ""
    if any(p.space == "src" for p in stage.ops):
        # work on each source row of the batch: its own line's comment says why (layer.py)
        return False, ""
    for placed in stage.ops:
        op = program.op(placed.name)
        if op.kind != "mp":
            continue
        if op.mp is not None and op.mp.as_graph:
            # its graph's first nodes must be the destinations: gathered rows
            return False, f"{_said(op)} takes the block as a graph"
        for value, space in mp_feature_spaces(op):
            direct = isinstance(value, Ref) and value.name in loads
            if space == "src" and not (direct and op.mp and op.mp.sources_in_place):
                return False, f"{_said(op)} reads them outside messages"
    return True, ""


def _said(op: Op) -> str:
    """An op as a comment names it: `self.layers[1] (SAGEConv)`, or the function it calls."""
    if op.accessor:
        return f"{op.accessor} ({op.class_name})" if op.class_name else op.accessor
    return op.held_as or op.target

"""Reductions over all nodes between layers: `h.mean(0)` (PairNorm's centring, HAN's semantic
attention), `h.sum(0)`, `torch.mean(h, dim=0)`, and `.mean()` / `.sum()` of a tensor with a row
per node.

Such a value reads every node's row of h, which a layer-wise loop has only once the layer that
computes h has run over every batch. So it is a stage barrier: h is stored by the stage that
makes it, the reduction is computed in a pass over ranges of the stored rows before a later
stage's batch loop (`h_mean = batches.sum_nodes(h) / h.shape[0]`), and that stage and the
ones after read the result, one small tensor for all batches (ir rows "global"). The cut
places the pass (cut.py: CutNode.reduces). Where no layer follows to read it (reductions that
chain in one gap, one after the last layer), the stage that reads it is a pass over ranges of
nodes of its own (cut.mp_depths).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gnn_codegen.ir import Op, Ref

# the method or function names reduced by summing over ranges of nodes (a mean divides after)
_REDUCERS = frozenset({"sum", "mean"})


@dataclass(frozen=True)
class NodeReduction:
    """`x.mean(0)` and its kin: how it reduces."""

    how: str  # "sum" or "mean"
    over_rows_only: bool  # dim=0 (one value per column); False: every element (`.mean()`)
    keepdim: bool = False


def node_reduction(op: Op, rows_of: Any) -> NodeReduction | None:
    """The reduction `op` makes over the rows of a node tensor, or None. `rows_of(name)`: the
    rows of an op's value ("node", "edge", ...)."""
    name = op.target.rsplit(".", 1)[-1]
    if name not in _REDUCERS or op.kind not in ("method", "function"):
        return None
    if op.kind == "function" and not op.target.startswith(("torch.", "th.")) and "." in op.target:
        return None
    if not op.args or not isinstance(op.args[0], Ref) or rows_of(op.args[0].name) != "node":
        return None
    kwargs = dict(op.kwargs)
    if set(kwargs) - {"dim", "keepdim"}:
        return None  # dtype=..., out=...: not one of the forms written out
    dim = op.args[1] if len(op.args) > 1 else kwargs.get("dim")
    keepdim = bool(op.args[2] if len(op.args) > 2 else kwargs.get("keepdim", False))
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    if dim is None and not keepdim:
        return NodeReduction(name, False)
    if dim == 0:
        return NodeReduction(name, True, keepdim)
    return None


def pass_expression(reduction: NodeReduction, tensor: str, batches: str) -> str:
    """The line's right-hand side that computes the reduction from the stored tensor, summed
    on the device over ranges of nodes."""
    total = f"{batches}.sum_nodes({tensor})"
    if not reduction.over_rows_only:
        total += ".sum()"
    if reduction.how == "mean":
        total += f" / {tensor}.shape[0]" if reduction.over_rows_only else f" / {tensor}.numel()"
    if reduction.keepdim:
        total = f"({total}).unsqueeze(0)"
    return total

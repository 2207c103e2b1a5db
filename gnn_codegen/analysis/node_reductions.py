"""Reductions over all nodes between layers: `h.mean(0)` (PairNorm's centring, HAN's semantic
attention), `h.sum(0)`, `torch.mean(h, dim=0)`, `h.amax(0)` / `h.amin(0)`, `h.std(0)` /
`h.var(0)` (a standardisation over all nodes; `unbiased=` or `correction=`), and the same over
every element of a tensor with a row per node (`.mean()`, `.sum()`, `.max()`, `.min()`,
`.std()`, `.var()`). `h.max(0)`, which also returns the indices of the largest rows, is not one.

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

# the method or function names reduced over ranges of nodes -> the runtime's method for it
# (_FullNeighbourBatches.sum_nodes and its kin: a mean divides a sum, a std is a var's root)
RUNTIME_METHODS = {"sum": "sum_nodes", "mean": "sum_nodes", "amax": "max_nodes", "max": "max_nodes",
                   "amin": "min_nodes", "min": "min_nodes", "var": "var_nodes", "std": "var_nodes"}
# those that take dim=0 (`h.max(0)` returns indices too; `h.max()` only the largest element)
_BY_COLUMN = frozenset({"sum", "mean", "amax", "amin", "var", "std"})
_SPREAD = frozenset({"var", "std"})


@dataclass(frozen=True)
class NodeReduction:
    """`x.mean(0)` and its kin: how it reduces."""

    how: str  # a key of RUNTIME_METHODS
    over_rows_only: bool  # dim=0 (one value per column); False: every element (`.mean()`)
    keepdim: bool = False
    correction: int = 1  # var and std: divide by the count less this (unbiased: 1)

    @property
    def runtime_method(self) -> str:
        return RUNTIME_METHODS[self.how]


def node_reduction(op: Op, rows_of: Any) -> NodeReduction | None:
    """The reduction `op` makes over the rows of a node tensor, or None. `rows_of(name)`: the
    rows of an op's value ("node", "edge", ...)."""
    name = op.target.rsplit(".", 1)[-1]
    if name not in RUNTIME_METHODS or op.kind not in ("method", "function"):
        return None
    if op.kind == "function" and not op.target.startswith(("torch.", "th.")) and "." in op.target:
        return None
    if not op.args or not isinstance(op.args[0], Ref) or rows_of(op.args[0].name) != "node":
        return None
    kwargs = dict(op.kwargs)
    spread = name in _SPREAD
    if set(kwargs) - {"dim", "keepdim", *(("unbiased", "correction") if spread else ())}:
        return None  # dtype=..., out=...: not one of the forms written out
    if len(op.args) > (2 if spread else 3):
        return None  # h.std(0, True): written with keywords only
    dim = op.args[1] if len(op.args) > 1 else kwargs.get("dim")
    keepdim = bool(op.args[2] if len(op.args) > 2 else kwargs.get("keepdim", False))
    correction = kwargs.get("correction", 1 if kwargs.get("unbiased", True) else 0)
    if not isinstance(correction, int) or isinstance(correction, bool) or correction < 0:
        return None
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    if dim is None and not keepdim:
        return NodeReduction(name, False, correction=correction)
    if dim == 0 and name in _BY_COLUMN:
        return NodeReduction(name, True, keepdim, correction)
    return None


def pass_expression(reduction: NodeReduction, tensor: str, batches: str) -> str:
    """The line's right-hand side that computes the reduction from the stored tensor, reduced
    on the device over ranges of nodes."""
    method = f"{batches}.{reduction.runtime_method}"
    if reduction.how in _SPREAD:  # two passes: the mean, then the squared deviations from it
        every = "" if reduction.over_rows_only else ", every=True"
        total = f"{method}({tensor}, correction={reduction.correction}{every})"
        if reduction.how == "std":
            total += ".sqrt()"
    else:
        total = f"{method}({tensor})"
        if not reduction.over_rows_only:  # of every element: of the column's
            total += {"sum_nodes": ".sum()", "max_nodes": ".amax()", "min_nodes": ".amin()"}[reduction.runtime_method]
        if reduction.how == "mean":
            total += f" / {tensor}.shape[0]" if reduction.over_rows_only else f" / {tensor}.numel()"
    if reduction.keepdim:
        total = f"({total}).unsqueeze(0)"
    return total

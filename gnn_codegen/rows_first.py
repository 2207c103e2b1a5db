"""A rewrite of the traced forward that keeps each node's rows first where forward moves them
only to move them back: `torch.stack(hs).mean(dim=0)` (ARMA's average over its stacks) becomes
`torch.stack(hs, dim=1).mean(dim=1)`, the same numbers for tensors of one dimension or more,
which a layer-wise loop can compute one batch of rows at a time."""

from __future__ import annotations

import torch
import torch.fx as fx

# reductions that take a dim and return one tensor
_REDUCTIONS = frozenset({"mean", "sum", "amax", "amin", "prod", "logsumexp"})


def _dim(node: fx.Node, position: int, default: object) -> object:
    return node.kwargs.get("dim", node.args[position] if len(node.args) > position else default)


def stacks_reduced_along_rows(gm: fx.GraphModule) -> None:
    """Rewrite, in place, every stack over dim 0 whose only reader reduces it over dim 0."""
    changed = False
    for node in list(gm.graph.nodes):
        if not (node.op == "call_function" and node.target is torch.stack and _dim(node, 1, 0) == 0
                and len(node.users) == 1):
            continue
        reader = next(iter(node.users))
        name = reader.target if reader.op == "call_method" else getattr(reader.target, "__name__", "")
        if (reader.op not in ("call_method", "call_function") or name not in _REDUCTIONS
                or not reader.args or reader.args[0] is not node or _dim(reader, 1, None) != 0):
            continue
        node.args, node.kwargs = node.args[:1], {**{k: v for k, v in node.kwargs.items() if k != "dim"}, "dim": 1}
        if "dim" in reader.kwargs:
            reader.kwargs = {**reader.kwargs, "dim": 1}
        else:
            reader.args = (reader.args[0], 1, *reader.args[2:])
        changed = True
    if changed:
        gm.recompile()

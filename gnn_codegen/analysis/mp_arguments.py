"""The arguments of a message-passing call and the rows each is read at: its node features on
source rows (or a pair of source and destination rows), the rest per node or per edge. Asked by
every stage that binds a call's arguments to rows (attributes, the proof on blocks, the plan,
the renderer), so it sits below all of them."""

from __future__ import annotations

from typing import Any, Literal

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.ir import Op, iter_refs

# Rows a value is computed on inside a batch: the block's source nodes (destinations first),
# its destination nodes, or its edges (every in-edge of the destinations). The prologue (stage
# 0) has no blocks: its batches are node ranges, written as destination rows.
Space = Literal["src", "dst", "edge"]


def mp_feature_spaces(op: Op) -> list[tuple[Any, Space]]:
    """The tensor arguments of a message-passing call and the rows each is read at: node
    features on source rows (a pair: source and destination rows); every tensor after them
    (edge weights, edge features, edge types) on the block's edges. A written-out convolution
    (write_out.py) says the rows of each argument itself."""
    if op.mp is not None and op.mp.roles:
        roles = [(value, role) for value, role in zip(op.args[1:], op.mp.roles) if role in ("src", "dst", "edge")]
        roles += [(value, "edge") for _, value in op.kwargs]
        return [(value, role) for value, role in roles if any(True for _ in iter_refs(value))]  # type: ignore[misc]
    if len(op.args) < 2:
        raise UnsupportedOperationError(
            f"{op.location or 'forward'}: self.{op.target} is called without node features; "
            "call it as module(graph, features)."
        )
    positional, keywords = mp_extra_arguments(op)
    extra = positional + [(value, space) for _, value, space in keywords]
    return mp_features(op) + [(value, space) for value, space in extra if any(True for _ in iter_refs(value))]


def mp_extra_arguments(op: Op) -> tuple[list[tuple[Any, Space]], list[tuple[str, Any, Space]]]:
    """A message-passing module's arguments after its features, positional then by keyword, each
    with the rows it is read at: per node (known_modules.NODE_ARGUMENTS: source rows, whose
    destination prefix the module slices itself as it does its features'), else per edge."""
    node_args = op.mp.node_args if op.mp is not None else ()
    positional: list[tuple[Any, Space]] = [(a, "src" if i in node_args else "edge")
                                           for i, a in enumerate(op.args[2:], start=2)]
    keywords: list[tuple[str, Any, Space]] = [(k, v, "src" if k in node_args else "edge") for k, v in op.kwargs]
    return positional, keywords


def mp_features(op: Op) -> list[tuple[Any, Space]]:
    """A message-passing module's node features (its argument after the graph): source rows,
    or a pair (source rows, destination rows)."""
    feats = op.args[1]
    if isinstance(feats, (tuple, list)) and len(feats) == 2:
        return [(feats[0], "src"), (feats[1], "dst")]
    if op.mp is not None and op.mp.needs_pair:
        return [(feats, "src"), (feats, "dst")]
    return [(feats, "src")]

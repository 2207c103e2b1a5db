"""Stage 3, simplify (NNVM's SimplifyInference, in spirit): drop what is the identity in eval
mode, read every `h[:block.num_dst_nodes()]` as `h` (on the full graph it is), remove dead ops."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gnn_codegen.ir import Op, Program, Ref, map_refs
from gnn_codegen.analysis.rowwise import EVAL_IDENTITY_MODULES
from gnn_codegen.analysis.sized_tensors import prefix_count
_DROPOUT_FUNCTIONS = ("dropout", "alpha_dropout", "feature_alpha_dropout")
# Graph methods that count destination nodes: on the full graph every node is a destination.
DST_COUNT_METHODS = frozenset({"num_dst_nodes", "number_of_dst_nodes"})


def _is_dropout_call(op: Op) -> bool:
    if op.kind != "function" or not op.target.rsplit(".", 1)[-1] in _DROPOUT_FUNCTIONS:
        return False
    kwargs = dict(op.kwargs)
    training = kwargs.get("training", op.args[2] if len(op.args) > 2 else True)
    return training is False


def _is_dst_count(op: Op, program: Program) -> bool:
    return op.kind == "method" and op.target in DST_COUNT_METHODS and op.args == (Ref(program.graph),)


def _is_prefix_slice(op: Op, program: Program) -> bool:
    """`h[:block.num_dst_nodes()]` (or `[0:n]`, or `[:n, ...]`) with n counting destinations."""
    stop = prefix_count(op)
    return isinstance(stop, Ref) and _is_dst_count(program.op(stop.name), program)


def _alias_source(op: Op, program: Program) -> Any:
    """The Ref this op is an alias of in eval mode on the full graph, or None."""
    if op.kind == "module" and op.module_class in EVAL_IDENTITY_MODULES:
        return op.args[0]
    if _is_dropout_call(op):
        return op.args[0] if op.args else dict(op.kwargs)["input"]
    if _is_prefix_slice(op, program):
        return op.args[0]
    return None


def _single_features(op: Op) -> Op:
    """`conv(block, (h, h[:num_dst]))` reads as `conv(g, (h, h))`; a dgl.nn conv that takes the
    destination prefix of a block itself (known_modules.pair_collapses) is then `conv(block, h)`,
    as a full-graph forward writes it — both styles then generate the same code."""
    if op.kind != "mp" or op.mp is None or not op.mp.pair_collapses or len(op.args) < 2:
        return op
    feats = op.args[1]
    if isinstance(feats, (tuple, list)) and len(feats) == 2 and feats[0] == feats[1]:
        return replace(op, args=(op.args[0], feats[0], *op.args[2:]))
    return op


def remove_dead(program: Program) -> Program:
    live = set(program.output_refs()) | {program.graph} | set(program.inputs)
    for op in reversed(program.ops):
        if op.name in live:
            live.update(op.refs())
    return program.with_ops(tuple(op for op in program.ops if op.name in live))


def simplify(program: Program) -> Program:
    aliases: dict[str, Any] = {}

    def resolve(ref: Ref) -> Any:
        return aliases.get(ref.name, ref)

    ops: list[Op] = []
    current = program
    # g.out_degrees(), and a graph derived from g (HAN's metapath graph, made by each layer), once
    # however often forward makes it
    graph_values: dict[tuple[str, str, Any, Any], str] = {}
    for op in program.ops:
        op = replace(op, args=map_refs(op.args, resolve),
                     kwargs=tuple((k, map_refs(v, resolve)) for k, v in op.kwargs))
        if op.kind == "graph_value" or (op.kind == "graph" and op.args):
            key = (op.kind, op.target, _hashable(op.args), _hashable(op.kwargs))
            first = graph_values.setdefault(key, op.name)
            if first != op.name:
                aliases[op.name] = Ref(first)
                continue
        source = _alias_source(op, current)
        if source is not None:
            aliases[op.name] = source
            continue
        ops.append(op)
        current = current.with_ops(tuple(ops))
    ops = [_single_features(op) for op in ops]
    output = map_refs(program.output, resolve)
    return remove_dead(_computed_once(program.with_ops(tuple(ops), output=output)))


def _hashable(value: Any) -> Any:
    """value with its lists as tuples (a metapath given as a list)."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


# ops that compute a value from their arguments alone (random ones are refused before this)
_PURE_KINDS = ("function", "method", "module", "attr")


def computed_once(program: Program) -> Program:
    """The program with its common subexpressions computed once and what is left unread gone,
    for a later pass that made more ops alike (dtype_witnesses.py)."""
    return remove_dead(_computed_once(program))


def _computed_once(program: Program) -> Program:
    """Common subexpressions: an op that repeats an earlier one on the same arguments reads its
    value (APPNPConv's teleport term `alpha * feat_0`, written once per round, is one tensor to
    store, not k). Not where a value is changed in place afterwards (functionalize.py)."""
    changed = {op.args[0].name for op in program.ops if op.mutates and op.args and isinstance(op.args[0], Ref)}
    first: dict[Any, str] = {}
    renamed: dict[str, Ref] = {}
    ops: list[Op] = []
    for op in program.ops:
        op = replace(op, args=map_refs(op.args, lambda r: renamed.get(r.name, r)),
                     kwargs=tuple((k, map_refs(v, lambda r: renamed.get(r.name, r))) for k, v in op.kwargs))
        if op.kind in _PURE_KINDS and not op.mutates and op.name not in changed:
            try:
                key = (op.kind, op.target, op.args, op.kwargs, op.helper)
                hash(key)
            except TypeError:  # an unhashable constant argument: keep the op
                key = None
            if key is not None:
                earlier = first.setdefault(key, op.name)
                if earlier != op.name and earlier not in changed:
                    renamed[op.name] = Ref(earlier)
                    continue
        ops.append(op)
    output = map_refs(program.output, lambda r: renamed.get(r.name, r))
    return program.with_ops(tuple(ops), output=output)


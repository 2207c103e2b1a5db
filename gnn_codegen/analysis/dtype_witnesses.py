"""Stage 4, analysis, one witness per dtype: `in_degrees.to(rst)` (and `rst.device`) reads of
`rst` only its dtype and device (and `rst.dim()` its number of dimensions), so where each GCN2Conv of a stack computes its in-degree norm as
`in_degrees.to(h_k)` from its own input, the norms are one value spelled eight ways, and each
layer computes and stores it again (norm1, ..., norm7). Casts that differ only in their
witness, where one witness is computed from the other, read one witness (the earliest): the
casts become one op, which simplify's common subexpressions compute once (and the cut stores
once). A cast alone keeps its witness.

Why that is the same value: a layer's function holds the rows it reads and computes on
`device`; the two witnesses have the same dtype on the probe graph, and the earlier one is an
ancestor of the later, computed from it through tensors of that dtype alone (a cast on the way,
as `.double()`, stops the walk). Forward's inputs are never witnesses: their dtype is the
caller's at run time (float16 features beside float32 parameters promote differently from
what the probe saw), so a cast that reads an input keeps it, unless forward could not run with
the input's dtype (or rank) other than a computed witness's (forced_traits.py: TAGConv's first
layer's norm, cast to the features, and its second's, cast to a Linear's output over hops of
the features): then the casts are one, reading the input. The
generated module is verified against forward before it is written, as always."""

from __future__ import annotations

from dataclasses import replace

from gnn_codegen.analysis.attributes import Attributes, _takes_only_dtype_and_device
from gnn_codegen.analysis.forced_traits import equal_to_inputs
from gnn_codegen.ir import Op, Program, Ref
from gnn_codegen.lower.simplify import computed_once

# ops whose rows a layer's function computes on `device`: not forward's inputs (their dtype is
# the caller's), nor the graph's values (`g.in_degrees()`, the thing cast)
_COMPUTED = ("function", "method", "module", "mp")
# methods that may change a dtype (the walk from a witness stops at them)
_CASTS = frozenset({"to", "type", "type_as", "float", "double", "half", "bfloat16", "int", "long"})


def _reads_dtype_or_device(op: Op) -> bool:
    """`t.device`, `t.dtype` (fx's getattr): of t, only where it lives and its dtype."""
    return (op.kind == "function" and op.target == "getattr" and len(op.args) == 2
            and isinstance(op.args[0], Ref) and op.args[1] in ("device", "dtype"))


def _reads_rank(op: Op) -> bool:
    """`t.dim()`: of t, only its number of dimensions (TAGConv's reshape of its norm)."""
    return op.kind == "method" and op.target == "dim" and len(op.args) == 1 and not op.kwargs \
        and isinstance(op.args[0], Ref)


def _fact(name: str, attrs: Attributes, trait: str) -> object:
    """What a witness gives of itself: its dtype, or its number of dimensions."""
    return attrs[name].dtype if trait == "dtype" else len(attrs[name].shape)


def _lineage(name: str, program: Program, attrs: Attributes, trait: str = "dtype") -> set[str]:
    """name and the tensors it is computed from through tensors of its dtype alone, computed
    on `device` (not through a cast, which may change the dtype where the probe's did not)."""
    fact, seen, frontier = _fact(name, attrs, trait), {name}, [name]
    while frontier:
        op = program.op(frontier.pop())
        if trait == "dtype" and (op.kind == "method" and op.target in _CASTS or any(k == "dtype" for k, _ in op.kwargs)):
            continue
        for ref in op.refs():
            if ref in seen or program.op(ref).kind not in _COMPUTED or attrs[ref].rows != "node" \
                    or _fact(ref, attrs, trait) != fact:
                continue
            seen.add(ref)
            frontier.append(ref)
    return seen


def _witness(name: str, program: Program, attrs: Attributes, cache: dict[tuple[str, str], str],
             trait: str) -> str:
    """The earliest tensor of name's lineage: the same for casts in different layers."""
    if (name, trait) not in cache:
        order = {op.name: i for i, op in enumerate(program.ops)}
        cache[(name, trait)] = min(_lineage(name, program, attrs, trait), key=order.__getitem__)
    return cache[(name, trait)]


def _cast_witness(op: Op) -> int | None:
    """The position of the argument of which op reads only the dtype and device, or None."""
    if _takes_only_dtype_and_device(op) and isinstance(op.args[1], Ref):
        return 1  # x.to(t)
    return 0 if _reads_dtype_or_device(op) or _reads_rank(op) else None


def one_dtype_witness(program: Program, attrs: Attributes) -> Program:
    """The program with the casts that differ only in their witness (`in_degrees.to(h_k)` in
    every layer) reading one witness, the earliest of theirs, and the casts (and what is
    computed from them) that became one, computed once. A cast alone keeps its witness."""
    cache: dict[tuple[str, str], str] = {}
    groups: dict[tuple, list[Op]] = {}
    forced = {trait: equal_to_inputs(program, attrs, trait) for trait in ("dtype", "rank")}
    for op in program.ops:
        at = _cast_witness(op)
        if at is None:
            continue
        witness = op.args[at].name
        trait = "rank" if _reads_rank(op) else "dtype"
        if attrs[witness].rows != "node" or not attrs[witness].dtype:
            continue
        if program.op(witness).kind == "input" and witness in forced[trait].values():
            found = witness  # an input the program forces (forced_traits.py): the casts to it
        elif program.op(witness).kind in _COMPUTED:
            found = _witness(witness, program, attrs, cache, trait)
        else:
            continue
        others = tuple(a for i, a in enumerate(op.args) if i != at)
        key = (op.kind, op.target, others, op.kwargs, trait, found)
        groups.setdefault(key, []).append(op)
    order = {op.name: i for i, op in enumerate(program.ops)}
    chosen: dict[str, str] = {}  # cast -> the witness it reads now
    groups = _joined_by_inputs(groups, forced, program)
    for key, casts in groups.items():
        witnesses = {op.args[_cast_witness(op)].name for op in casts}  # type: ignore[index]
        if len(witnesses) < 2:
            continue
        # the earliest of their own witnesses where every other one is computed from it (a
        # reader recognises it: `in_degrees.to(h)`), else the common one found
        first = min(witnesses, key=order.__getitem__)
        ancestors = [_lineage(w, program, attrs, key[-2]) for w in witnesses]
        witness = first if all(first in a for a in ancestors) else key[-1]
        for op in casts:
            chosen[op.name] = witness

    def rewritten(op: Op) -> Op:
        if op.name not in chosen:
            return op
        args = list(op.args)
        args[_cast_witness(op)] = Ref(chosen[op.name])  # type: ignore[index]
        return replace(op, args=tuple(args))

    if not chosen:
        return program
    return computed_once(program.with_ops(tuple(rewritten(op) for op in program.ops)))


def _joined_by_inputs(groups: dict[tuple, list[Op]], forced: dict[str, dict[str, str]],
                      program: Program) -> dict[tuple, list[Op]]:
    """groups, those alike but for their witness joined where a witness of each has the same
    input's dtype (or rank) in every run (forced_traits.py): one group, keyed by that input,
    which its casts then read."""
    by_input: dict[tuple, list[tuple]] = {}
    for key in groups:
        trait = key[-2]
        inputs = {forced[trait][op.args[_cast_witness(op)].name]  # type: ignore[index]
                  for op in groups[key] if op.args[_cast_witness(op)].name in forced[trait]}  # type: ignore[index]
        if len(inputs) == 1:
            by_input.setdefault((*key[:-1], inputs.pop()), []).append(key)
    joined = dict(groups)
    for anchor, keys in by_input.items():
        if len(keys) < 2:
            continue  # nothing to join: the group keeps the witness it found
        joined[anchor] = [op for k in keys for op in joined.pop(k)]
    return joined

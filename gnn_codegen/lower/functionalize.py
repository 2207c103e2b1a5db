"""Stage 3a, functionalize: in-place operations into values. An in-place operation changes a
tensor that later operations read: `x.add_(b)` leaves `x` changed for every line after it, and
its own result is unused, so treated as an ordinary op it would be dead code, silently dropped
(the ogbn-arxiv example's `ElementWiseLinear(inplace=True)` lost its bias that way). Here each
one becomes an op that makes a new value (`x.add(b)`, `F.relu(h)`), and every later reader of
the changed tensor reads that value instead; the passes after this one see plain dataflow.

A change made through a view reaches the tensor it views, and the other views of it. Where the
"view" is the whole tensor itself (what eval-mode Dropout and Identity return, `detach()`), the
change is the same change of the other: both read the new value after it. A change through a
partial view (a slice, a reshape) is followed only where no other tensor sharing its memory is
read after the change; otherwise the model is refused, naming the line: a layer-wise loop
keeps each value in its own buffer, and the result would differ from forward's.

What cannot be written without changing a tensor in place (`copy_`, `fill_`, an nn.ReLU built
with inplace=True) stays in place, marked `Op.mutates`: the renderer hands such an op a tensor
nothing else holds, or a copy."""

from __future__ import annotations

from dataclasses import replace

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.ir import Op, Program, Ref, map_refs

# Operations whose result may share memory with their first argument: views, and what returns
# its input itself in eval mode (dropout, identity, a no-op conversion).
_VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
    "transpose", "t", "permute", "expand", "expand_as", "narrow", "select", "unbind", "split",
    "chunk", "detach", "movedim", "swapaxes", "swapdims", "as_strided", "diagonal", "unfold",
    "contiguous", "to", "type", "type_as", "float", "double", "half", "cpu", "cuda", "requires_grad_",
    "__getitem__", "T", "mT", "real", "imag",
})
_VIEW_FUNCTIONS = _VIEW_METHODS | {"getitem", "getattr", "dropout", "alpha_dropout", "feature_alpha_dropout"}
_VIEW_MODULES = frozenset({"Dropout", "Dropout1d", "AlphaDropout", "FeatureAlphaDropout", "Identity", "Flatten",
                           "Unflatten"})


# ... and of those, what returns the whole tensor itself, same shape, same memory
_WHOLE_MODULES = frozenset({"Dropout", "Dropout1d", "AlphaDropout", "FeatureAlphaDropout", "Identity"})
_DROPOUT_FUNCTIONS = frozenset({"dropout", "alpha_dropout", "feature_alpha_dropout"})


def _short(target: str) -> str:
    return target.rsplit(".", 1)[-1]


def may_alias(op: Op) -> bool:
    """Whether op's result may be (a view of) its first argument."""
    if op.kind == "method":
        return op.target in _VIEW_METHODS
    if op.kind == "function":
        return _short(op.target) in _VIEW_FUNCTIONS
    if op.kind == "module":
        return op.class_name in _VIEW_MODULES
    return False


def is_whole_alias(op: Op) -> bool:
    """Whether op's result is its first argument itself, in eval mode (forward is traced in it)."""
    if op.kind == "module":
        return op.class_name in _WHOLE_MODULES
    if op.kind == "method":
        return op.target == "detach"
    if op.kind == "function" and _short(op.target) in _DROPOUT_FUNCTIONS:
        training = dict(op.kwargs).get("training", op.args[2] if len(op.args) > 2 else True)
        return training is False
    return False


def _mutated(op: Op) -> Ref | None:
    """The tensor an in-place op changes (lower's Op.in_place says which argument)."""
    if op.in_place == "out":
        value = dict(op.kwargs).get("out")
    elif op.in_place:
        value = op.args[0] if op.args else None
    else:
        return None
    return value if isinstance(value, Ref) else None


def _functional(op: Op) -> Op:
    """The op written so that it makes a new value, where it can be (lower put the spelling
    of its out-of-place twin in Op.out_of_place); else the same op, marked as changing its input."""
    if op.in_place == "out":
        kwargs = tuple((k, v) for k, v in op.kwargs if k != "out")
        return replace(op, kwargs=kwargs, in_place="")
    if op.in_place == "inplace":  # F.relu(h, inplace=True)
        return replace(op, kwargs=tuple((k, v) for k, v in op.kwargs if k != "inplace"), in_place="")
    if op.out_of_place:
        return replace(op, target=op.out_of_place, out_of_place="", in_place="")
    return replace(op, in_place="", mutates=True)


def _aliases(program: Program, name: str, before: int, whole: bool = False) -> set[str]:
    """Every value that may share memory with `name` when program.ops[before] runs: views of
    it, what it is a view of, and their views (through ops that may alias, in either
    direction), made before then. A view made later sees the change: it is taken of the
    changed value. whole: only those that are the whole tensor itself (is_whole_alias)."""
    neighbours: dict[str, set[str]] = {}
    for op in program.ops[:before]:
        aliases = is_whole_alias(op) if whole else may_alias(op)
        # an in-place op returns the tensor it changes: `h10 = h9.mul_(2)` is h9 itself
        base_ref = _mutated(op) or (op.args[0] if aliases and op.args else None)
        if isinstance(base_ref, Ref):
            base = base_ref.name
            neighbours.setdefault(op.name, set()).add(base)
            neighbours.setdefault(base, set()).add(op.name)
    seen, todo = {name}, [name]
    while todo:
        for other in neighbours.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen - {name}


def _refuse_hidden_change(program: Program, op: Op, changed: str, alias: str,
                          reader: Op | None) -> UnsupportedOperationError:
    where = op.location or "forward"
    read = f"read again at {reader.location}" if reader is not None and reader.location else "read after it"
    names = [program.op(n).var or "a tensor" for n in (changed, alias)]
    return UnsupportedOperationError(
        f"{where}: this changes {names[0]} in place, which shares memory with {names[1]} (one is "
        f"a view of the other), and {names[1]} is {read}. "
        "A layer-wise loop keeps each value in its own buffer, so the change would not reach it "
        "and the result would differ from forward's. Write the change out of place (`h = h + b` "
        "instead of `h.add_(b)`, `F.relu(h)` instead of inplace=True), or change the tensor "
        "before taking views of it."
    )


def functionalize(program: Program) -> Program:
    latest: dict[str, str] = {}  # a value changed in place -> the value that holds it now

    def current(ref: Ref) -> Ref:
        return Ref(latest.get(ref.name, ref.name))

    later_readers: dict[str, list[int]] = {}
    for i, op in enumerate(program.ops):
        for r in op.refs():
            later_readers.setdefault(r, []).append(i)
    outputs = set(program.output_refs())
    ops = []
    for i, op in enumerate(program.ops):
        changed = _mutated(op)
        same = _aliases(program, changed.name, i, whole=True) if changed is not None else set()
        if changed is not None:
            for alias in sorted(_aliases(program, changed.name, i) - same):
                readers = [j for j in later_readers.get(alias, []) if j > i]
                if readers or alias in outputs:
                    reader = program.ops[readers[0]] if readers else None
                    raise _refuse_hidden_change(program, op, changed.name, alias, reader)
        op = replace(op, args=map_refs(op.args, current), kwargs=tuple((k, map_refs(v, current)) for k, v in op.kwargs))
        if changed is not None:
            before = current(changed).name
            op = _functional(op)
            for name, value in list(latest.items()):
                if value == before:
                    latest[name] = op.name
            latest[changed.name] = latest[before] = op.name
            for alias in same:  # the same tensor under another name: changed with it
                latest[alias] = op.name
        ops.append(op)
    return program.with_ops(tuple(ops), output=map_refs(program.output, current))

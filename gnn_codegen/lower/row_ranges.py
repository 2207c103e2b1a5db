"""Part of stage 3, simplify: forward's results that are the rows of a fixed range of nodes,
taken off the program and kept on the result's reference (RowRange), which `inference` applies
to the whole result.

Recommenders keep users and items in one node set and split the result by a count of the
model's: `return out_emb[: self.num_users], out_emb[self.num_users:]` (XGCN),
`users, items = torch.split(h, [self.n_users, self.n_items])` (RecBole), `h.narrow(0, 0, n)`.
On a batch of nodes such a slice would cut the batch, not the graph, so it cannot run between
layers; but as a result it is only a choice of rows: the rows of nodes start..stop of the
result for all nodes. So the slice leaves the program, and the generated method computes the
whole result and returns its rows start:stop (the runtime's `result_rows`), for `nodes=` those
of the requested nodes that lie in the range, in the order asked (a user asks for some users'
rows by their node IDs).

What forward assumes of the graph is checked where inference starts: at least as many nodes
as a bound of the slice names (with fewer, forward returns fewer rows than it was written
for), and for torch.split exactly the sizes' sum (anything else fails in forward).

Only a slice that forward returns is taken: one that feeds another op (`users @ items.T`) mixes
rows and stays refused by the row-wise check (attributes.py), naming its line."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.ir import Op, Program, Ref

_SPLITS = ("torch.split", "split")


@dataclass(frozen=True)
class RowRange(Ref):
    """A result that is rows start:stop (Python's slice) of the node tensor `name`."""

    start: int | None = None
    stop: int | None = None
    total: int | None = None  # torch.split: the sizes add up to the graph's node count
    location: str = ""  # the user's line, for the entry check's message
    # the ops it stands for, left out of the program (the slice, a split): not run on the
    # probe graph either, which may have fewer nodes than the range (attributes.py)
    ops: tuple[str, ...] = ()

    def bound(self) -> int:
        """The fewest nodes the graph must have for the rows forward was written to return."""
        return self.total if self.total is not None else max(abs(self.start or 0), abs(self.stop or 0))

    def spelled(self) -> str:
        return f"{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}"  # 5:10


def take_row_ranges(program: Program) -> Program:
    """The program with each result that is a constant range of rows of a tensor (and read by
    nothing else) replaced by a RowRange of that tensor, the slicing ops left out."""
    users = program.consumers()
    returned = set(program.output_refs())
    taken: set[str] = set()

    def only_returned(name: str) -> bool:
        return not users[name] and name in returned

    def ranged(ref: Any) -> Any:
        if type(ref) is not Ref:
            return ref
        op = program.op(ref.name)
        found = _row_range(op, program, users)
        if found is None or not only_returned(op.name):
            return ref
        taken.add(op.name)
        return replace(found[1], ops=(*found[1].ops, op.name))

    def walk(value: Any) -> Any:
        if isinstance(value, tuple) and not isinstance(value, Ref):
            return tuple(walk(v) for v in value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if type(value) is Ref and _split_sizes(program.op(value.name)) is not None and only_returned(value.name):
            split = program.op(value.name)  # `return torch.split(h, [n, m])`: the tuple itself
            taken.add(split.name)
            return tuple(replace(_of_split(split, i), ops=(split.name,)) for i in range(len(_split_sizes(split) or ())))
        return ranged(value)

    output = walk(program.output)
    if not taken:
        return program
    # a split whose items were all taken is read by nothing now: taken too
    taken |= {op.name for op in program.ops
              if _split_sizes(op) is not None and users[op.name] and set(users[op.name]) <= taken}
    return replace(program.with_ops(tuple(op for op in program.ops if op.name not in taken)), output=output)


def _row_range(op: Op, program: Program, users: dict[str, list[str]]) -> tuple[str, RowRange] | None:
    """(the op's base, its RowRange) where `op` is a constant range of rows of another op."""
    if op.kind == "function" and op.target == "operator.getitem" and len(op.args) == 2 and isinstance(op.args[0], Ref):
        base, index = op.args
        if isinstance(index, int) and _split_sizes(program.op(base.name)) is not None:
            split = program.op(base.name)
            return split.args[0].name, replace(_of_split(split, index, op.location), ops=(split.name,))
        rows = _leading_slice(index)
        if rows is not None:
            return base.name, RowRange(base.name, rows.start, rows.stop, location=op.location)
    if op.target in ("narrow", "torch.narrow") and op.kind in ("method", "function") and not op.kwargs \
            and len(op.args) == 4 and isinstance(op.args[0], Ref) and op.args[1] == 0 \
            and all(isinstance(a, int) and a >= 0 for a in op.args[2:]):
        start, length = op.args[2], op.args[3]
        return op.args[0].name, RowRange(op.args[0].name, start, start + length, location=op.location)
    return None


def _leading_slice(index: Any) -> slice | None:
    """`h[a:b]` or `h[a:b, :]`: a slice of the rows by constants, every other dimension whole."""
    rest: tuple[Any, ...] = ()
    if isinstance(index, tuple) and index:
        index, rest = index[0], index[1:]
    if not isinstance(index, slice) or index.step not in (None, 1) or index == slice(None):
        return None
    if not all(isinstance(b, int) or b is None for b in (index.start, index.stop)):
        return None
    if not all(r == slice(None) for r in rest) and rest != (Ellipsis,):
        return None
    return index


def _split_sizes(op: Op) -> tuple[int, ...] | None:
    """The sizes of `torch.split(h, [n, m])` / `h.split([n, m])` along the rows, else None
    (a split into pieces of one size has as many as the graph's size decides)."""
    if op.target not in _SPLITS or op.kind not in ("function", "method") or len(op.args) < 2:
        return None
    sizes, dim = op.args[1], dict(op.kwargs).get("dim", op.args[2] if len(op.args) > 2 else 0)
    if dim != 0 or not isinstance(sizes, (list, tuple)) or not all(isinstance(s, int) for s in sizes):
        return None
    return tuple(sizes)


def _of_split(split: Op, index: int, location: str = "") -> RowRange:
    sizes = _split_sizes(split) or ()
    start = sum(sizes[:index % len(sizes)])
    base = split.args[0]
    return RowRange(base.name, start, start + sizes[index], sum(sizes), location or split.location)


def result_refs(output: Any) -> list[Ref]:
    """forward's results as References, in the order ir.iter_refs names them."""
    if isinstance(output, Ref):
        return [output]
    values = output.values() if isinstance(output, dict) else output if isinstance(output, (tuple, list)) else ()
    return [ref for value in values for ref in result_refs(value)]


def row_ranges(output: Any) -> list[RowRange]:
    return [ref for ref in result_refs(output) if isinstance(ref, RowRange)]


def range_ops(output: Any) -> frozenset[str]:
    """The traced ops that the ranges forward returns stand for."""
    return frozenset(name for ranged in row_ranges(output) for name in ranged.ops)


def refuse_other_rows(output: Any, rows_of: Any) -> None:
    """A range of edges (`efeat[:10]`) is no fixed set of nodes: refused, naming the line."""
    for ranged in row_ranges(output):
        if rows_of(ranged.name) != "node":
            raise UnsupportedOperationError(
                f"{ranged.location or 'forward'}: forward returns rows {ranged.spelled()} of a tensor with a row "
                f"per {rows_of(ranged.name)}, not per node: only a range of nodes' rows is a fixed choice of "
                "rows that inference can return. Return the whole tensor and take the rows from the result."
            )


def entry_checks(output: Any, g: str) -> list[str]:
    """What the generated method checks of the graph for the ranges it returns: the fewest nodes
    (or, for torch.split, exactly the sizes' sum)."""
    lines: list[str] = []
    checked: set[tuple[int, bool]] = set()
    for ranged in row_ranges(output):
        bound, place = ranged.bound(), _place(ranged.location)
        if (bound, ranged.total is None) in checked:  # `h[:n], h[n:]`: once
            continue
        checked.add((bound, ranged.total is None))
        if ranged.total is not None:
            lines += [f"if {g}.num_nodes() != {bound}:",
                      f"    raise ValueError(\"forward splits its rows into parts of {bound} nodes in all at {place}: \"",
                      f"                     f\"{g} must have {bound} nodes, not {{{g}.num_nodes()}}\")"]
        elif bound:
            lines += [f"if {g}.num_nodes() < {bound}:",
                      f"    raise ValueError(\"forward returns rows [{ranged.spelled()}] of a result at {place}: \"",
                      f"                     f\"{g} must have at least {bound} nodes, not {{{g}.num_nodes()}}\")"]
    return lines


def nodes_for_check(output: Any, num_nodes: int) -> int:
    """The node count of the check's graph: the sizes' sum of a split (forward runs on no other),
    else at least the fewest nodes the ranges need."""
    ranges = row_ranges(output)
    totals = [r.total for r in ranges if r.total is not None]
    if totals:
        return totals[0]
    return max([num_nodes, *(r.bound() for r in ranges)])


def range_docstring(output: Any, nodes: str) -> list[str]:
    """The generated method's docstring on what a range returns, with and without nodes=."""
    ranges = row_ranges(output)
    if not ranges:
        return []
    spelled = ", ".join(dict.fromkeys(f"[{r.spelled()}]" for r in ranges))
    return [f"forward returns rows {spelled} of its result for all nodes, and so does inference; "
            f"with {nodes}=..., each such part holds the rows of the requested nodes that lie in its range "
            "(node IDs of the graph, in the order asked), and no row for the others."]


def spelled_result(ranged: RowRange, tensor: str, batches: str, nodes: str, name: str | None) -> str:
    """The generated method's result for a range: the runtime's `result_rows`."""
    args = [tensor, repr(ranged.start), repr(ranged.stop), f"{nodes}={nodes}"]
    if name:
        args.append(f'name="{name}"')
    return f"{batches}.result_rows({', '.join(args)})"


def rows_of_range(ranged: RowRange, part: Any, nodes: Any, num_nodes: int) -> Any:
    """forward's part `part` (rows start:stop) at the requested `nodes`: those in the range, in
    their order, as the runtime's result_rows takes them (the checks of harness.rows_for)."""
    first, end, _ = slice(ranged.start, ranged.stop).indices(num_nodes)
    end = max(end, first)
    nodes = nodes.long()
    return part[nodes[(nodes >= first) & (nodes < end)] - first]


def _place(location: str) -> str:
    """`file.py:12` of a location `path/file.py:12 (`...`)`."""
    where = location.split(" (", 1)[0]
    return where.rsplit("/", 1)[-1] if where else "forward"


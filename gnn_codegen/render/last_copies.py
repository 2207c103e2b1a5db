"""Render, the last layer of a loop that ends otherwise (issue 37): in a run of layers that are
one function of the layer before, every layer but the last also prepares the next one's rows
(APPNP's `feat * src_norm`, the next hop's source scaling that the cut fuses into each hop so
that the next reads its rows in place), and the last instead does what forward does after the
run (GCNII's `self.fcs[1](rst)`), or nothing. Such a last layer is the same code up to where
the two end: the loop runs it too, with its ending under `if k == last:` in the one function,
rather than as a copy of the whole layer beside the loop (layer_loops.py decides the run,
this module the split).

Bodies are compared statement by statement (a `with` block is one); the shared part must hold
every use of the block (the message passing), and the two endings none. A statement `x = E`
in one and `return E` in the other are shared as `x = E`, the other ending as `return x`;
E may be the message passing itself (a GraphConv stack: every layer but the last names its
aggregation `h`, then sends it on as the next layer's source step; the last returns it)."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from gnn_codegen.render.alike_bodies import anonymous_body
from gnn_codegen.render.module_index import relative

if TYPE_CHECKING:
    from gnn_codegen.render.layer import LayerFunction


@dataclass(frozen=True)
class Ending:
    """How the loop's function ends: its body's first `shared` lines are every layer's; then
    the last layer's own lines (`last`, under the loop's `if`), then the other layers'."""

    shared: int
    last: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    """Two bodies split where they end otherwise: `regular`, the run's body as it is written
    (a `return E` shared as `x = E` made `x = E`, `return x`), its first `ending.shared`
    lines shared."""

    regular: tuple[str, ...]
    ending: Ending


def _statements(body: list[str] | tuple[str, ...]) -> list[tuple[list[str], ast.stmt]] | None:
    """The body's top-level statements, each with its lines (comments before it included)."""
    lines = list(body)
    if any("\n" in line for line in lines):  # a line per statement's line, or not split
        return None
    try:
        module = ast.parse(textwrap.dedent("\n".join(lines)))
    except SyntaxError:
        return None
    statements, start = [], 0
    for node in module.body:
        end = node.end_lineno or node.lineno
        statements.append((lines[start:end], node))
        start = end
    if start != len(lines) or not statements:  # lines after the last statement: not split so
        return None
    return statements


def _reads_block(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "block" for n in ast.walk(node))


def _named_and_returned(assign: ast.stmt, returned: ast.stmt, key_assign: Callable[[ast.AST], str],
                        key_returned: Callable[[ast.AST], str]) -> str | None:
    """The name `x` where one statement is `x = E` and the other `return E` (E alike)."""
    if not (isinstance(assign, ast.Assign) and isinstance(returned, ast.Return) and returned.value is not None):
        return None
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    return assign.targets[0].id if key_assign(assign.value) == key_returned(returned.value) else None


def _unpacked_alike(ours: ast.stmt, theirs: ast.stmt, after: list[ast.stmt], key_ours: Callable[[ast.AST], str],
                    key_theirs: Callable[[ast.AST], str]) -> bool:
    """`x, h, c = E` in ours where theirs is `x, _, _ = E` (the last layer reads no state it
    hands on: GeniePath's last LSTM step), with nothing after it in theirs reading h or c: ours
    then serves for both."""
    if not (isinstance(ours, ast.Assign) and isinstance(theirs, ast.Assign)
            and len(ours.targets) == len(theirs.targets) == 1
            and isinstance(ours.targets[0], ast.Tuple) and isinstance(theirs.targets[0], ast.Tuple)
            and len(ours.targets[0].elts) == len(theirs.targets[0].elts)
            and key_ours(ours.value) == key_theirs(theirs.value)):
        return False
    bound = set()
    for mine, other in zip(ours.targets[0].elts, theirs.targets[0].elts):
        if isinstance(other, ast.Name) and other.id == "_" and isinstance(mine, ast.Name):
            bound.add(mine.id)
        elif ast.unparse(mine) != ast.unparse(other):
            return False
    return not any(isinstance(n, ast.Name) and n.id in bound for node in after for n in ast.walk(node))


def _lines(statements: list[tuple[list[str], ast.stmt]]) -> list[str]:
    return [line for lines, _ in statements for line in lines]


def split(regular: list[str] | tuple[str, ...], last: list[str] | tuple[str, ...],
          key_regular: Callable[[ast.AST], str], key_last: Callable[[ast.AST], str],
          named_shares: bool = False) -> Split | None:
    """The two bodies split where they end otherwise, or None where they differ sooner (in a
    statement that reads the block, or before it) or do not parse alone. key_regular and
    key_last spell a node of each for comparison (with names made alike, module indices
    relative to the layer). named_shares: the statement one names and the other returns
    counts as shared message passing (a heterogeneous layer's one HeteroGraphConv call,
    `h = conv(block, ...)` then `return act(h)`, where the last layer returns the call)."""
    ours, theirs = _statements(regular), _statements(last)
    if ours is None or theirs is None:
        return None
    at = 0
    while at < min(len(ours), len(theirs)) and (
            key_regular(ours[at][1]) == key_last(theirs[at][1])
            or _unpacked_alike(ours[at][1], theirs[at][1], [node for _, node in theirs[at + 1:]],
                               key_regular, key_last)):
        at += 1
    if at == len(ours) or at == len(theirs):  # one ends where the other goes on: not so
        return None
    (mine, mine_node), (_, their_node) = ours[at], theirs[at]
    indent = mine[0][: len(mine[0]) - len(mine[0].lstrip())]
    shared, rest, tail = _lines(ours[:at]), _lines(ours[at:]), _lines(theirs[at:])
    endings = [node for _, node in (*ours[at:], *theirs[at:])]
    passing = [node for _, node in ours[:at]]  # the shared statements, for their message passing
    if (name := _named_and_returned(mine_node, their_node, key_regular, key_last)) is not None:
        # ours names what theirs returns: theirs returns that name
        shared, rest, tail = shared + mine, _lines(ours[at + 1:]), [f"{indent}return {name}"]
        endings = [node for _, node in (*ours[at + 1:], *theirs[at + 1:])]
        passing += [mine_node] if named_shares else []
    elif (name := _named_and_returned(their_node, mine_node, key_last, key_regular)) is not None:
        # theirs names what ours returns: ours names it too, then returns it
        first = mine[0].lstrip()
        shared = shared + [f"{indent}{name} = {first.removeprefix('return ')}", *mine[1:]]
        rest, tail = [f"{indent}return {name}"], _lines(theirs[at + 1:])
        endings = [node for _, node in theirs[at + 1:]]
        passing += [mine_node] if named_shares else []
    if not rest or not tail or any(_reads_block(node) for node in endings):
        return None
    if not any(_reads_block(node) for node in passing):  # no message passing shared
        return None
    return Split((*shared, *rest), Ending(len(shared), tuple(tail)))


def _returns_a_name(lines: list[str] | tuple[str, ...]) -> bool:
    """`return h`, or `return h, None` (a last layer that stores less: fewer_stored.py)."""
    returned = lines[0].strip()[7:] if len(lines) == 1 and lines[0].strip().startswith("return ") else ""
    while returned.endswith(", None"):
        returned = returned.removesuffix(", None")
    return returned.isidentifier()


def merged(body: list[str], ending: Ending, condition: str) -> list[str]:
    """The loop's function body: the shared lines, the last layer's ending under
    `if condition:` (with a comment that says how it differs), then the others'."""
    shared, rest = body[: ending.shared], body[ending.shared:]
    if _returns_a_name(ending.last):  # APPNP's last hop: the others scale their rows for the next
        said = "the last layer: no next one to prepare rows for"
    elif _returns_a_name(rest):  # GIN's last: its classifier
        said = "the last layer: then what forward does after the loop"
    else:
        said = "the last layer: what forward does after the loop, not the next layer's work"
    indent = body[0][: len(body[0]) - len(body[0].lstrip())]  # the body's own
    return [*shared, f"{indent}# {said}", f"{indent}if {condition}:", *(f"    {line}" for line in ending.last),
            *rest]


def _kinds(function: "LayerFunction") -> dict[str, tuple[str, str]]:
    """parameter -> (the rows it takes: source_rows, ..., the tensor bound to it)."""
    return {param: (keyword, tensor) for keyword, bound in function.bindings() for param, tensor in bound}


def ends_otherwise(regular: "LayerFunction", last: "LayerFunction", carried_regular: dict[str, str],
                   carried_last: dict[str, str], layers: tuple[int, int] | None) -> bool:
    """Whether `last` is `regular` but for how it ends (split): compared with the parameters
    that carry the loop's values (parameter -> which value, `carried_*`) anonymous and the
    locals by order, module indices relative to each's layer (layers, where the loop runs over
    them). Every other parameter of `last` is one of `regular`'s, bound to the same tensor (the
    loop's call binds the regular's parameters for the last layer too)."""
    if regular.in_place != last.in_place or regular.returns != last.returns:
        return False
    ours, theirs = _kinds(regular), _kinds(last)
    for param, (keyword, tensor) in theirs.items():
        if param in carried_last:
            if not any(carried_regular.get(p) == carried_last[param] and ours[p][0] == keyword for p in ours):
                return False
        elif param in carried_regular or ours.get(param) != (keyword, tensor):
            return False
    a = anonymous_body(regular.body, {p: f"carried_{v}_" for p, v in carried_regular.items()})
    b = anonymous_body(last.body, {p: f"carried_{v}_" for p, v in carried_last.items()})
    if a is None or b is None:
        return False

    def key(layer: int | None) -> Callable[[ast.AST], str]:
        return lambda node: ast.unparse(node) if layer is None else relative(ast.unparse(node), layer)

    return split("\n".join(a).splitlines(), "\n".join(b).splitlines(),
                 key(layers[0] if layers else None), key(layers[1] if layers else None), named_shares=True) is not None


def split_written(regular: "LayerFunction", last: "LayerFunction", layers: tuple[int, int] | None) -> Split | None:
    """split() of two functions as written, names and all (after the loop's names are given):
    None where their parameters are not bound alike or their shared lines differ in a name."""
    ours, theirs = _kinds(regular), _kinds(last)
    if any(ours.get(param) != bound for param, bound in theirs.items()):
        return None

    def key(layer: int | None) -> Callable[[ast.AST], str]:
        return lambda node: ast.unparse(node) if layer is None else relative(ast.unparse(node), layer)

    return split(regular.body, last.body, key(layers[0] if layers else None), key(layers[1] if layers else None),
                 named_shares=True)


def returns_first(parted: Split, count: int) -> bool:
    """A last layer that stores fewer tensors (count) than the others: its ending returns
    names alone, as many, where the others' ending returns a tuple of more (the loop's call
    binds the others' first ones to what it returns: layer_calls.py)."""
    last, rest = _statements(list(parted.ending.last)), _statements(list(parted.regular[parted.ending.shared:]))
    if not last or not rest or not isinstance(last[-1][1], ast.Return) or not isinstance(rest[-1][1], ast.Return):
        return False
    ours, theirs = last[-1][1].value, rest[-1][1].value
    returned = ours.elts if isinstance(ours, ast.Tuple) else [ours]
    # one value: a name or forward's work after the loop (GeniePath's `self.linear2(x)`)
    return (isinstance(theirs, ast.Tuple) and len(theirs.elts) > count == len(returned)
            and (count == 1 or all(isinstance(v, ast.Name) for v in returned)))

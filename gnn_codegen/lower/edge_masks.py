"""`dgl.edge_subgraph(g, etype == 0, relabel_nodes=False)`: a graph of some of forward's edges
over all of its nodes (an RGCN written with a graph per relation). Like the other derived graphs
(derived_graphs.py) it is made once on the whole graph at the top of the generated inference;
what picks its edges (`etype == 0`, computed from forward's inputs alone, edge types read from
the graph) is made there too, so it is folded into the graph's op as code (ir.Spelled) instead of
running per batch like the rest of forward.

`relabel_nodes=False` is required: with DGL's default the subgraph renumbers the nodes its edges
touch, so its rows are no longer forward's."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

from gnn_codegen.errors import UnsupportedOperationError
from gnn_codegen.ir import Op, Program, Ref, Spelled, iter_refs
from gnn_codegen.render.code import BINARY, UNARY, constant

EDGE_SUBGRAPH = "edge_subgraph"


def is_edge_subgraph(op: Op) -> bool:
    return op.kind == "graph" and bool(op.args) and op.target.rsplit(".", 1)[-1] == EDGE_SUBGRAPH


def fold_edge_masks(program: Program) -> Program:
    """Every edge subgraph's edges as code on forward's inputs; the ops that computed them are
    left to remove_dead when nothing else reads them."""
    if not any(is_edge_subgraph(op) for op in program.ops):
        return program
    ops = []
    for op in program.ops:
        if is_edge_subgraph(op):
            _check_relabel(op)
            args = (op.args[0], *(_folded(program, a, op) for a in op.args[1:]))
            kwargs = tuple((k, _folded(program, v, op) if k == "edges" else v) for k, v in op.kwargs)
            op = replace(op, args=args, kwargs=kwargs)
        ops.append(op)
    return program.with_ops(tuple(ops))


def mask_inputs(program: Program) -> dict[str, tuple[str, int]]:
    """The inputs that pick an edge subgraph's edges -> (dtype, how many values) for the check
    before writing: a mask itself (`g.edata["train"]`) is boolean; types compared with numbers
    (`etype == r`) take one value more than the largest, so that some edges are in no subgraph."""
    found: dict[str, tuple[str, int]] = {}
    for op in program.ops:
        if not is_edge_subgraph(op):
            continue
        for value in (*op.args[1:], *(v for _, v in op.kwargs)):
            if not isinstance(value, Spelled):
                continue
            refs = list(iter_refs(value))
            if value.parts == tuple(Ref(r) for r in refs) and len(refs) == 1:
                found[refs[0]] = ("torch.bool", 2)
                continue
            numbers = [int(n) for p in value.parts if isinstance(p, str) for n in re.findall(r"\b\d+\b", p)]
            for r in refs:
                found[r] = ("torch.int64", max(found.get(r, ("", 0))[1], max(numbers, default=0) + 2))
    return found


def suffix(op: Op, names: dict[str, str]) -> str:
    """What the generated code calls an edge subgraph after its graph's name: `etype_0` for the
    edges where `etype == 0`, else `subgraph`."""
    edges = op.args[1] if len(op.args) > 1 else dict(op.kwargs).get("edges")
    if isinstance(edges, Spelled) and len(edges.parts) == 3 and isinstance(edges.parts[0], Ref) \
            and edges.parts[1] == " == " and str(edges.parts[2]).isdigit():
        return f"{names[edges.parts[0].name]}_{edges.parts[2]}"
    return "subgraph"


def graph_arguments(op: Op, name_of: Callable[[str], str]) -> list[str]:
    """A derived graph's arguments after its graph: constants, and what forward computes from
    its inputs (an edge subgraph's edges) with each input called name_of(its op's name)."""
    def spelled(value: Any) -> str:
        if isinstance(value, Spelled):
            return "".join(name_of(p.name) if isinstance(p, Ref) else p for p in value.parts)
        return repr(value)
    return [spelled(a) for a in op.args[1:]] + [f"{k}={spelled(v)}" for k, v in op.kwargs]


def _check_relabel(op: Op) -> None:
    if dict(op.kwargs).get("relabel_nodes", True) is not False:
        raise UnsupportedOperationError(
            f"{op.location or 'forward'}: dgl.edge_subgraph renumbers the nodes its edges touch "
            "(relabel_nodes=True, DGL's default), so the subgraph's rows are not forward's rows and "
            "layer-wise inference cannot batch over them. Pass relabel_nodes=False (all of the "
            "graph's nodes, only the chosen edges; a convolution gives the same rows), or evaluate "
            "this model with its full-graph forward."
        )


def _folded(program: Program, value: Any, graph: Op) -> Any:
    if not any(True for _ in iter_refs(value)):
        return value  # edge IDs written in forward
    parts, _ = _spell(program, value, graph)
    return Spelled(tuple(parts))


def _spell(program: Program, value: Any, graph: Op) -> tuple[list[Any], bool]:
    """(parts, atom): the code of a value forward computes from its inputs alone; atom when it
    needs no parentheses as an operand."""
    if isinstance(value, (tuple, list)):
        items = [_spell(program, v, graph)[0] for v in value]
        joined = _joined(items)
        if isinstance(value, list):
            return ["[", *joined, "]"], True
        return ["(", *joined, ",)" if len(items) == 1 else ")"], True
    if not isinstance(value, Ref):
        text = constant(value)
        return [text], not text.startswith("-")
    op = program.op(value.name)
    if op.kind == "input":
        return [value], True
    if op.kind == "function":
        module, _, name = op.target.rpartition(".")
        args = [_operand(program, a, graph) for a in op.args]
        if module == "operator" and name in BINARY and len(args) == 2:
            return [*args[0], f" {BINARY[name]} ", *args[1]], False
        if module == "operator" and name in UNARY and len(args) == 1:
            return [UNARY[name], *args[0]], False
        if module == "operator" and name == "getitem" and len(args) == 2:
            return [*args[0], "[", *_spell(program, op.args[1], graph)[0], "]"], True
        if module != "operator" and op.target != "getattr":
            return [f"{op.target}(", *_call_args(program, op, 0, graph), ")"], True
    if op.kind == "method" and op.args:
        receiver = _operand(program, op.args[0], graph)
        return [*receiver, f".{op.target}(", *_call_args(program, op, 1, graph), ")"], True
    if op.kind == "graph":  # g.edata of `g = dgl.add_self_loop(g)`
        raise UnsupportedOperationError(
            f"{graph.location or 'forward'}: the edges of dgl.edge_subgraph are picked by the edge "
            f"data of {op.target}(...), a graph forward derives from its graph: its edges are not "
            "the graph's, so the graph's edge data does not carry over. Pick them on the graph "
            "forward takes, or pass the subgraph to the model."
        )
    raise UnsupportedOperationError(
        f"{graph.location or 'forward'}: the edges of dgl.edge_subgraph are computed with "
        f"{f'{op.accessor} ({op.class_name})' if op.accessor else op.target or op.kind}, not from "
        "forward's inputs alone. Layer-wise "
        "inference makes the subgraph once on the whole graph, so its edges may depend only on "
        "the graph's data (`g.edata[dgl.ETYPE] == 0`) or forward's inputs. Compute the mask "
        "from those, or pass the subgraph to the model."
    )


def _operand(program: Program, value: Any, graph: Op) -> list[Any]:
    parts, atom = _spell(program, value, graph)
    return parts if atom else ["(", *parts, ")"]


def _call_args(program: Program, op: Op, skip: int, graph: Op) -> list[Any]:
    items = [_spell(program, a, graph)[0] for a in op.args[skip:]]
    items += [[f"{k}=", *_spell(program, v, graph)[0]] for k, v in op.kwargs]
    return _joined(items)


def _joined(items: list[list[Any]]) -> list[Any]:
    joined: list[Any] = []
    for i, item in enumerate(items):
        joined += ([", "] if i else []) + item
    return joined

"""Part of stage 6, render: the lines a forward that works by node type around its
dgl.to_homogeneous needs (type_offsets.py): at the top of inference, the checks of the type lists
forward read, its dict inputs concatenated by type offsets as the conversion does, and `nodes=`
(IDs of each type returned) as IDs of the homogeneous graph; after the last layer, the result
split by node type as forward picks it."""

from __future__ import annotations

import json
from typing import Any, Callable

from gnn_codegen.ir import Program
from gnn_codegen.render.code import comment
from gnn_codegen.trace.type_offsets import TypeOffsets


def _inputs(program: Program, buffer: dict[str, str]) -> dict[str, str]:
    """forward's parameters -> their names in the generated method."""
    return {program.op(n).target: buffer[n] for n in program.inputs}


def preamble(program: Program, buffer: dict[str, str], g: str, nodes: str,
             take: Callable[[str], str]) -> tuple[list[str], str]:
    """Lines before the conversion of `g` (the heterograph); `buffer`: the inputs' names here.
    Returns them and the name of the list of rows per type of the result."""
    found: TypeOffsets | None = program.type_offsets
    if found is None:
        return [], ""
    inputs = _inputs(program, buffer)
    lines: list[str] = []
    for name in found.read:  # forward's Python over the types, decided from --metagraph
        value = found.type_list(name)
        lines += [f"if {g}.{name} != {_spell(value)}:",
                  f"    raise ValueError(\"generated for a heterograph of {name} {_plain(value)} (--metagraph), \"",
                  f"                     f\"as forward reads {g}.{name}; {g} has {{{g}.{name}}}\")"]
    counts = take("type_counts")
    ntype = take("ntype")
    if found.inputs:
        written = ", ".join(inputs[p] for p in found.inputs)
        lines += comment(f"forward writes {written} (a tensor per node type) on {g} and makes it homogeneous: "
                         "their rows are every type's in one tensor, by type offsets in the order of "
                         f"{g}.ntypes, as dgl.to_homogeneous concatenates them")
        lines += [f"{inputs[p]} = torch.cat([{inputs[p]}[{ntype}] for {ntype} in {g}.ntypes])" for p in found.inputs]
    if not found.picked:
        return lines, counts
    lines.append(f"{counts} = [{g}.num_nodes({ntype}) for {ntype} in {g}.ntypes]")
    by_type = take("nodes_by_type")
    single = found.picked[0][0] is None
    given = f"{{{g}.ntypes[{found.picked[0][1]}]: {nodes}}}" if single else nodes
    what = f"IDs of nodes of type {g}.ntypes[{found.picked[0][1]}]" if single else "a dict of IDs by node type"
    i = take("i")
    lines += comment(f"{nodes}= ({what}, as forward returns rows of that type) as IDs of the homogeneous "
                     "graph: each type's after the nodes of the types before it")
    lines += [f"if {nodes} is not None:",
              f"    {by_type} = {given}",
              f"    {nodes} = torch.cat([{by_type}[{ntype}] + sum({counts}[:{i}]) for {i}, {ntype} in "
              f"enumerate({g}.ntypes) if {ntype} in {by_type}])",
              f"    {counts} = [len({by_type}.get({ntype}, ())) for {ntype} in {g}.ntypes]"]
    return lines, counts


def result(program: Program, spelled: str, counts: str, take: Callable[[str], str]) -> tuple[list[str], str]:
    """forward's picks of rows by node type, of the homogeneous result `spelled`: lines, and
    what inference returns (`spelled` itself where forward picks none)."""
    found: TypeOffsets | None = program.type_offsets
    if found is None or not found.picked:
        return [], spelled
    parts = take("rows_by_type")
    lines = ["# forward's rows by node type (dgl.NTYPE == i): the type offsets' slices",
             f"{parts} = torch.split({spelled}, {counts})"]
    if found.picked[0][0] is None:
        return lines, f"{parts}[{found.picked[0][1]}]"
    return lines, "{" + ", ".join(f"{json.dumps(key)}: {parts}[{k}]" for key, k in found.picked) + "}"


def _spell(value: list[Any]) -> str:
    return repr([tuple(v) if isinstance(v, tuple) else v for v in value]).replace("'", '"')


def _plain(value: list[Any]) -> str:
    return _spell(value).replace('"', "")


def docstring(program: Program, buffer: dict[str, str], g: str, nodes: str) -> str:
    """The docstring's paragraph on the heterograph, its dict inputs and `nodes=` ("": none)."""
    found: TypeOffsets | None = program.type_offsets
    if found is None:
        return ""
    inputs = _inputs(program, buffer)
    text = f"{g}: the heterogeneous graph forward takes; inference makes it homogeneous as forward does."
    if found.inputs:
        text += (f" {', '.join(inputs[p] for p in found.inputs)}: a tensor per node type, as forward takes "
                 f"it, concatenated by type offsets (in the order of {g}.ntypes) as dgl.to_homogeneous does.")
    if not found.picked:
        return text + (f" {nodes}= and the rows returned are those of the homogeneous graph: every type's "
                       f"nodes by type offsets, in the order of {g}.ntypes.")
    if found.picked[0][0] is None:
        return text + (f" It returns forward's rows of the nodes of type {g}.ntypes[{found.picked[0][1]}], "
                       f"and {nodes}= takes IDs of that type.")
    return text + (f" It returns forward's rows by node type, and {nodes}= takes a dict of IDs by node type "
                   "(a type not in it gets no rows).")

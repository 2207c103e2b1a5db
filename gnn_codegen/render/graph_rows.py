"""Render, the rows one pass stores for every graph of a list as lists (issue 37): where a
pass stores, for each graph forward derives in its loop (graph_lists.py), the rows a user's
layer sends on that graph (the fc and attention term of an R-GAT's GAT per edge type, which
the cut runs once per node before the layer), those rows are one list indexed as the graphs
are, `feat1[j]` for `graphs[j]`, not a name per graph (`feat1_etype_0, el1_etype_0, ...`,
returned as a 7-tuple). The pass returns the lists (the runtime's map takes a list of tensors
as one result, each tensor stored), the call binds them, `x_skip1, feat1, el1 = ...`, and
each pass over a graph reads its item, `source_rows=dict(feat1=feat1[2], ...)`.

A list is made where the pass stores exactly one such tensor per graph of the list under one
base name (`feat1` + the graph's suffix); anything else keeps its names."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gnn_codegen.cut.plan import Stage
from gnn_codegen.errors import internal
from gnn_codegen.render.code import comment
from gnn_codegen.render.last_copies import _statements
from gnn_codegen.render.user_layers import graph_suffix

if TYPE_CHECKING:
    from gnn_codegen.render.layer import LayerFunction

# the Renderer (method.py): read for its plan, buffer, graph lists and names
Renderer = Any


@dataclass(frozen=True)
class RowList:
    """One list of per-graph rows: its name, and the values it holds, graph 0 first."""

    name: str
    values: tuple[str, ...]
    count: str  # the graphs' count as forward's loop spells it, `self.num_etypes`
    var: str  # forward's loop's variable, `j`


def listed_rows(r: Renderer) -> dict[int, list[RowList]]:
    """Stage index -> the lists of per-graph rows it stores; each value's buffer name made the
    list's item (`feat1[0]`)."""
    lists: dict[int, list[RowList]] = {}
    for stage in r.plan.stages:
        if any(r.attrs[v].rows != "node" for v in stage.stores):  # map's lists: of node rows alone
            continue
        groups: dict[tuple[str, int], tuple[Any, dict[int, str | None]]] = {}
        for value in stage.stores:
            readers = [s for s in r.plan.stages if (value, "src") in s.loads]
            if len(readers) != 1 or readers[0].graph not in r.listed_graphs:
                continue
            listed = r.listed_graphs[readers[0].graph][0]
            suffix = "_" + graph_suffix(r.plain_graph_name[readers[0].graph], r.params[0])
            if not r.buffer[value].endswith(suffix):
                continue
            _, group = groups.setdefault((r.buffer[value].removesuffix(suffix), id(listed)), (listed, {}))
            j = listed.ops.index(readers[0].graph)
            group[j] = None if j in group else value  # two of one base on a graph: not one list
        for (base, _), (listed, group) in groups.items():
            if sorted(group) != list(range(len(listed.ops))) or None in group.values():
                continue
            name = r.names.take(base)
            values = tuple(group[j] for j in range(len(listed.ops)))
            for j, value in enumerate(values):
                r.buffer[value] = f"{name}[{j}]"
            count = listed.loop.spelled or f"len({r.listed_graphs[listed.ops[0]][1]})"
            lists.setdefault(stage.index, []).append(RowList(name, values, count, listed.loop.var or "j"))
    return lists


def grouped(stores: list[str] | tuple[str, ...], lists: list[RowList], names: dict[str, str]) -> list[str]:
    """The names a call binds the stage's results to, in the order it stores them, each list
    of per-graph rows once, at its first item's place (`x_skip1, feat1, el1`)."""
    return _grouped(stores, lists, lambda v: names[v] if isinstance(v, str) else v.name)


def _grouped(stores: list[str] | tuple[str, ...], lists: list[RowList], spell) -> list[str]:
    of = {value: row_list for row_list in lists for value in row_list.values}
    results: list[str] = []
    for value in stores:
        if value not in of:
            results.append(spell(value))
        elif of[value].values[0] == value:
            results.append(spell(of[value]))
    return results


def returning_lists(lists: dict[int, list[RowList]], stages: list[Stage],
                    functions: list["LayerFunction"]) -> list["LayerFunction"]:
    """The functions, those of stages that store lists of per-graph rows returning each as a
    list, `return x_skip1, [feat, feat_2], [el, el_2]`."""
    return [_returning_lists(f, stage.stores, lists[stage.index]) if stage.index in lists else f
            for stage, f in zip(stages, functions)]


def _returning_lists(function: "LayerFunction", stores: list[str] | tuple[str, ...],
                     lists: list[RowList]) -> "LayerFunction":
    try:
        tree = ast.parse(textwrap.dedent("\n".join(function.body)))
    except SyntaxError:
        tree = None
    statement = tree.body[-1] if tree is not None and tree.body else None
    elements = statement.value.elts if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Tuple) else []
    if statement is None or len(elements) != len(stores):  # a value per stored tensor: written so
        raise internal(f"{function.name} returns no tuple of a value per stored tensor")
    start = statement.lineno - 1  # the return's first line (a long one spans several)
    indent = function.body[start][: len(function.body[start]) - len(function.body[start].lstrip())]
    # a value the return computes (`return _graph_conv_source(...), ...`) is named first
    taken = {w for line in function.body for w in re.findall(r"\b\w+\b", line)}
    names, bound = [], []
    for element in elements:
        if isinstance(element, ast.Name):
            names.append(element.id)
            continue
        name = next(f"rows_{k}" for k in range(len(taken) + 1) if f"rows_{k}" not in taken)
        taken.add(name)
        names.append(name)
        bound.append(f"{indent}{name} = {ast.unparse(element)}")
    local = dict(zip(stores, names))
    results = _grouped(stores, lists, lambda v: local[v] if isinstance(v, str)
                       else "[" + ", ".join(local[item] for item in v.values) + "]")
    body = [*function.body[:start], *bound, f"{indent}return {', '.join(results)}"]
    folded = looped(body, lists, local)
    return replace(function, body=folded if folded is not None else body)


# a module of a list as the generated code reaches it, its last index apart: `self.convs[1]`, `[2]`
_LAST_INDEX = re.compile(r"\b(self(?:\.\w+)+(?:\[\d+\])*)\[(\d+)\]")


def indexed(text: str, j: int, var: str) -> str:
    """text with each module's last index that is j written as var: `self.convs[1][j]`."""
    return _LAST_INDEX.sub(lambda m: f"{m.group(1)}[{var}]" if int(m.group(2)) == j else m.group(0), text)


def looped(body: list[str], lists: list[RowList], local: dict[str, str]) -> list[str] | None:
    """The body with the statements that compute each graph's rows, one per graph, in order,
    alike but for the graph's index in their modules' (`self.convs[1][2]`) and the names they
    bind, written once in a loop over the graphs that appends to the lists,

        feat1, el1 = [], []
        for j in range(self.num_etypes):
            feat, el = _gat_conv_source(self.convs[1][j], x_skip)
            feat1.append(feat)
            ...
        return x_skip1, feat1, el1

    None where they are not so (the lists stay written out in the return)."""
    statements = _statements(body)
    if statements is None or not lists:
        return None
    count = len(lists[0].values)
    items = [[local[row_list.values[j]] for row_list in lists] for j in range(count)]
    # the statement binding graph j's rows, each binding them all and nothing else
    at = []
    for names in items:
        binding = [k for k, (_, node) in enumerate(statements) if isinstance(node, ast.Assign)
                   and len(node.targets) == 1 and set(_bound(node.targets[0])) == set(names)
                   and len(_bound(node.targets[0])) == len(names)]
        if len(binding) != 1:
            return None
        at.append(binding[0])
    if at != list(range(at[0], at[0] + count)):
        return None
    taken = {n.id for _, node in statements for n in ast.walk(node) if isinstance(n, ast.Name)}
    var = next(v for v in (lists[0].var, "j", "k", "t") if v not in taken)
    # the same once each graph's names are the first graph's and its index the loop's variable
    renames = [dict(zip(names, items[0])) for names in items]
    code = [_renamed(indexed(ast.unparse(statements[k][1]), j, var), renames[j]) for j, k in enumerate(at)]
    if len(set(code)) != 1:
        return None
    # ...and read nowhere else but in the return (the last statement)
    rest = [node for k, (_, node) in enumerate(statements) if k not in at][:-1]
    if any(isinstance(n, ast.Name) and n.id in names for names in items for node in rest for n in ast.walk(node)):
        return None
    lines, node = statements[at[0]]
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip())]
    notes = [line.lstrip()[2:] for line in lines if line.lstrip().startswith("# ")]
    said = comment(indexed(" ".join(notes), 0, var), 80) if notes else []
    names = [row_list.name for row_list in lists]
    loop = [f"{indent}{', '.join(names)} = {', '.join('[]' for _ in names)}",
            f"{indent}for {var} in range({lists[0].count}):",
            *(f"{indent}    {line}" for line in said),
            f"{indent}    {code[0]}",
            *(f"{indent}    {name}.append({item})" for name, item in zip(names, items[0]))]
    ret = statements[-1][0][-1]
    returned = ret.replace("[" + ", ".join(items[0]) + "]", names[0]) if len(lists) == 1 else ret
    for row_list, item_names in zip(lists, zip(*items)):
        returned = returned.replace("[" + ", ".join(item_names) + "]", row_list.name)
    before = [line for k in range(at[0]) for line in statements[k][0]]
    after = [line for k in range(at[-1] + 1, len(statements) - 1) for line in statements[k][0]]
    return [*before, *loop, *after, returned]


def _bound(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]  # type: ignore[union-attr]
    return ["\0"]


def _renamed(code: str, names: dict[str, str]) -> str:
    return re.sub(r"(?<![.\w])\w+\b", lambda m: names.get(m.group(0), m.group(0)), code) if names else code

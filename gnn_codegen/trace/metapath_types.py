"""Stage 2, trace: the node and edge types of a metapath graph (`new_g.srctypes[0]`,
`new_g.dsttypes[0]`: OpenHGNN's MetapathConv keys its features and results by them), decided
while tracing. A metapath graph made of forward's heterograph (metapaths.py) has one node type,
where the metapath starts and ends, whose nodes are forward's rows, and one edge type, DGL's
`_E`; so its type lists are fixed by the schema, never by data.

The rows type's name is the user's: forward's dict of features by node type names it
(dict_inputs.py, `--feat-dims paper=64`: `paper`). Where nothing names it, reading a type list is
refused, since a name of gnn-codegen's own would become a key of forward's result. The probe's
and the check's heterographs name their rows type so (metapaths.metapath_schema), and the
generated method checks at its top that each metapath graph's type is that one."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

import dgl
import torch.fx as fx

from gnn_codegen.errors import GraphUseError

# the type lists of a DGL graph that a metapath graph's schema fixes
TYPE_LISTS = frozenset({"ntypes", "srctypes", "dsttypes", "etypes", "canonical_etypes"})
# DGL's name for the one edge type of a metapath graph
METAPATH_ETYPE = "_E"

_named: contextvars.ContextVar[str | None] = contextvars.ContextVar("rows_type", default=None)


@contextlib.contextmanager
def rows_type_named(name: str | None) -> Iterator[None]:
    """While inside, forward's rows are of the node type `name` (None: no name is known)."""
    token = _named.set(name)
    try:
        yield
    finally:
        _named.reset(token)


def named_rows_type() -> str | None:
    return _named.get()


def rows_type_of(dict_inputs: tuple[Any, ...]) -> str | None:
    """The node type forward's rows are of, where its one dict of features has one type."""
    if len(dict_inputs) == 1 and len(dict_inputs[0][1]) == 1:
        return str(dict_inputs[0][1][0][0])
    return None


def is_metapath_graph(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target in (dgl.metapath_reachable_graph,) \
        or node.op == "call_function" and getattr(node.target, "__name__", "") == "metapath_reachable_graph"


def type_list(graph: fx.Proxy, name: str) -> list[Any] | None:
    """`graph.<name>` for a type list of a metapath graph: its value, else None."""
    if name not in TYPE_LISTS or not is_metapath_graph(graph.node):
        return None
    ntype = named_rows_type()
    if ntype is None:
        raise GraphUseError(
            f"forward reads the {name} of a metapath graph, which are the names of your graph's node "
            "types: gnn-codegen knows the one type where the metapaths start and end only from forward's "
            "dict of features by node type when that dict holds that type alone. Take the features as "
            "such a dict (def forward(self, g, h_dict), h_dict[\"paper\"]) with --feat-dims paper=WIDTH "
            "naming only that type, or use the features without reading the graph's types."
        )
    if name == "etypes":
        return [METAPATH_ETYPE]
    if name == "canonical_etypes":
        return [(ntype, METAPATH_ETYPE, ntype)]
    return [ntype]

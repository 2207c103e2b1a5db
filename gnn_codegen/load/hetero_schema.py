"""The node and edge types a heterogeneous model works on: read from its HeteroGraphConv
modules where they are keyed by canonical edge types, or given with --metagraph; and random
heterographs of that schema for the check before writing."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import dgl
import dgl.nn as dglnn
import torch

from gnn_codegen.errors import OptionsError

Relation = tuple[str, str, str]  # DGL's canonical edge type: (source type, edge type, destination type)


@dataclass(frozen=True)
class Schema:
    relations: tuple[Relation, ...]  # sorted, as DGL lists a heterograph's canonical_etypes

    @property
    def ntypes(self) -> tuple[str, ...]:
        return tuple(sorted({t for s, _, d in self.relations for t in (s, d)}))

    def into(self, ntype: str) -> tuple[Relation, ...]:
        return tuple(r for r in self.relations if r[2] == ntype)


# a heterograph's subgraph of some of its types, and what DGL's functions for it read of the graph
TYPE_SUBGRAPHS = frozenset({"edge_type_subgraph", "node_type_subgraph", "get_etype_id", "get_ntype_id"})
TYPE_SUBGRAPH_REFUSAL = (
    "forward makes a subgraph of some of its graph's types (dgl.edge_type_subgraph, "
    "dgl.node_type_subgraph) and runs layers on it, which gnn-codegen does not follow on a graph "
    "with HeteroGraphConv layers yet: it runs each HeteroGraphConv over every relation of forward's "
    "graph, from the types that have features. Make the subgraph before calling the model, and call "
    "the model and its inference on it (a model per subgraph), or evaluate this model with its "
    "full-graph forward."
)


def hetero_convs(model: torch.nn.Module) -> list[dglnn.HeteroGraphConv]:
    return [m for m in model.modules() if isinstance(m, dglnn.HeteroGraphConv)]


# what a user's own heterogeneous layer does in its forward: message passing, per type
_PASSES_MESSAGES = ("multi_update_all", "update_all")
_PER_TYPE = ("canonical_etypes", ".ntypes", "srctypes", "dsttypes", ".etypes")


def is_hetero_layer(module: torch.nn.Module) -> bool:
    """A user's own heterogeneous layer (DGL's hetero RGCN tutorial, hgt and GNN-FiLM examples):
    a module of theirs, with no HeteroGraphConv inside, whose forward passes messages over the
    graph's types (`for srctype, etype, dsttype in G.canonical_etypes`, `G.multi_update_all`)."""
    cls = type(module)
    if cls.__module__.startswith(("torch.", "dgl.")) or any(isinstance(m, dglnn.HeteroGraphConv) for m in module.modules()):
        return False
    return _forward_passes_messages_per_type(cls)


@functools.lru_cache(maxsize=None)
def _forward_passes_messages_per_type(cls: type) -> bool:
    """Read off the class's forward once: the tracer asks for every module it meets."""
    try:
        source = inspect.getsource(cls.forward)
    except (OSError, TypeError):
        return False
    return any(m in source for m in _PASSES_MESSAGES) and any(m in source for m in _PER_TYPE)


def hetero_layers(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """The user's own heterogeneous layers inside the model (never the model itself)."""
    return [(name, m) for name, m in model.named_modules() if m is not model and is_hetero_layer(m)]


def is_heterogeneous(model: torch.nn.Module) -> bool:
    return bool(hetero_convs(model)) or bool(hetero_layers(model))


def parse_metagraph(spec: str) -> Schema:
    relations = []
    for item in spec.split(","):
        parts = tuple(p.strip() for p in item.split(":"))
        if len(parts) != 3 or not all(parts):
            raise OptionsError(
                f"--metagraph item '{item}' is not SRC:RELATION:DST; write e.g. --metagraph "
                "'author:writes:paper,paper:cites:paper' (one item per canonical edge type)."
            )
        relations.append(parts)
    return Schema(tuple(sorted(set(relations))))  # type: ignore[arg-type]


def model_schema(model: torch.nn.Module, metagraph: str | None) -> Schema:
    """--metagraph, or the canonical edge types the model's HeteroGraphConv modules are keyed by."""
    relation_names = sorted({str(k) for conv in hetero_convs(model) for k in conv.mod_dict})
    if metagraph:
        schema = parse_metagraph(metagraph)
        known = {r[1] for r in schema.relations} | {str(r) for r in schema.relations}
        missing = [k for conv in hetero_convs(model) for k in map(str, conv.mod_dict) if k not in known]
        if missing:
            raise OptionsError(
                f"--metagraph has no relation {missing[0]}, which a HeteroGraphConv of the model has a "
                "module for: give every relation of the graph as SRC:RELATION:DST."
            )
        return schema
    keys = [k for conv in hetero_convs(model) for k in conv.mod_dict]
    layers = hetero_layers(model)
    if keys and all(isinstance(k, tuple) and len(k) == 3 for k in keys) and not layers:
        return Schema(tuple(sorted(set(keys))))
    if not keys:
        path, layer = layers[0]
        raise OptionsError(
            f"self.{path} ({type(layer).__name__}) is a heterogeneous layer of your own, and gnn-codegen "
            "needs the graph's node and edge types to check the generated code on a heterograph. Give "
            "the graph's canonical edge types with --metagraph, e.g. --metagraph "
            "'user:follows:user,user:buys:item' (your graph's g.canonical_etypes)."
        )
    path = next(name for name, m in model.named_modules() if isinstance(m, dglnn.HeteroGraphConv))
    shown = ", ".join(relation_names[:6]) + (", ..." if len(relation_names) > 6 else "")
    raise OptionsError(
        f"self.{path} (HeteroGraphConv) has a module per relation name ({shown}), and a name does "
        "not say which node types the relation joins, which gnn-codegen needs to check the "
        "generated code on a heterograph. Give the graph's canonical edge types with --metagraph, "
        "e.g. --metagraph 'user:follows:user,user:buys:item' (your graph's g.canonical_etypes), or "
        "key the modules by canonical edge types."
    )


def random_heterograph(schema: Schema, num_nodes: dict[str, int], avg_degree: int = 4, seed: int = 0,
                       empty: Relation | None = None) -> dgl.DGLHeteroGraph:
    """Edges drawn uniformly per relation, with one destination in ten of each relation receiving
    none of its edges; `empty`: a relation left without edges."""
    gen = torch.Generator().manual_seed(seed)
    data = {}
    for rel in schema.relations:
        src_type, _, dst_type = rel
        count = 0 if rel == empty else num_nodes[dst_type] * avg_degree // max(1, len(schema.into(dst_type)))
        src = torch.randint(0, num_nodes[src_type], (count,), generator=gen)
        dst = torch.randint(0, num_nodes[dst_type], (count,), generator=gen)
        keep = dst % 10 != len(rel[1]) % 10  # which destinations go without: by relation
        data[rel] = (src[keep], dst[keep])
    return dgl.heterograph(data, num_nodes_dict=dict(num_nodes))

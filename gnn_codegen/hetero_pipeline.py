"""The heterogeneous pipeline: schema -> trace -> plan -> render -> splice -> format -> verify.
pipeline.generate_all hands a model over when it holds a HeteroGraphConv."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import dgl.nn as dglnn
import torch

from gnn_codegen.errors import FeatDimsError
from gnn_codegen.write.format import format_source
from gnn_codegen.cut.hetero import build_hetero_plan
from gnn_codegen.render.hetero_layer import HETERO_CONV, HETERO_CONV_SOURCES, RELATION_SOURCE
from gnn_codegen.render.hetero import RUNTIME, HeteroRenderer
from gnn_codegen.load.hetero_schema import Schema, model_schema
from gnn_codegen.trace.hetero_defaults import trace_with_defaults
from gnn_codegen.trace.hetero import parse_forward_args
from gnn_codegen.load.model import LoadedModel
from gnn_codegen.write.splice import ends_with_helpers, splice
from gnn_codegen.render.in_eval import in_eval
from gnn_codegen.render.templating import render_template
from gnn_codegen.render.runtime_module import imported, runtime_module_of, variant_source
from gnn_codegen.render.helpers_section import model_helpers, under_banner
from gnn_codegen.render.relation_weights import weights_combine
from gnn_codegen.render.runtime_section import HETERO_TESTED_BY, runtime_helpers, stamp
from gnn_codegen.trace.write_out import SECTIONS, sections_needed

if TYPE_CHECKING:
    from gnn_codegen.generated import Generated, GenerateOptions

# the helpers a heterogeneous layer calls (HeteroRenderer.sections, templates/hetero_convs.py.j2)
# -> the written-out convolutions' parts they call (templates/convs.py.j2), by the modules the
# model's HeteroGraphConvs hold: a GATConv's parts only where one does
HETERO_SECTIONS = {"hetero_conv": ("graph_conv_source", "graph_conv_aggregate"), "relation_sources": ()}
_RELATION_PARTS = {"graph_conv": ("graph_conv_source", "graph_conv_aggregate"), "gat": ("gat_conv_attention", "gat_conv_destination")}


def relation_kinds(model: torch.nn.Module) -> frozenset[str]:
    """Which of GraphConv ("graph_conv") and GATConv ("gat") the model's HeteroGraphConvs hold."""
    mods = [m for conv in model.modules() if isinstance(conv, dglnn.HeteroGraphConv) for m in conv.mods.values()]
    return frozenset(kind for kind, cls in (("graph_conv", dglnn.GraphConv), ("gat", dglnn.GATConv))
                     if any(isinstance(m, cls) for m in mods))


def hetero_helpers(sections: set[str] | frozenset[str],
                   kinds: frozenset[str] = frozenset({"graph_conv", "gat"}), weight_basis: bool = False) -> str:
    """The helpers the layers call, only those (no GATConv's parts for an RGCN), as rendered.
    weight_basis: _relations_product first looks for relations whose weights are combinations
    of the others' (_find_weight_basis; relation_weights.py says where the model has them)."""
    weight_basis = weight_basis and "relation_sources" in sections and "graph_conv" in kinds
    parts = {part for s in sections for part in HETERO_SECTIONS[s]}
    if "relation_sources" in sections:
        parts |= {part for kind in kinds for part in _RELATION_PARTS[kind]}
        if weight_basis:  # _relations_product's basis of weights, found once
            parts.add("once_for")
    used = {*sections, *sections_needed(parts)}
    # every section's name: a docstring of one names another
    names = SimpleNamespace(hetero_conv=HETERO_CONV, hetero_conv_sources=HETERO_CONV_SOURCES,
                            relation_source=RELATION_SOURCE, relation_sum="_relation_sum", sums_relations="_sums_relations",
                            relations_product="_relations_product", find_weight_basis="_find_weight_basis",
                            fits_product="_fits_product", stacked_weights="_stacked_weights",
                            **{s: f"_{s}" for s in SECTIONS})
    layers = render_template("hetero_convs.py.j2", used=used, names=names, gat="gat" in kinds,
                             graph_conv="graph_conv" in kinds, weight_basis=weight_basis) if sections else ""
    return "\n\n\n".join(p.strip("\n") for p in (layers, model_helpers(used, names)) if p.strip())


def render_hetero_helpers(sections: set[str] | frozenset[str], version: str,
                          kinds: frozenset[str] = frozenset({"graph_conv", "gat"}), runtime: bool = True,
                          weight_basis: bool = False) -> str:
    """The helpers the layers call (hetero_helpers) under their banner (helpers_section.py),
    then the runtime under its banner (runtime_section.py), one text in every heterogeneous
    module; runtime=False: the helpers alone (the runtime is imported: --runtime-module)."""
    helpers = hetero_helpers(sections, kinds, weight_basis)
    if not runtime:
        return under_banner(helpers, version, runtime_follows=False)
    return runtime_helpers(under_banner(helpers, version), version, RUNTIME, variant_source(RUNTIME), HETERO_TESTED_BY)


@functools.cache
def _written_basis_search() -> Callable[[list[torch.Tensor]], Any]:
    """_find_weight_basis as the helpers write it: the generator asks the search the module
    would run, so that its choice and the module's finding cannot drift apart."""
    namespace: dict[str, Any] = {}
    exec("import dgl\nimport torch\n" + hetero_helpers({"relation_sources"}, frozenset({"graph_conv"}), True), namespace)
    return namespace["_find_weight_basis"]


def feature_types(schema: Schema, feat_dims: dict[str, tuple[int, ...]]) -> tuple[str, ...]:
    """The node types forward's feature dicts hold: those --feat-dims names, else every type."""
    unknown = [t for t in feat_dims if t not in schema.ntypes]
    if unknown:
        raise FeatDimsError(
            f"--feat-dims {unknown[0]}=...: the graph has no node type {unknown[0]} (its types: "
            f"{', '.join(schema.ntypes)}). For a heterogeneous model, --feat-dims gives the width of "
            "each node type's features, by type."
        )
    return tuple(t for t in schema.ntypes if t in feat_dims) if feat_dims else schema.ntypes


def generate_hetero(loaded: LoadedModel, options: GenerateOptions, feat_dims: dict[str, tuple[int, ...]],
                    header: dict[str, Any], warnings: tuple[str, ...]) -> Generated:
    from gnn_codegen.verify.hetero import verify_hetero
    from gnn_codegen.generated import Generated

    schema = model_schema(loaded.model, options.metagraph)
    traced = trace_with_defaults(loaded.model, schema, feature_types(schema, feat_dims), loaded.path,
                                 parse_forward_args(loaded.model, options.forward_args))
    plan = build_hetero_plan(traced)
    namespace = vars(loaded.module)
    reserved = {n for n in namespace if not n.startswith("__")} | {"torch", "dgl"}
    renderer = HeteroRenderer(plan, namespace, reserved)
    method = renderer.method({**header, "relations": schema.relations,
                              "in_eval": in_eval(loaded.model, traced.graph_module)})
    name = options.runtime_module  # the runtime imported from NAME.py, checked on import
    # the basis search only where the weights forward gives the relations now hold combinations (a
    # basis decomposition, a weight shared): it finds none in others. Weights that become
    # combinations only in training lose the search's speed-up, never exactness: without it
    # every relation's weight is applied as given
    basis = "relation_sources" in renderer.sections and weights_combine(traced, schema.relations, _written_basis_search())
    helpers = render_hetero_helpers(renderer.sections, header["version"], relation_kinds(loaded.model), not name, basis)
    imports, check = imported(name, RUNTIME, RUNTIME, reserved, header["version"]) if name else ((), "")
    source = splice(loaded.source, loaded.class_name, method, helpers,
                    render_template("header.py.j2", **header), options.method_name, imports, check)
    # the helpers are black's format as rendered (the goldens' black check covers both variants):
    # only the rest is formatted
    tail = helpers if ends_with_helpers(source, helpers) else ""
    generated = Generated(stamp(format_source(source, tail)), loaded, None, None, None, warnings, header["target"],  # type: ignore[arg-type]
                          method_name=options.method_name, hetero=plan, schema=schema,
                          feat_dims=tuple(feat_dims.items()), hetero_layout=tuple(renderer.layout),
                          runtime_module=runtime_module_of(name, header["version"]))
    if not options.verify:
        return generated
    result = verify_hetero(generated)
    return replace(generated, verification=result, notes=generated.notes + result.notes)

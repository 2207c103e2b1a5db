"""The one place that knows the order of the stages: load -> trace -> lower -> simplify ->
infer attributes -> cut and plan -> render -> splice -> format."""

from __future__ import annotations

import inspect
import json
import shlex
from dataclasses import replace

import torch

from gnn_codegen.trace.relation_graphs import uses_relation_graphs
from gnn_codegen.trace.type_offsets import known_types
from gnn_codegen.analysis.attributes import Attributes, infer_attributes
from gnn_codegen.analysis.commuted import one_order
from gnn_codegen.analysis.constant_scalars import with_constant_scalars
from gnn_codegen.analysis.trailing_ones import without_norm_reshapes
from gnn_codegen.analysis.dtype_witnesses import one_dtype_witness
from gnn_codegen.analysis.unit_weights import without_unit_weights
from gnn_codegen.analysis.device_moves import without_needless_moves
from gnn_codegen.analysis.block_as_graph import as_graph_notes
from gnn_codegen.cut.placement import DEFAULT_FANOUT
from gnn_codegen.cut.search import SEARCH_LIMIT
from gnn_codegen.errors import (
    FeatDimsError, GnnCodegenError, GraphValueError, OptionsError, UnsupportedModuleError,
)
from gnn_codegen.write.format import format_source
from gnn_codegen.lower.module_lengths import hop_counts, module_lengths, tested_functions, unset_functions
from gnn_codegen.lower.loop_ranges import loop_ranges
from gnn_codegen.lower.setting_tests import setting_branches
from gnn_codegen.lower.edge_masks import fold_edge_masks
from gnn_codegen.lower.functionalize import functionalize
from gnn_codegen.generated import Generated, GenerateOptions
from gnn_codegen.analysis.graph_fields import field_view, give_graph_data
from gnn_codegen.trace.graph_proxy import BATCH_SIZE
from gnn_codegen.trace.dict_inputs import proven_with_dicts
from gnn_codegen.hetero_pipeline import generate_hetero
from gnn_codegen.load.hetero_schema import is_heterogeneous
from gnn_codegen.ir import Program
from gnn_codegen.load.json_options import json_object
from gnn_codegen.write.left_out import forward_effects, top_level_report
from gnn_codegen.load.model import LoadedModel, load, parse_init
from gnn_codegen.lower.program import lower
from gnn_codegen.load.method_name import DEFAULT_METHOD_NAME, check_method_name
from gnn_codegen.trace.plain_containers import held_parameters_note, registered
from gnn_codegen.cut.plan import build_plan
from gnn_codegen.analysis.probe import prove_message_passing
from gnn_codegen.render.method import render
from gnn_codegen.render.built import built_digest
from gnn_codegen.render.in_eval import in_eval
from gnn_codegen.render.assumptions import decision_notes
from gnn_codegen.lower.row_axis import take_row_axes
from gnn_codegen.lower.row_ranges import refuse_other_rows, take_row_ranges
from gnn_codegen.lower.simplify import simplify
from gnn_codegen.render.runtime_module import HETERO_RUNTIME, runtime_hash, runtime_module_of
from gnn_codegen.render.runtime_section import stamp
from gnn_codegen.write.splice import ends_with_helpers, splice
from gnn_codegen.trace.traced import Traced
from gnn_codegen.trace.tracer import trace
from gnn_codegen.verify.check import verify
from gnn_codegen.trace.write_out import write_out

VERSION = "0.1.0"
FORWARD_ARGS_EXAMPLE = "--forward-args '{\"out_key\": \"paper\"}'"


def parse_feat_dims(spec: str | None) -> dict[str, tuple[int, ...]]:
    if not spec:
        return {}
    dims: dict[str, tuple[int, ...]] = {}
    for item in spec.split(","):
        name, sep, value = item.partition("=")
        try:
            shape = tuple(int(v) for v in value.split("x"))
        except ValueError:
            shape = ()
        if not sep or not name.strip().isidentifier() or not shape or min(shape) < 1:
            raise FeatDimsError(
                f"--feat-dims item '{item}' is not NAME=WIDTH; write e.g. --feat-dims x=602,w=1 "
                "(a multi-dimensional row is written 4x16)."
            )
        dims[name.strip()] = shape
    return dims


def regenerate_command(target: str, options: GenerateOptions) -> str:
    parts = ["gnn-codegen", target, "-o", options.output]
    if options.init is not None:
        parts += ["--init", json.dumps(json.loads(options.init), separators=(", ", ": "))]
    if options.feat_dims:
        parts += ["--feat-dims", options.feat_dims]
    for leaf in options.leaves:
        parts += ["--leaf", leaf]
    for mp in options.mp_modules:
        parts += ["--mp-module", mp]
    if options.fanout != DEFAULT_FANOUT:
        parts += ["--fanout", f"{options.fanout:g}"]
    if not options.optimize:
        parts += ["--simple-cut"]
    if options.method_name != DEFAULT_METHOD_NAME:
        parts += ["--method-name", options.method_name]
    if options.metagraph:
        parts += ["--metagraph", options.metagraph]
    if options.forward_args is not None:
        parts += ["--forward-args", json.dumps(json.loads(options.forward_args), separators=(", ", ": "))]
    if options.blocks is not None:
        parts += ["--blocks", str(options.blocks)]
    if options.runtime_module is not None:
        parts += ["--runtime-module", options.runtime_module]
    return shlex.join(parts)


def generate_all(target: str, options: GenerateOptions = GenerateOptions()) -> Generated:
    generated = _generate_all(target, options)
    # what of the user's file the module does not do: said, not dropped without a word
    loaded = generated.loaded
    warnings, notes = top_level_report(loaded.source, loaded.path, generated.source, loaded.class_name)
    warnings += forward_effects(loaded.source, loaded.path, loaded.class_name)
    return replace(generated, warnings=generated.warnings + warnings, notes=notes + generated.notes)


def _generate_all(target: str, options: GenerateOptions) -> Generated:
    feat_dims = parse_feat_dims(options.feat_dims)
    # the JSON options first: a typo in one is refused before the model's file is imported
    parse_init(options.init)
    json_object("--forward-args", options.forward_args, FORWARD_ARGS_EXAMPLE,
                "values for forward's parameters")
    loaded = load(target, options.init, options.metagraph)
    warnings = loaded.warnings + check_method_name(loaded, options.method_name)
    _check_classes(loaded.model, "--leaf", options.leaves)
    _check_classes(loaded.model, "--mp-module", options.mp_modules)
    leaves, forced_mp = frozenset(options.leaves), frozenset(options.mp_modules)
    if is_heterogeneous(loaded.model):
        if options.blocks is not None:
            raise OptionsError(
                "--blocks gives the number of blocks of a homogeneous model's forward; for a model with "
                "HeteroGraphConv the count is its HeteroGraphConv layers'. Leave --blocks out."
            )
        header = {"version": VERSION, "target": target, "command": regenerate_command(target, options),
                  "verified": options.verify, "method": options.method_name, "runtime_module": options.runtime_module,
                  "runtime_hash": runtime_hash(VERSION, HETERO_RUNTIME) if options.runtime_module else None,
                  "built": built_digest(loaded.model)}  # the instance traced, as inference checks it
        return generate_hetero(loaded, options, feat_dims, header, warnings)
    if options.forward_args is not None:
        raise OptionsError(
            "--forward-args gives values for a heterogeneous model's forward parameters (out_key); for "
            "this model give such a parameter a default in forward's signature instead."
        )
    namespace = vars(loaded.module)
    # a heterograph made homogeneous in forward (type_offsets.py); modules kept in plain lists
    # and dicts, as submodules (plain_containers.py); forward(self, g, h_dict) with --feat-dims by
    # node type (dict_inputs.py)
    with known_types(options.metagraph), registered(loaded.model):
        (traced, program, attrs, proof_notes), packed = proven_with_dicts(
            loaded.model, feat_dims, lambda widths: _proven_program(loaded, widths, leaves, forced_mp, options.blocks))
    if options.metagraph and program.homogenized is None and not uses_relation_graphs(program):
        raise OptionsError(
            "--metagraph gives the edge types of a heterogeneous graph for models whose layers are "
            "HeteroGraphConv, or whose forward makes its heterograph homogeneous (dgl.to_homogeneous, "
            "dgl.node_type_subgraph), and this model is neither. Leave it out: a model of one node and "
            "edge type needs none."
        )
    if packed:
        program = replace(program, dict_inputs=packed.dicts, signature=packed.signature(program.signature))
    # on the trace followed at last: graph data a module reads inside (`fn.u_mul_e("h", "w",
    # "m")`) is an input only once that module is traced into, which --feat-dims w=... may decide
    _check_feat_dims(traced, packed.widths(feat_dims) if packed else feat_dims)
    refuse_other_rows(program.output, lambda name: attrs[name].rows)
    plan = build_plan(program, attrs, options.fanout, options.optimize)
    if options.optimize and not plan.cut.placement.optimal:
        warnings += (
            "the search for the cheapest placement of the ops between layers stopped after "
            f"{SEARCH_LIMIT} partial placements; the generated code follows the cheapest one found, "
            "which is exact but may store more bytes than necessary (see --explain).",
        )
    module_names = {n for n in namespace if not n.startswith("__")}
    header = {"version": VERSION, "target": target, "command": regenerate_command(target, options),
              "verified": options.verify, "method": options.method_name,
              "runtime_module": options.runtime_module, "runtime_hash": runtime_hash(VERSION) if options.runtime_module else None,
              "built": built_digest(loaded.model),  # the instance traced, as inference checks it (built.py)
              "in_eval": in_eval(loaded.model, traced.graph_module)}
    rendered = render(program, attrs, plan, module_names, header)
    source = splice(loaded.source, loaded.class_name, rendered.method, rendered.helpers, rendered.header,
                    options.method_name, rendered.imports, rendered.after_imports)
    formatted = stamp(format_source(source, rendered.helpers if rendered.helpers_formatted
                                    and ends_with_helpers(source, rendered.helpers) else ""))
    generated = Generated(formatted, loaded, program, attrs, plan, warnings, target, rendered.buffers,
                          rendered.origins, method_name=options.method_name,
                          runtime_module=runtime_module_of(options.runtime_module, VERSION))
    generated = replace(generated, notes=_stand_in_notes(loaded) + _decision_notes(program) + proof_notes
                        + decision_notes(program.static_decisions) + _width_notes(generated)
                        + as_graph_notes(program) + held_parameters_note(loaded.model))
    if not options.verify:
        return generated
    result = verify(generated)
    return replace(generated, verification=result, notes=generated.notes + result.notes)


def _width_notes(generated: Generated) -> tuple[str, ...]:
    """Inputs whose width no module fixes: checked at a width of gnn-codegen's choosing."""
    return tuple(
        f"no module of the model fixes the width of forward's input {s.param}: checked with "
        f"{f'width {s.shape[0]}' if s.shape else f'one number per {s.rows}'}; the generated method "
        f"takes the width it is given (give --feat-dims {s.param}=WIDTH to check yours)"
        for s in generated.attributes.inputs if s.guessed
    )


def _decision_notes(program: Program) -> tuple[str, ...]:
    """forward tests which data its graph carries: say what the module was generated for."""
    return tuple(
        ("forward reads g.batch_size: generated for one graph (not a batch of graphs)" if view == BATCH_SIZE else
         f'forward tests "{key}" in g.{view}: generated for graphs '
         + ("that have it" if present else f"without it (give --feat-dims {key}=WIDTH for graphs with it)"))
        + "; the generated method checks that the graph it is given agrees"
        for view, key, present in program.decisions
    )


def _stand_in_notes(loaded: LoadedModel) -> tuple[str, ...]:
    if not loaded.stand_in_graphs:
        return ()
    names = ", ".join(loaded.stand_in_graphs)
    return (
        f"{loaded.class_name}'s constructor takes a graph ({names}), which --init cannot give: "
        f"gnn-codegen built the model with a stand-in graph of 8 nodes. The generated method takes "
        "the graph as its first argument and uses it wherever forward uses the graph the model keeps",
    )


def _proven_program(loaded: LoadedModel, feat_dims: dict[str, tuple[int, ...]], leaves: frozenset[str],
                    forced_mp: frozenset[str], blocks: int | None = None,
                    ) -> tuple[Traced, Program, Attributes, tuple[str, ...]]:
    """Trace, lower and infer attributes, with every message-passing module proven exact on
    blocks. A user's module the probe refuses (several rounds of update_all, graph.ndata on a
    block, out-degrees) is traced into instead, where its update_all calls written with DGL's
    built-in functions become hops of their own; if that cannot be traced either, the probe's
    refusal stands, but where it fails on a block only because `g.ndata` is ambiguous there and is
    exact on each block as a graph over its source nodes (block_as_graph.py), or reads its
    graph's out-degrees or data, which are given to it on each block. Also returns the proofs'
    notes (probe.py)."""
    through: frozenset[type] = frozenset()
    # user modules that fail on a block, proven exact on each block as a graph over its
    # sources, whose tracing into failed: run so (block_as_graph.py)
    as_graph: frozenset[type] = frozenset()
    # modules refused for reading out-degrees that could not be traced into either: called
    # with the whole graph's out-degrees on each block (write_out.py), and proven so
    out_degrees_of_graph: frozenset[type] = frozenset()
    # modules that read data of their graph and could not be traced into: called with the user's
    # graph's data set on each block (graph_fields.give_graph_data), by class: (view, key), ...
    fields_of: dict[type, tuple[tuple[str, str], ...]] = {}
    # the probe's refusal of the module traced into last: earlier ones traced, so a failure now
    # is this one's
    refusal: UnsupportedModuleError | None = None
    while True:
        try:
            traced = trace(loaded.model, loaded.path, leaves, forced_mp, through, frozenset(feat_dims), blocks,
                           feat_dims)
            traced = give_graph_data(traced, fields_of)
            write_out(traced.graph_module, traced.graph_arg, out_degrees_of_graph)
            program = lower(traced, vars(loaded.module), loaded.path, forced_mp)
            program = replace(program, module_lengths=module_lengths(loaded.model),
                              hop_counts=hop_counts(loaded.model), unset_functions=unset_functions(loaded.model),
                              tested_functions=tested_functions(loaded.model),
                              setting_branches=setting_branches(loaded.model, program.ops),
                              loop_ranges=loop_ranges(loaded.source, loaded.path, loaded.model))
            program = take_row_axes(take_row_ranges(simplify(functionalize(fold_edge_masks(program)))))
            attrs, probe_values = infer_attributes(traced, program, loaded.model, feat_dims, leaves)
            program = one_order(without_unit_weights(one_dtype_witness(program, attrs), attrs), attrs)
            program = without_norm_reshapes(with_constant_scalars(program, attrs), attrs)
            program = without_needless_moves(program, attrs)
            program, notes = prove_message_passing(program, loaded.model, probe_values, as_graph)
            return traced, program, attrs, notes
        except UnsupportedModuleError as exc:
            module_class = getattr(exc, "module_class", None)
            more = _more_graph_data(fields_of, module_class, getattr(exc, "graph_field", None))
            if more is not None:  # given its graph's data, it reads one more field
                fields_of = more
                continue
            given = through | as_graph | out_degrees_of_graph | set(fields_of)
            if module_class is not None and module_class not in given:
                # a module that failed on the probe graph for what it reads there unseen
                # (leaf_failure.py): tracing into it shows what, so what stops that trace is the message
                refusal = None if getattr(exc, "traced_into_explains", False) else exc
                through = through | {module_class}
                continue
            if module_class in out_degrees_of_graph and _exact_as_graph(exc):
                refusal = exc  # given g's out-degrees, it is exact on each block as a graph: run so
            if not _exact_as_graph(refusal):
                raise (refusal or exc) from None
        except (FeatDimsError, GraphValueError):
            if not _exact_as_graph(refusal):
                raise  # the module could be followed, given its input's width or other weights: say that
        except GnnCodegenError:
            if refusal is None:
                raise
            if not _exact_as_graph(refusal):
                # the module refused could not be traced into: what it reads of its graph is
                # given to it on each block instead, where the refusal says what that is
                module_class = getattr(refusal, "module_class", None)
                if module_class in fields_of or module_class in out_degrees_of_graph:
                    raise refusal from None
                more = _more_graph_data({**fields_of, module_class: ()}, module_class,
                                        getattr(refusal, "graph_field", None))
                if more is not None:
                    fields_of = more
                elif getattr(refusal, "reads_out_degrees", False):
                    out_degrees_of_graph = out_degrees_of_graph | {module_class}
                else:
                    raise refusal from None
                through = through - {module_class}
                continue
        # tracing into the module refused last failed, and it is exact on each block as a graph
        assert refusal is not None
        refused = getattr(refusal, "module_class")
        through, as_graph, refusal = through - {refused}, as_graph | {refused}, None


def _exact_as_graph(refusal: UnsupportedModuleError | None) -> bool:
    """The probe refused the module traced into last for failing on a block, and found it exact
    on each block as a graph over its sources (probe._prove_all)."""
    return refusal is not None and getattr(refusal, "exact_as_graph", False)


def _more_graph_data(fields_of: dict[type, tuple[tuple[str, str], ...]], module_class: type | None,
                     key: str | None) -> dict[type, tuple[tuple[str, str], ...]] | None:
    """fields_of with the field `key` that a module given its graph's data reads too, or None
    where it is not such a module, the field is given already, or its source does not say
    whether it reads it on edges or nodes."""
    if module_class not in fields_of or key is None:
        return None
    view = field_view(module_class, key)
    if view is None or (view, key) in fields_of[module_class]:
        return None
    return {**fields_of, module_class: (*fields_of[module_class], (view, key))}


def _check_classes(model: torch.nn.Module, option: str, names: tuple[str, ...]) -> None:
    """--leaf and --mp-module match modules by class name: a name that matches none is a typo
    that would otherwise change nothing, silently."""
    present = sorted({type(m).__name__ for m in model.modules()})
    for name in names:
        if name not in present:
            shown = ", ".join(present[:12]) + (f" and {len(present) - 12} more" if len(present) > 12 else "")
            raise OptionsError(
                f"{option} {name}: no module of {type(model).__name__} is of a class named {name}. "
                f"Its modules' classes are {shown}; give one of those."
            )


def _check_feat_dims(traced: Traced, dims: dict[str, tuple[int, ...]]) -> None:
    """A width for a name that forward's traced inputs lack would be ignored, silently."""
    parameters = inspect.signature(type(traced.model).forward).parameters
    for name in dims:
        if name not in traced.inputs:
            has = ", ".join(traced.inputs) or "none"
            # trace passes only the parameters without a default
            optional = name in parameters and parameters[name].default is not inspect.Parameter.empty
            left_out = f"; {name} has a default, so it is left out" if optional else ""
            typed = traced.type_offsets
            if typed is not None and typed.inputs and (name in typed.ntypes or not typed.relations):  # by type
                raise FeatDimsError(
                    f"--feat-dims {name}=...: forward writes {', '.join(typed.inputs)} (a tensor per node "
                    "type) on its heterograph and makes it homogeneous, which puts every type's rows in one "
                    f"tensor of one width: give that width by the parameter's name (--feat-dims "
                    f"{typed.inputs[0]}={dims[name][0] if dims[name] else 'WIDTH'}).")
            raise FeatDimsError(
                f"--feat-dims {name}=...: {type(traced.model).__name__}.forward has no tensor input "
                f"named {name} (its tensor inputs: {has}; its graph: {traced.graph_arg}{left_out}). Give "
                "the widths of forward's tensor inputs by their parameter names, and those of the graph's "
                "data it reads by their keys."
            )


def generate(target: str, options: GenerateOptions = GenerateOptions()) -> str:
    """The generated module's source for the model at `target` ("path/model.py:Name")."""
    return generate_all(target, options).source

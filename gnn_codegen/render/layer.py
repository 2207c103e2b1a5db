"""Render, one stage: the function a layer's batches run (`def layer_2(block, h1, h1_dst): ...`)
and the call that runs it (`h2 = batches.map(layer_2, source_rows=dict(h1=h1),
destination_rows=dict(h1_dst=h1), in_place=True)`).

The function's parameters are the rows the stage reads (source rows, destination rows, edges:
render binds each by its name to the tensor and the rows of it it takes), its body is the user's forward for
the stage, one line per op in the user's names, and it returns what later stages or the caller
read. In-place rewrites that keep batch-sized temporaries down live here too: an activation on a
tensor nothing else reads runs in place, and an nn.Linear over a concatenation of columns
nothing else reads sums a product per part instead of making the concatenation."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from gnn_codegen.trace.inline_mp import APPLY_EDGES, GATHERS, ROLE, VIEW, message_fields, spell
from gnn_codegen.ir import Op, Program, Ref
from gnn_codegen.names import NameAllocator
from gnn_codegen.analysis.mp_arguments import Space, mp_feature_spaces
from gnn_codegen.cut.plan import Stage, value_deps
from gnn_codegen.render.code import Code, Copy, comment
from gnn_codegen.render.joined_lines import written_inside_readers
from gnn_codegen.trace.write_out import ONCE_PER_NODE
from gnn_codegen.render.layer_expressions import OpExpressions
from gnn_codegen.render.sources_in_place import sources_in_place
from gnn_codegen.render.shared_constants import inline_reads, shared_constants
from gnn_codegen.render.local_names import bound_names, renamed, rename
from gnn_codegen.render.setting_branches import SettingBranches

if TYPE_CHECKING:
    from gnn_codegen.analysis.attributes import Attributes
    from gnn_codegen.render.method_constants import MethodConstants


class Renderer(Protocol):
    """What a layer's writer reads of the module's renderer (render.Renderer): the program and
    its facts, the names taken module-wide, and where to note each line's origin. A protocol, so
    that this module need not import the renderer that imports it."""

    program: Program
    attrs: Attributes
    inline: frozenset[str]
    buffer: dict[str, str]
    users: dict[str, list[str]]
    helper_names: dict[str, str]
    sections: set[str]  # the helpers' template sections the module's code calls
    generic: set[str]
    device: str
    block_as_graph: str
    reserved: set[str]
    closure_names: frozenset[str]
    method_constants: MethodConstants
    origins: list[tuple[str, str]]

    def note_origins(self, lines: list[str], op: Op | None) -> None: ...
    def base_name(self, op: Op) -> str: ...

# the longest statement black leaves on one line in a layer function's body (indented 12)
_STATEMENT_WIDTH = 88 - 12
# methods whose result is a view of their receiver, nothing else
_RESHAPES = ("flatten", "view", "reshape", "squeeze", "unsqueeze")
# written-out convolutions' per-node parts that take overwrite=True: on a tensor nothing else
# holds they scale it where it is (templates/convs.py.j2; not `in_place`, which is the
# runtime's keyword for rows read where they are stored)
_SCALES_IN_PLACE = ("graph_conv_source",)


@dataclass
class LayerFunction:
    """A stage written out: the function, and what render needs to call it."""

    name: str
    params: list[str]
    body: list[str]
    src: list[str] = field(default_factory=list)  # method-level tensors read on source rows
    dst: list[str] = field(default_factory=list)  # ... on destination rows (or node ranges)
    edges: list[str] = field(default_factory=list)  # ... on edges
    in_place: bool = False  # the runtime may read source rows in place (see LayerWriter.in_place)
    # where it may not though it reads source rows: why (`self.layers[1] (SAGEConv) reads them
    # outside messages`), for a comment where other layers of the module read theirs in place
    gathered: str = ""
    # what each result has a row per, where one is by edge: ("edges", "nodes"); () where all
    # are by node (the runtime's default)
    returns: tuple[str, ...] = ()

    def bindings(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """The parameters after `block` bound to the tensors they take, per kind of rows, as
        the runtime's map takes them: [(keyword, [(parameter, tensor)])]."""
        names, kinds = iter(self.params[1:]), []
        for keyword, tensors in (("source_rows", self.src), ("destination_rows", self.dst),
                                 ("edge_rows", self.edges)):
            kinds.append((keyword, [(next(names), tensor) for tensor in tensors]))
        return kinds


class LayerWriter(OpExpressions):
    """Writes the function of one stage."""

    def __init__(self, r: "Renderer", stage: Stage, name: str, node_ranges: bool = False):
        self.r, self.stage, self.name = r, stage, name
        # the prologue, or a pass between or after layers: ranges of nodes, no block (map_nodes)
        self.node_ranges = node_ranges or stage.index == 0 or stage.node_pass
        self.program = r.program
        self.space = {p.name: p.space for p in stage.ops}
        # the layer reads inference's `device` where forward reads a tensor's device
        # (reads_device): no local of the user's may take its name
        self.names = NameAllocator(r.reserved | r.closure_names | {"block", r.device})
        self.local: dict[tuple[str, Space], str] = {}  # (value, rows) -> local name
        self.params: dict[str, list[tuple[str, str]]] = {"src": [], "dst": [], "edge": []}
        self.lines: list[str] = []
        # values that are a tensor this batch made and nothing else holds: a written-out
        # convolution's result, and views of it that its only reader takes (`h = h.flatten(1)`)
        self.exclusive: set[str] = set()
        # values written inside their only reader's expression, as the user's line has them
        self.expressions: dict[tuple[str, Space], Code] = {}
        # the block as a graph over its sources, made before the first module that takes it
        # (block_as_graph.py)
        self.graph = ""
        # whether the runtime may read source rows in place, and if not, why (sources_in_place.py)
        self.in_place, self.gathered = sources_in_place(self.program, self.stage, self.node_ranges)
        # values of no rows read more than once here: computed once, named (shared_constants.py)
        self.shared = shared_constants(self.program, r.inline, [p.name for p in stage.ops])
        # shared value -> its local, once written (one the method computes once: its name there)
        self.constants: dict[str, str] = dict(r.method_constants.named)
        # nested(): whether a value was written inside a reader of its line other than the next
        # op (joined), and whether only the next op may take one (adjacent_only)
        self.joined = self.adjacent_only = False

    # -- the stage's inputs ---------------------------------------------------------------------
    # -- statements -----------------------------------------------------------------------------
    def primary_input(self, op: Op) -> tuple[str, Space] | None:
        """The value a chain `h = f(h)` continues: a convolution's source rows, else the first
        argument."""
        if op.kind == "mp":
            first, space = mp_feature_spaces(op)[0]
            deps = value_deps(self.program, self.r.inline, first)
            return (deps[0], space) if deps and isinstance(first, Ref) else None
        first_arg = op.args[1] if op.helper and len(op.args) > 1 else op.args[0] if op.args else None
        if not isinstance(first_arg, Ref) or first_arg.name in self.r.inline:
            return None
        return first_arg.name, self.space[op.name]

    def write(self) -> LayerFunction:
        """The stage's function; where a line joined from a value and a later reader of its line
        (nested) comes out longer than black's line, written again with each such value on a
        line of its own, as black would break that line at a subscript, not at its operators."""
        function = self._write()
        if self.joined and any(len(line) > _STATEMENT_WIDTH for line in function.body
                               if not line[:1].isspace() and not line.startswith("#")):
            again = LayerWriter(self.r, self.stage, self.name, self.node_ranges)
            again.adjacent_only = True
            return again._write()
        return function

    def _write(self) -> LayerFunction:
        program, uses = self.program, Counter[str]()
        for placed in self.stage.ops:
            op = program.op(placed.name)
            for d in value_deps(program, self.r.inline, (op.args, tuple(v for _, v in op.kwargs))):
                uses[d] += 1
        for name in self.stage.stores:
            uses[name] += 1
        # the rows this stage reads, in the plan's order (the parameters' order)
        for name, space in self.stage.loads:
            self.param(name, space)
        unpacked = self.unpackings()
        fused = self.linears_over_concatenations(uses)
        # what a shared value reads is written on a line of its own, not inside its reader's
        # expression (which the shared value's line, above that reader, could not read)
        shared_reads = set(value_deps(program, self.r.inline, tuple(program.op(s).args for s in self.shared)))
        nested = self.nested(uses, set(unpacked.values()) | set(fused.values()) | set(fused) | shared_reads)
        noted, branches = set(), SettingBranches(self.r, self.params)  # forward's setting tests, origins
        for placed in self.stage.ops:
            op = program.op(placed.name)
            branches.noted(self.lines, op)
            self.write_shared(op, placed.space)
            if placed.name in unpacked.values() or placed.name in fused.values():
                continue  # taken where its tuple is computed / never made (the Linear takes parts)
            if self.as_graph(op.name) and not self.graph:
                self.graph = self.names.take("graph")
                self.lines.append(f"{self.graph} = {self.r.block_as_graph}(block)")
            note = op.note
            if placed.space == "src" and not self.node_ranges and note.endswith(ONCE_PER_NODE):
                note = (note[: -len(ONCE_PER_NODE)] + " of each batch, not stored once per node: storing "
                        "its input takes less memory than storing its result")  # as cut.py found
            if note and note not in noted:  # why gnn-codegen added this line
                self.lines.extend(comment(note))
                noted.add(note)
            elements = [e for e in (unpacked.get((op.name, i)) for i in range(len(unpacked))) if e is not None]
            if elements:
                self.write_unpacking(op, elements, uses)
                continue
            if op.mp is not None and op.mp.inline:  # named after the field it reduces into
                target = self.names.take(op.var) if op.var else self.target(op, placed.space, uses)
                self.lines.extend(self.inline_update_all(op, target))
                self.local[(op.name, placed.space)] = target
                self.exclusive.add(op.name)
                continue
            primary = self.primary_input(op)
            sole = primary if primary and uses[primary[0]] == 1 and primary[0] in self.exclusive else None
            if sole and op.helper in _SCALES_IN_PLACE:
                # its input is this batch's own new tensor: scaled where it is, not into a new one
                op = replace(op, kwargs=(*op.kwargs, ("overwrite", True)))
            if placed.name in nested and not (op.mutates and not sole):
                written = replace(op, kwargs=(*op.kwargs, ("inplace", True))) if sole and op.activation_in_place else op
                self.expressions[(op.name, placed.space)] = self.op_expression(written, placed.space)
                if op.helper and op.kind == "mp" or sole and (written is not op or op.kind == "method"
                                                              and op.target in _RESHAPES):
                    self.exclusive.add(op.name)
                continue
            target = self.target(op, placed.space, uses)
            if placed.name in fused:
                self.lines.extend(self.linear_over_concatenation(op, program.op(fused[placed.name]), target))
                self.exclusive.add(op.name)
            elif sole and op.activation_in_place:
                # F.relu(h) on a tensor nothing else reads, as F.relu(h, inplace=True): the same
                # numbers without a new batch-sized tensor, which costs more to touch on a CPU
                written = replace(op, kwargs=(*op.kwargs, ("inplace", True)))
                self.lines.append(f"{target} = {self.op_expression(written, placed.space).text}")
                self.exclusive.add(op.name)
            elif op.mutates and not sole:
                # the op changes its input in place, and something else holds that tensor
                written = replace(op, args=(Copy(op.args[0]), *op.args[1:]))
                self.lines.append(f"{target} = {self.op_expression(written, placed.space).text}")
                self.exclusive.add(op.name)
            else:
                self.lines.append(f"{target} = {self.op_expression(op, placed.space).text}")
                if op.helper and op.kind == "mp" or sole and (op.mutates or op.kind == "method"
                                                              and op.target in _RESHAPES):
                    self.exclusive.add(op.name)
            self.local[(op.name, placed.space)] = target
        branches.noted(self.lines, None)
        return self.finish()

    def write_shared(self, op: Op, space: Space) -> None:
        """`re_norm = 2.0 / lambda_max` before the first op that reads it, for the shared values
        of no rows (shared_constants.py) it reads: its other readers read the name."""
        for name in inline_reads(self.program, self.r.inline, op):
            if name in self.shared and name not in self.constants:
                shared = self.program.op(name)
                local = self.names.take(shared.var or self.r.base_name(shared))
                self.lines.extend(comment(shared.note) if shared.note else [])  # where its numbers come from
                self.lines.append(f"{local} = {self.op_expression(shared, space).text}")
                self.constants[name] = local

    def inline_update_all(self, op: Op, target: str) -> list[str]:
        """An update_all written in forward (inline_mp.py), written back as the user wrote it, on
        the block: the fields its message reads, the call, the reduced field."""
        assert op.mp is not None
        message, reduce = op.args[1], op.args[2]
        if reduce[0] == APPLY_EDGES and message[0] in GATHERS:  # edges.src[k]: edge_functions.py
            end, rows = ("source", "src") if message[0] == "copy_u" else ("destination", "dst")
            value = self.arg(op.args[3], rows).text
            return [f"{target} = {value}[block.edges()[{GATHERS[message[0]]}]]  # each edge's {end} row"]
        lines = ["with block.local_scope():"]
        for (role_target, key), value in zip(message_fields(message), op.args[3:]):
            rows = ROLE[role_target]
            lines.append(f"    block.{VIEW[rows]}[{json.dumps(key)}] = {self.arg(value, rows).text}")
        functions = op.mp.functions
        if reduce[0] == APPLY_EDGES:  # a value per edge of the block (edge_functions.py)
            lines.append(f"    block.apply_edges({spell(message, functions)})")
            lines.append(f"    {target} = block.edata[{json.dumps(reduce[-1])}]")
            return lines
        lines.append(f"    block.update_all({spell(message, functions)}, {spell(reduce, functions)})")
        lines.append(f"    {target} = block.dstdata[{json.dumps(reduce[-1])}]")
        return lines

    def nested(self, uses: Counter[str], special: set[str]) -> set[str]:
        """Values to write inside their reader's expression, as the user's line or the library's
        has them (joined_lines.py); `special`: values written otherwise."""
        result, self.joined = written_inside_readers(self.program, self.r.inline, self.r.attrs, self.stage,
                                                     uses, special, self.adjacent_only)
        return result

    def target(self, op: Op, space: Space, uses: Counter[str]) -> str:
        """The name an op's value gets: `h = f(h)` when f is the only reader of h, as a person
        writes a chain of layers; else the user's name for it, or what computes it."""
        primary = self.primary_input(op)
        while primary in self.expressions:  # written inside this op: its chain continues below
            primary = self.primary_input(self.program.op(primary[0]))
        same_rows = op.kind == "mp" or primary is not None and primary[1] == space
        own_name = bool(op.var) and op.var not in self.r.generic
        if primary and primary in self.local and uses[primary[0]] == 1 and same_rows:
            local = self.local[primary]
            chain = not own_name or op.var == local
            made_by_us = bool(self.program.op(primary[0]).note)  # `feat` must not name the result
            is_param = any(local == name for params in self.params.values() for _, name in params)
            if chain and not made_by_us and not is_param:
                return local  # a parameter keeps the stored tensor's name: never reassigned
        return self.names.take(self.r.base_name(op))

    def write_unpacking(self, op: Op, elements: list[str], uses: Counter[str]) -> None:
        """`a, b = f(...)` for a tuple whose every element this stage takes."""
        space = self.space[op.name]
        expression = self.op_expression(op, space).text
        names = [self.names.take(self.program.op(e).var or self.r.base_name(self.program.op(e))) if e else "_"
                 for e in elements]  # `_`: an element nothing reads
        for element, name in zip(elements, names):
            if element:
                self.local[(element, self.space[element])] = name
        self.lines.append(f"{', '.join(names)} = {expression}")
        if self.as_graph(op.name):  # rows by node: the graph's first ones are the batch's
            self.lines.extend(f"{name} = {name}[: block.num_dst_nodes()]" for element, name in zip(elements, names)
                              if element and self.r.attrs[element].rows == "node")

    def finish(self) -> LayerFunction:
        """The function: its parameters, body and return of the stored values."""
        results, per_edge = [], []
        for i, name in enumerate(self.stage.stores):
            edge = self.space[name] == "edge"
            results.append(self.value(name, "edge" if edge else "dst").text)
            if edge:
                per_edge.append(i)
        # each result the function returns by a local's name -> the name the method binds it to
        returned = {local: self.r.buffer[name] for local, name in zip(results, self.stage.stores)
                    if local.isidentifier() and results.count(local) == 1 and name in self.r.buffer}
        body = list(self.lines)
        # `return <expression>` for results the last line computes for nothing else
        target, sep, expression = body[-1].partition(" = ") if body else ("", "", "")
        if sep and target.isidentifier() and results.count(target) == 1:
            results[results.index(target)] = expression
            body = body[:-1]
        elif sep and target.replace(", ", ",").split(",") == results:  # `a, b = f(...)`
            results, body = [expression], body[:-1]
        body.append(f"return {', '.join(results)}")
        params = ([] if self.node_ranges else ["block"])
        params += [local for space in ("src", "dst", "edge") for _, local in self.params[space]]
        # `h` again where the `h` before is read no more, not `h_2` (local_names.py)
        renames = renamed(params, body, self.names.counted)
        renamed_body = rename(body, renames)
        # a counted local still counted that is returned: the method's name for it (local_names.py)
        returned = {renames.get(local, local): outer for local, outer in returned.items()}
        renamed_body = rename(renamed_body, bound_names(params, renamed_body, returned, self.names.counted))
        if renamed_body != body:
            moved = dict(zip(body, renamed_body))
            self.r.origins[:] = [(moved.get(line, line), location) for line, location in self.r.origins]
            body = renamed_body
        return LayerFunction(
            self.name, params, body,
            src=[self.r.buffer[n] for n, _ in self.params["src"]],
            dst=[self.r.buffer[n] for n, _ in self.params["dst"]],
            edges=[self.r.buffer[n] for n, _ in self.params["edge"]],
            in_place=self.in_place,
            gathered=self.gathered,
            # one word per stored value (`results` may be one call that returns them all)
            returns=tuple("edges" if i in per_edge else "nodes" for i in range(len(self.stage.stores))) if per_edge else (),
        )

    # -- rewrites that save batch-sized temporaries ---------------------------------------------
    def linears_over_concatenations(self, uses: Counter[str]) -> dict[str, str]:
        """This stage's nn.Linear ops that read a concatenation of columns (2-D rows) that
        nothing else reads -> that concatenation, which is then never made: the Linear is the
        sum of each part's product with its columns of the weight (JKNet's classifier input,
        three layers of 128 columns, was 384 MB per batch of 262144 nodes)."""
        program, result = self.program, {}
        for placed in self.stage.ops:
            op = program.op(placed.name)
            if not op.linear or op.kwargs or len(op.args) != 1 or not isinstance(op.args[0], Ref):
                continue
            cat = program.op(op.args[0].name)
            parts = cat.args[0] if cat.concatenates_columns else ()
            if (
                self.space.get(cat.name) == placed.space and uses[cat.name] == 1 and len(parts) > 1
                and all(isinstance(p, Ref) and len(self.r.attrs[p.name].shape) == 1 for p in parts)
            ):
                result[op.name] = cat.name
        return result

    def linear_over_concatenation(self, op: Op, cat: Op, target: str) -> list[str]:
        """`target = linear(torch.cat(parts, dim=1))` as a product per part, summed in place:
        equal to float rounding, without the concatenation. The helper slices the weight by
        each part's width at run time, so no width of the model's construction is written here."""
        space = self.space[op.name]
        parts = [self.arg(part, space).text for part in cat.args[0]]
        self.r.sections.add("linear_of_concatenation")
        helper = self.r.helper_names["linear_of_concatenation"]
        # the call reads as the user's `linear(torch.cat(parts, dim=1))`; the helper says the rest
        return [f"{target} = {helper}({op.accessor}, [{', '.join(parts)}])"]

    def unpackings(self) -> dict[tuple[str, int], str]:
        """(tuple value, index) -> element op, for tuples whose elements are taken by `t[i]` in
        this stage and nothing else reads: written `a, b = f(...)` as people do, `x, _, _ =
        f(...)` where only some are read ("" for the others)."""
        program, result = self.program, {}
        members = {p.name for p in self.stage.ops}
        for placed in self.stage.ops:
            info = self.r.attrs[placed.name]
            if info.rows != "tuple" or placed.name in self.stage.stores:
                continue
            readers = [program.op(u) for u in self.r.users[placed.name]]
            indices = [r.args[1] if r.target == "operator.getitem" and len(r.args) == 2 else None for r in readers]
            taken = [i for i in indices if type(i) is int and 0 <= i < info.shape[0]]
            if readers and all(r.name in members for r in readers) and len(set(taken)) == len(indices):
                result.update({(placed.name, i): "" for i in range(info.shape[0])})
                result.update({(placed.name, i): r.name for r, i in zip(readers, indices)})
        return result


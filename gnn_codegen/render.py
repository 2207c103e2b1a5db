"""Stage 6, render: the Plan into Python source through the Jinja templates in templates/.
This module decides every name and every line; the templates only print them."""

from __future__ import annotations

import ast
import math
import textwrap
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import torch

from gnn_codegen.attributes import Attributes
from gnn_codegen.errors import internal
from gnn_codegen.ir import AUGMENTED, Op, Program, Ref, SplitConv, iter_refs
from gnn_codegen.names import NameAllocator
from gnn_codegen.plan import Plan, Space, Stage, inline_ops, mp_feature_spaces, value_deps
from gnn_codegen.templating import render_template

_BINARY = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "matmul": "@", "and_": "&", "or_": "|", "xor": "^", "lt": "<", "le": "<=", "gt": ">",
    "ge": ">=", "eq": "==", "ne": "!=", "iadd": "+", "isub": "-", "imul": "*", "itruediv": "/",
}
_UNARY = {"neg": "-", "pos": "+", "invert": "~"}


@dataclass(frozen=True)
class HelperNames:
    blocks: str
    rescale: str | None
    auto: str
    weighted_sum: str | None = None


@dataclass(frozen=True)
class Rendered:
    header: str
    helpers: str
    method: str
    buffers: tuple[tuple[str, str], ...] = ()  # value -> its name in the generated code
    # (generated statement, the user's line it computes), to point a failure at the user's code
    origins: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Copy:
    """An argument handed over as a copy: the op changes it in place (Op.mutates)."""

    value: Any


@dataclass(frozen=True)
class _Code:
    text: str
    atom: bool = True  # safe as an operand or a receiver without parentheses


def constant(value: Any) -> str:
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return f'float("{value}")'
    if value is Ellipsis:
        return "..."
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, torch.device):
        return f'torch.device("{value}")'
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    raise internal(f"cannot write constant {value!r} of type {type(value).__name__}")


def _source_loads(stage: Stage) -> tuple[str, ...]:
    """The stored tensors a layer reads on source rows, where only its convolutions read them
    there (no op of the layer runs on source rows): those a convolution may read in place or
    replace with rows computed once per node. Empty for the prologue, which has no blocks."""
    if stage.index == 0 or any(p.space == "src" for p in stage.ops):
        return ()
    return tuple(name for name, space in stage.loads if space == "src")


# methods whose result is a view of their receiver, nothing else
_RESHAPES = ("flatten", "view", "reshape", "squeeze", "unsqueeze")


def _comment(text: str) -> list[str]:
    """A comment of the generated code, wrapped to fit beside its indentation."""
    return [f"# {line}" for line in textwrap.wrap(text, 84)]


class _StageWriter:
    """Writes one stage's loop body: loads, one line per op, stores."""

    def __init__(self, r: "_Renderer", stage: Stage):
        self.r, self.stage = r, stage
        self.space = {p.name: p.space for p in stage.ops}
        self.names = r.globals.child()
        self.local: dict[tuple[str, Space], str] = {}  # (value, rows) -> local name
        self.lines: list[str] = []
        self.split = r.splits[stage.index]  # convolution -> the stored tensor it splits
        self.split_loads = set(self.split.values())
        self.per_node_name: dict[str, str] = {}  # stored tensor -> its per-node transformed rows
        self.per_node_extra: dict[str, dict[str, str]] = {}  # stored tensor -> extra name -> its name
        # local -> the tensor whose rows it may be a view of (on the device that holds the
        # tensor, `t[start:end].to(device)` and `t[slice(None)]` copy nothing): after the loop,
        # the last batch's view would keep the whole tensor alive past its `del`
        self.views: dict[str, str] = {}
        # values that are a tensor this batch made and nothing else holds: a written-out
        # convolution's result, and views of it that its only reader takes (`h = h.flatten(1)`)
        self.exclusive: set[str] = set()
        self.in_place = self.sources_in_place()

    def sources_in_place(self) -> tuple[str, ...]:
        """The stored tensors this stage reads on source rows, when every one of them feeds
        only convolutions that touch source rows inside messages (known_modules): then, on the
        device that holds them, blocks take all of g's nodes as sources and the convolutions
        read the tensors in place, without gathering. Empty otherwise."""
        program, stage = self.r.program, self.stage
        loads = _source_loads(stage)
        if not loads:
            return ()
        for placed in stage.ops:
            op = program.op(placed.name)
            if op.kind != "mp":
                continue
            for value, space in mp_feature_spaces(op):
                if space != "src":
                    continue
                direct = isinstance(value, Ref) and value.name in loads
                if not (direct and op.mp and (op.mp.sources_in_place or op.name in self.split)):
                    return ()
        return loads

    @staticmethod
    def split_of(op: Op) -> SplitConv:
        if op.mp is None or op.mp.split is None:
            raise internal(f"{op.name} has no split form")
        return op.mp.split

    def in_place_tensors(self) -> list[str]:
        """The names of the tensors read in place, as the generated code calls them."""
        return [self.per_node_name.get(name, self.r.buffer[name]) for name in self.in_place]

    def per_node(self) -> tuple[list[str], set[str], list[str]]:
        """The lines before the loop that run each split convolution's source-row work once
        per node; the stored tensors they free early (read by nothing else in the stage, and by
        nothing after it), and the per-node tensors to free after the loop."""
        lines: list[str] = []
        freed: set[str] = set()
        temporaries: list[str] = []
        program, inline = self.r.program, self.r.inline
        for op_name, load in self.split.items():
            op = program.op(op_name)
            split = self.split_of(op)
            buffer = self.r.buffer[load]
            reads_dst = split.reads("{dst}") or any(
                load in value_deps(program, inline, (program.op(p.name).args, program.op(p.name).kwargs))
                for p in self.stage.ops if p.name != op_name
            )
            dies_here = load in self.stage.frees and not reads_dst  # never one of forward's inputs
            comment = (
                f"{op.accessor} written out: {split.why} here, once per node, instead of once per "
                "batch that reads the row; each batch below does the rest of its forward()"
            ) if split.per_node else f"{op.accessor} written out: {split.why}"
            lines.extend(_comment(comment))
            steps = list(split.per_node)
            if dies_here and split.per_node_in_place:
                # nothing else reads these rows: transform them where they are, no second copy
                lines.append(split.per_node_in_place.format(x=buffer, layer=op.accessor))
                steps = steps[1:]
            name = self.names.take(f"{buffer}_{split.suffix}") if steps else buffer
            self.per_node_name[load] = name
            value = buffer
            for step in steps:
                lines.append(f"{name} = {step.format(x=value, layer=op.accessor)}")
                value = name
            if dies_here and name != buffer:  # before the extras, which read only `name`
                lines.append(f"del {buffer}")
                freed.add(load)
            extras = self.per_node_extra.setdefault(load, {})
            for extra, expression in split.per_node_extra:
                extras[extra] = self.names.take(f"{buffer}_{extra}")
                lines.append(f"{extras[extra]} = {expression.format(x=name, layer=op.accessor)}")
            temporaries += [n for n in (name, *extras.values()) if n != buffer]
            self.r.note_origins(lines, op)
        self.r.note_origins(lines, None)
        return lines, freed, temporaries

    def loop_locals(self) -> list[str]:
        """The names the loop binds per batch (its block and every assignment in its body,
        not the start and end of its range), in order: after the loop, the last batch's."""
        names = ["block", "input_nodes"] if self.stage.index > 0 else []
        for statement in ast.parse("\n".join(self.lines)).body:
            targets = statement.targets if isinstance(statement, ast.Assign) else []
            for target in targets:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                names += [e.id for e in elements if isinstance(e, ast.Name)]
        return [n for n in dict.fromkeys(names) if n not in ("start", "end")]

    def batch_range(self, local: str, tensor: str) -> str:
        """`local = tensor[start:end].to(device)`, the batch's destination rows: a view of the
        tensor on the device that holds it, so recorded in self.views."""
        self.views[local] = tensor
        return f"{local} = {tensor}[start:end].to(device)"

    # -- expressions ---------------------------------------------------------------------------
    def value(self, name: str, need: Space) -> _Code:
        op = self.r.program.op(name)
        if op.kind == "graph":
            return _Code("block")
        if name in self.r.inline:
            return self.op_expression(op, need)
        if (name, need) in self.local:
            return _Code(self.local[(name, need)])
        if self.r.attrs[name].rows == "tuple":
            # e.g. GATConv(get_attention=True) -> (node rows, edge rows): indexing picks the rows
            return _Code(next(local for (value, _), local in self.local.items() if value == name))
        if need == "dst" and (name in self.in_place or name in self.split_loads):
            # the block's sources are all of g's nodes: its destination rows are a range of them
            buffer = self.r.buffer[name]
            local = self.names.take(f"{buffer}_dst")
            self.lines.append(self.batch_range(local, buffer))
            self.local[(name, need)] = local
            return _Code(local)
        if need == "dst" and (name, "src") in self.local:
            return _Code(f"{self.local[(name, 'src')]}[: block.num_dst_nodes()]")
        raise internal(f"{name} is not available on {need} rows in stage {self.stage.index}")

    def arg(self, value: Any, need: Space, in_index: bool = False) -> _Code:
        if isinstance(value, Ref):
            return self.value(value.name, need)
        if isinstance(value, _Copy):
            return _Code(f"{self.operand(self.arg(value.value, need))}.clone()")
        if isinstance(value, slice) and in_index:
            parts = [self.arg(v, need).text if v is not None else "" for v in (value.start, value.stop, value.step)]
            return _Code(":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else ""))
        if isinstance(value, slice):
            return _Code(f"slice({', '.join(self.arg(v, need).text for v in (value.start, value.stop, value.step))})")
        if isinstance(value, tuple):
            items = [self.arg(v, need, in_index).text for v in value]
            if in_index:
                return _Code(", ".join(items))
            return _Code(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})")
        if isinstance(value, list):
            return _Code(f"[{', '.join(self.arg(v, need).text for v in value)}]")
        text = constant(value)
        return _Code(text, atom=not text.startswith("-"))

    def call_args(self, op: Op, need: Space, skip: int = 0) -> str:
        parts = [self.arg(a, need).text for a in op.args[skip:]]
        parts += [f"{k}={self.arg(v, need).text}" for k, v in op.kwargs]
        return ", ".join(parts)

    @staticmethod
    def operand(code: _Code) -> str:
        return code.text if code.atom else f"({code.text})"

    def op_expression(self, op: Op, need: Space) -> _Code:
        if op.kind == "attr":
            return _Code(op.accessor)
        if op.kind == "module":
            return _Code(f"{op.accessor}({self.call_args(op, need)})")
        if op.kind == "mp":
            return _Code(f"{op.accessor}({self.mp_args(op)})")
        if op.kind == "method":
            receiver = self.operand(self.arg(op.args[0], need))
            return _Code(f"{receiver}.{op.target}({self.call_args(op, need, skip=1)})")
        if op.kind == "function":
            return self.function_expression(op, need)
        raise internal(f"cannot render op kind {op.kind}")

    def function_expression(self, op: Op, need: Space) -> _Code:
        module, _, name = op.target.rpartition(".")
        if module == "operator" and name in _BINARY and len(op.args) == 2:
            a, b = (self.operand(self.arg(x, need)) for x in op.args)
            return _Code(f"{a} {_BINARY[name]} {b}", atom=False)
        if module == "operator" and name in _UNARY:
            return _Code(f"{_UNARY[name]}{self.operand(self.arg(op.args[0], need))}", atom=False)
        if module == "operator" and name == "getitem":
            receiver = self.operand(self.arg(op.args[0], need))
            return _Code(f"{receiver}[{self.arg(op.args[1], need, in_index=True).text}]")
        if op.target == "getattr" and len(op.args) == 2 and isinstance(op.args[1], str):
            return _Code(f"{self.operand(self.arg(op.args[0], need))}.{op.args[1]}")
        if module == "operator":
            raise internal(f"cannot render operator.{name}")
        return _Code(f"{op.target}({self.call_args(op, need)})")

    def mp_args(self, op: Op) -> str:
        rows = []
        spaces = mp_feature_spaces(op)
        for value, space in spaces:
            if space == "edge":
                continue  # edge tensors stay in their own argument positions, below
            code = self.arg(value, space).text
            power = op.mp.source_out_degree_power if op.mp else None
            if space == "src" and power is not None:
                code = f"{self.r.helper_names.rescale}({code}, block, out_degrees[input_nodes], {power})"
            rows.append(code)
            if space == "src" and self.in_place and not any(s == "dst" for _, s in spaces):
                # when sources are all nodes, destination rows are not the sources' first rows
                rows.append(self.arg(value, "dst").text)
        features = rows[0] if len(rows) == 1 else f"({', '.join(rows)})"
        extra = [self.arg(a, "edge").text for a in op.args[2:]]
        extra += [f"{k}={self.arg(v, 'edge').text}" for k, v in op.kwargs]
        return ", ".join(["block", features, *extra])

    # -- statements ----------------------------------------------------------------------------
    def primary_input(self, op: Op) -> tuple[str, Space] | None:
        if op.kind == "mp":
            first, space = mp_feature_spaces(op)[0]
            deps = value_deps(self.r.program, self.r.inline, first)
            return (deps[0], space) if deps and isinstance(first, Ref) else None
        if not op.args or not isinstance(op.args[0], Ref) or op.args[0].name in self.r.inline:
            return None
        return op.args[0].name, self.space[op.name]

    def write(self) -> list[str]:
        program, uses = self.r.program, Counter[str]()
        for placed in self.stage.ops:
            for d in value_deps(program, self.r.inline, program.op(placed.name).args) + value_deps(
                program, self.r.inline, tuple(v for _, v in program.op(placed.name).kwargs)
            ):
                uses[d] += 1
        for name in self.stage.stores:
            uses[name] += 1
        if self.stage.index == 0:  # the prologue: node ranges, no block
            self.lines.append("end = min(start + batch_size, num_nodes)")
        else:
            if self.uses_edges():
                # edge rows are gathered by the full graph's edge IDs, on the graph's device
                self.lines.append("edge_ids = block.edata[dgl.EID]")
            self.lines.append("block = block.to(device)")
        first_src = True
        for name, space in sorted(self.stage.loads, key=lambda load: load[1] != "edge"):
            buffer = self.r.buffer[name]
            if space == "edge":
                local = self.names.take(f"{buffer}_e")
                self.lines.append(f"{local} = {buffer}[edge_ids].to(device)")
            elif space == "src":
                source = self.per_node_name.get(name, buffer)  # a split convolution's rows
                local = self.names.take(self.r.hidden if first_src else f"{source}_src")
                first_src = False
                self.lines.append(f"{local} = {source}[input_nodes].to(device)")
                if name in self.in_place:  # input_nodes is then slice(None): the tensor itself
                    self.views[local] = source
            elif self.stage.index == 0 and first_src:  # the prologue's running value
                local = self.names.take(self.r.hidden)
                first_src = False
                self.lines.append(self.batch_range(local, buffer))
            else:
                local = self.names.take(f"{buffer}_dst")
                self.lines.append(self.batch_range(local, buffer))
            self.local[(name, space)] = local
        unpacked = self.unpackings()
        fused = self.linears_over_concatenations(uses)
        for placed in self.stage.ops:
            op = program.op(placed.name)
            self.r.note_origins(self.lines, op)
            if placed.name in unpacked.values():
                continue  # an element of a tuple unpacked where the tuple was computed
            if placed.name in fused.values():
                continue  # never made: the nn.Linear that reads it takes its parts (below)
            elements = [e for e in (unpacked.get((op.name, i)) for i in range(len(unpacked))) if e]
            if elements:
                expression = self.op_expression(op, placed.space).text
                names = []
                primary = self.primary_input(op)
                free = self.local.get(primary) if primary and uses[primary[0]] == 1 else None
                for element in elements:
                    element_op = program.op(element)
                    if free and element_op.var == free:  # `h, e = conv(block, h, e)`
                        name, free = free, None
                    else:
                        name = self.names.take(element_op.var or self.r.base_name(element_op))
                    self.local[(element, self.space[element])] = name
                    self.views.pop(name, None)
                    names.append(name)
                self.lines.append(f"{', '.join(names)} = {expression}")
                continue
            primary = self.primary_input(op)
            # `h = f(h)` when f is the only reader of h, as a person writes a chain of layers
            same_rows = op.kind == "mp" or primary is not None and primary[1] == placed.space
            # the user's name, unless it is too generic, or names a buffer while the running
            # hidden state `h` can carry the value (`h = self.encoder(h)`)
            own_name = bool(op.var) and op.var not in self.r.generic and not (
                op.var in self.r.buffer.values() and primary is not None
                and self.local.get(primary) == self.r.hidden
            )
            if primary and primary in self.local and uses[primary[0]] == 1 and same_rows and not own_name:
                target = self.local[primary]
            else:
                base = self.r.hidden if op.kind == "mp" and not op.var else self.r.base_name(op)
                target = self.names.take(base)
            sole = primary if primary and uses[primary[0]] == 1 and primary[0] in self.exclusive else None
            if placed.name in self.split:
                self.lines.extend(self.split_batch_lines(op, target))
                self.exclusive.add(op.name)
            elif placed.name in fused:
                self.lines.extend(self.linear_over_concatenation(op, program.op(fused[placed.name]), target))
                self.exclusive.add(op.name)
            elif sole and op.activation_in_place:
                # F.relu(h) on a tensor nothing else reads, as F.relu(h, inplace=True): the same
                # numbers without a new batch-sized tensor (see split_convs._sage_conv for why)
                written = replace(op, kwargs=(*op.kwargs, ("inplace", True)))
                self.lines.append(f"{target} = {self.op_expression(written, placed.space).text}")
                self.exclusive.add(op.name)
            elif op.mutates and not sole:
                # the op changes its input in place, and something else holds that tensor
                written = replace(op, args=(_Copy(op.args[0]), *op.args[1:]))
                self.lines.append(f"{target} = {self.op_expression(written, placed.space).text}")
                self.exclusive.add(op.name)
            else:
                self.lines.append(f"{target} = {self.op_expression(op, placed.space).text}")
                if sole and (op.mutates or op.kind == "method" and op.target in _RESHAPES):
                    self.exclusive.add(op.name)
            self.local[(op.name, placed.space)] = target
            self.views.pop(target, None)
        for name in self.stage.stores:
            self.r.note_origins(self.lines, program.op(name))
            if self.space[name] == "edge":
                self.lines.append(f"{self.r.buffer[name]}[edge_ids] = {self.value(name, 'edge').text}.cpu()")
            else:
                self.lines.append(f"{self.r.buffer[name]}[start:end] = {self.value(name, 'dst').text}.cpu()")
        self.r.note_origins(self.lines, None)
        return self.lines

    def split_batch_lines(self, op: Op, target: str) -> list[str]:
        """A split convolution's per-batch part: a chain of assignments to `target`."""
        split = self.split_of(op)
        load = self.split[op.name]
        value = self.local[(load, "src")]
        values = {"layer": op.accessor}
        if self.r.helper_names.weighted_sum:
            values["weighted_sum"] = self.r.helper_names.weighted_sum
        if split.reads("{dst}"):
            values["dst"] = self.value(load, "dst").text
        lines = []
        if split.reads("{x_dst}"):  # destination rows of the per-node rows: a range of them
            rows = self.per_node_name[load]
            values["x_dst"] = self.names.take(f"{rows}_dst")
            lines.append(self.batch_range(values["x_dst"], rows))
        for extra, stored in self.per_node_extra.get(load, {}).items():
            values[extra] = self.names.take(extra)
            lines.append(f"{values[extra]} = {stored}[input_nodes].to(device)")
            if load in self.in_place:
                self.views[values[extra]] = stored
        for name, expression in split.per_batch:
            text = expression.format(h=value, **values)
            if name in AUGMENTED:  # in place, on the chain's own tensor (never its input)
                if value != target:
                    raise internal(f"{op.name}: {name} before the chain made its own tensor")
                lines.append(f"{target} {name} {text}")
            elif name:  # a temporary
                values[name] = self.names.take(name)
                lines.append(f"{values[name]} = {text}")
                self.views.pop(values[name], None)
            else:
                lines.append(f"{target} = {text}")
                self.views.pop(target, None)
                value = target
        return lines

    def linears_over_concatenations(self, uses: Counter[str]) -> dict[str, str]:
        """This stage's nn.Linear ops that read a concatenation of columns (2-D rows) that
        nothing else reads -> that concatenation, which is then never made: the Linear is the
        sum of each part's product with its columns of the weight (JKNet's classifier input,
        three layers of 128 columns, was 384 MB per batch of 262144 nodes)."""
        program, result = self.r.program, {}
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
        equal to float rounding, without the concatenation."""
        space = self.space[op.name]
        parts = [self.arg(part, space).text for part in cat.args[0]]
        widths = [self.r.attrs[part.name].shape[0] for part in cat.args[0]]
        lines = _comment(
            f"{op.accessor}(torch.cat([{', '.join(parts)}], dim=1)) without making the "
            "concatenation: each part times its columns of the weight, summed in place"
        )
        start = 0
        for i, (part, width) in enumerate(zip(parts, widths)):
            stop = "" if i == len(parts) - 1 else start + width
            columns = f"{op.accessor}.weight[:, {start or ''}:{stop}]"
            if i == 0:
                lines.append(f"{target} = torch.nn.functional.linear({part}, {columns}, {op.accessor}.bias)")
            else:
                lines.append(f"{target}.addmm_({part}, {columns}.t())")
            start += width
        return lines

    def unpackings(self) -> dict[tuple[str, int], str]:
        """(tuple value, index) -> element op, for tuples whose every element is taken by
        `t[i]` in this stage and nothing else reads: written `a, b = f(...)` as people do."""
        program, result = self.r.program, {}
        members = {p.name for p in self.stage.ops}
        users = self.r.users
        for placed in self.stage.ops:
            info = self.r.attrs[placed.name]
            if info.rows != "tuple" or placed.name in self.stage.stores:
                continue
            readers = [program.op(u) for u in users[placed.name]]
            indices = [r.args[1] if r.target == "operator.getitem" and len(r.args) == 2 else None for r in readers]
            if all(r.name in members for r in readers) and sorted(i for i in indices if isinstance(i, int)) == list(range(info.shape[0])) and len(indices) == info.shape[0]:
                result.update({(placed.name, i): r.name for r, i in zip(readers, indices)})
        return result

    def uses_edges(self) -> bool:
        return any(space == "edge" for _, space in self.stage.loads) or any(
            self.space[name] == "edge" for name in self.stage.stores
        )


class _Renderer:
    def __init__(self, program: Program, attrs: Attributes, plan: Plan, reserved: set[str]):
        self.program, self.attrs, self.plan = program, attrs, plan
        # generated statements and the user's line each computes (Rendered.origins)
        self.origins: list[tuple[str, str]] = []
        self._noted: dict[int, tuple[int, Op | None]] = {}
        self.inline = inline_ops(program, attrs)
        self.users = program.consumers()
        self.globals = NameAllocator(reserved)
        # per stage: the convolutions written out in two parts (split_convs.py) -> the stored
        # tensor each reads on source rows
        self.splits = {stage.index: self.split_convs(stage) for stage in plan.stages}
        split = {name for chosen in self.splits.values() for name in chosen}
        # GraphConv's out-degree norm reads g's out-degrees, written out or called with the rescale
        degree_norms = [op.name for op in program.ops if op.mp and op.mp.source_out_degree_power is not None]
        self.needs_out_degrees = bool(degree_norms)
        needs_rescale = any(name not in split for name in degree_norms)
        self.helper_names = HelperNames(
            blocks=self.globals.take("_full_neighbour_blocks"),
            rescale=self.globals.take("_rescale_to_full_out_degrees") if needs_rescale else None,
            auto=self.globals.take("_auto_batch_size"),
            weighted_sum=self.globals.take("_attention_weighted_sum") if any(
                _StageWriter.split_of(program.op(name)).reads("{weighted_sum}") for name in split
            ) else None,
        )
        self.params = [self.globals.take("g")]
        self.params += [self.globals.take(program.op(n).target) for n in program.inputs]
        self.params += [self.globals.take("batch_size"), self.globals.take("device")]
        self.max_memory = self.globals.take("max_memory")
        self.progress = self.globals.take("progress")
        self.batches = self.globals.take("batches")
        for fixed in ("start", "end", "block", "input_nodes", "num_nodes", "out_degrees", "edge_ids", "num_edges"):
            if fixed in self.globals.taken:
                raise internal(f"generated code needs the name '{fixed}', which the model uses")
            self.globals.take(fixed)
        self.buffer = {n: p for n, p in zip(program.inputs, self.params[1:])}
        # the name a person gives the running hidden state, unless the model's input has it
        self.hidden = next(n for n in ("h", "hidden", "z", "h_") if n not in self.globals.taken)
        # names too generic to tell stored tensors apart: those get h1, h2, ... instead
        self.generic = {"h", "x", "out", "hidden", "feat", "feats", "inputs", "z", *self.params}
        self._name_buffers()

    def note_origins(self, lines: list[str], op: Op | None) -> None:
        """The lines appended to `lines` since the last note came from the op noted then; `op`
        is the op whose lines follow (None: plumbing)."""
        start, previous = self._noted.pop(id(lines), (0, None))
        if previous is not None and previous.location:
            self.origins += [(line, previous.location) for line in lines[start:] if not line.startswith("#")]
        if op is not None:  # None ends the list: its id may be another list's later
            self._noted[id(lines)] = (len(lines), op)

    def split_convs(self, stage: Stage) -> dict[str, str]:
        """The convolutions of `stage` to write out in two parts (split_convs.py), each with the
        stored tensor it reads on source rows: those called as module(graph, features) on a
        tensor this stage loads, 2-D rows, that nothing else in the stage reads on source rows
        (the per-node work then replaces loading it)."""
        loads = _source_loads(stage)
        readers = Counter[str]()
        for placed in stage.ops:
            op = self.program.op(placed.name)
            if op.kind == "mp":
                for value, space in mp_feature_spaces(op):
                    for d in value_deps(self.program, self.inline, value) if space == "src" else ():
                        readers[d] += 1
        chosen = {}
        for placed in stage.ops:
            op = self.program.op(placed.name)
            if op.kind != "mp" or not op.mp or not op.mp.split or len(op.args) != 2 or op.kwargs:
                continue
            features = op.args[1]
            if (isinstance(features, Ref) and features.name in loads and readers[features.name] == 1
                    and len(self.attrs[features.name].shape) == 1):
                chosen[op.name] = features.name
        return chosen

    def base_name(self, op: Op) -> str:
        """A local's name: the user's variable for the value, else what computes it."""
        if op.var:
            return op.var
        if op.kind == "module":
            last = op.target.rsplit(".", 1)[-1]
            return last if last.isidentifier() else op.class_name.lower()
        return op.name

    def _name_buffers(self) -> None:
        outputs = self.plan.outputs
        for stage in self.plan.stages:
            for name in stage.stores:
                op = self.program.op(name)
                if op.var and op.var not in self.generic:
                    base = op.var
                elif name in outputs:
                    base = "out" if len(outputs) == 1 else f"out{outputs.index(name)}"
                else:
                    base = f"{'e' if self.attrs[name].rows == 'edge' else 'h'}{stage.index}"
                self.buffer[name] = self.globals.take(base)

    def describe_stage(self, stage: Stage) -> list[str]:
        ops = [self.program.op(p.name) for p in stage.ops]
        if stage.index == 0:
            modules = [f"{op.accessor} ({op.class_name})" for op in ops if op.kind == "module"]
            what = ", ".join(modules) if modules else "work on the inputs"
            lines = [f"Prologue: {what}, once per node, before any message passing."]
        else:
            num_layers = sum(1 for s in self.plan.stages if s.index > 0)
            what = ", ".join(f"{op.accessor} ({op.class_name})" for op in ops if op.kind == "mp")
            lines = [f"Layer {stage.index} of {num_layers}: {what}."]
        info = self.attrs.as_dict()
        for name in stage.stores:
            shape = info[name].shape
            width = " x ".join(str(s) for s in shape) or "1"
            per = "edge" if info[name].rows == "edge" else "node"
            lines.append(f"Writes {self.buffer[name]}: {width} {info[name].dtype.replace('torch.', '')} per {per}.")
        return lines

    def allocation(self, name: str) -> str:
        info = self.attrs[name]
        rows = "num_edges" if info.rows == "edge" else "num_nodes"
        dims = ", ".join([rows, *(str(s) for s in info.shape)])
        dtype = "" if info.dtype == "torch.float32" else f", dtype={info.dtype}"
        return f"{self.buffer[name]} = torch.empty({dims}{dtype})"

    def result(self, value: Any) -> str:
        if isinstance(value, Ref):
            return self.buffer[value.name]
        if isinstance(value, tuple):
            return ", ".join(self.result(v) for v in value) + ("," if len(value) == 1 else "")
        if isinstance(value, list):
            return "[" + ", ".join(self.result(v) for v in value) + "]"
        raise internal(f"cannot return {value!r}")

    def blocks_call(self, tensors: list[str]) -> list[str]:
        call = f"{self.helper_names.blocks}(g, batch_size, {self.progress}"
        if not tensors:
            return [f"{self.batches} = {call})"]
        where = " == ".join([*(f"{t}.device" for t in tensors), "torch.device(device)"])
        which = ", ".join(tensors)
        return [
            f"# {which} {'is' if len(tensors) == 1 else 'are'} read in place when already on `device` "
            "(this layer only aggregates source rows)",
            f"{self.batches} = {call}, all_sources={where})",
        ]

    def method(self) -> str:
        stages = []
        writers = [_StageWriter(self, stage) for stage in self.plan.stages]
        per_nodes = [writer.per_node() for writer in writers]
        # what a `del` frees: after each loop but the last (`return` frees all), and before a
        # loop, where a split convolution has replaced its input
        deleted = {self.buffer[n] for s in self.plan.stages[:-1] for n in s.frees}
        deleted |= {self.buffer[n] for _, freed, _ in per_nodes for n in freed}
        for position, (stage, writer, (per_node, freed, temporaries)) in enumerate(
            zip(self.plan.stages, writers, per_nodes)
        ):
            frees = [self.buffer[n] for n in stage.frees if n not in freed] + temporaries
            body = writer.write()
            last = stage is self.plan.stages[-1]
            # the next layer's per-node work makes new tensors for every node (its temporaries)
            # while this loop's last batch is still held, unless deleted
            per_node_tensors = not last and per_nodes[position + 1][2]
            batch_locals = writer.loop_locals() if per_node_tensors else []
            after = [] if last else self.after_loop(writer, frees, deleted | set(frees), batch_locals)
            stages.append({
                "comment": self.describe_stage(stage),
                "before": [self.allocation(n) for n in stage.stores] + per_node + (
                    [] if stage.index == 0 else self.blocks_call(writer.in_place_tensors())
                ),
                "body": body,
                "after": after,
                # one empty batch on a graph without nodes, like _full_neighbour_blocks
                "loop": "start in range(0, max(num_nodes, 1), batch_size)" if stage.index == 0 else
                        f"start, end, block, input_nodes in {self.batches}",
            })
        preamble = [
            'if batch_size == "auto":',
            f"    batch_size = {self.helper_names.auto}(g, {self.max_memory}, {self.layer_bytes()})",
            "num_nodes = g.num_nodes()",
        ]
        if any(s.rows == "edge" and s.stage > 0 for s in self.plan.stored):
            preamble.append("num_edges = g.num_edges()")
        preamble += self.zero_in_degree_check()
        if self.needs_out_degrees:
            preamble.append("# GraphConv's norm reads source out-degrees, which must be the full graph's")
            preamble.append("out_degrees = g.out_degrees()")
        return render_template(
            "inference.py.j2",
            params=[*self.params, f"{self.max_memory}=2**30", f"{self.progress}=False"],
            docstring=self.docstring(),
            preamble=preamble,
            stages=stages,
            result=self.result(self.program.output),
        )

    def zero_in_degree_check(self) -> list[str]:
        """Written-out convolutions built with allow_zero_in_degree=False never call the module,
        which refuses graphs with nodes without in-edges: check g for them once, up front (every
        node is a destination of one batch of every layer)."""
        ops = [self.program.op(name) for chosen in self.splits.values() for name in chosen]
        refusing = [op for op in ops if _StageWriter.split_of(op).refuses_zero_in_degree]
        if not refusing:
            return []
        layers = list(dict.fromkeys(op.accessor for op in refusing))
        classes = ", ".join(dict.fromkeys(op.class_name for op in refusing))
        one = len(layers) == 1
        comment = (
            f"{', '.join(layers)} ({classes}, allow_zero_in_degree=False) refuse{'s' if one else ''} "
            f"nodes without in-edges, as {'its' if one else 'their'} forward() does; written out, "
            f"{'it is' if one else 'they are'} checked here"
        )
        first = refusing[0]
        return [
            *_comment(comment),
            f"if ({self.params[0]}.in_degrees() == 0).any():",
            "    raise dgl.DGLError(",
            f'        "There are 0-in-degree nodes in the graph, which {first.accessor} refuses: "',
            '        "add self-loops (g = dgl.add_self_loop(g)), or build it with "',
            '        "allow_zero_in_degree=True."',
            "    )",
        ]

    def after_loop(self, writer: _StageWriter, frees: list[str], deleted: set[str],
                   batch_locals: list[str]) -> list[str]:
        """The `del` after a layer's loop: the tensors no later layer reads, the loop's views of
        tensors that a `del` frees (`deleted`), which would otherwise keep all of them alive
        (on the device that holds a tensor, `t[start:end].to(device)` is a view, and so is
        `t[input_nodes]` when sources are read in place), and `batch_locals`, the last batch's
        block and rows, when the next layer's per-node work would otherwise run beside them."""
        views = [local for local, tensor in writer.views.items() if tensor in deleted]
        batch_locals = [n for n in batch_locals if n not in views and n not in frees]
        lines = []
        if views:
            viewed = ", ".join(dict.fromkeys(writer.views[v] for v in views))
            one = len(views) == 1
            comment = (f"{', '.join(views)}, {'a view' if one else 'views'} of {viewed}, would keep "
                       f"all of {'it' if one else 'them'} alive")
            lines.extend(_comment(comment))
        if frees or views:
            lines.append(f"del {', '.join(frees + views)}")
        if batch_locals:
            lines.append("# the last batch's block and rows, freed before the per-node work below")
            lines.append(f"del {', '.join(batch_locals)}")
        return lines

    def layer_bytes(self) -> str:
        """Per layer, bytes per source row, destination row and edge on the device, for
        batch_size="auto": loaded tensors and every op's result on those rows; an edge adds its
        block's IDs (3 x int64) and a message as wide as the widest source-row tensor."""
        # the cut already sized every value's row (None for a tuple, which has no rows)
        sizes = {node.name: node.row_bytes or 0 for node in self.plan.cut.nodes}
        row_bytes = sizes.__getitem__

        per_layer = []
        for stage in self.plan.stages:
            if stage.index == 0:
                continue
            rows = {"src": 0, "dst": 0, "edge": 24}
            widest_src = 0
            for name, space in stage.loads:
                rows[space] += row_bytes(name)
                widest_src = max(widest_src, row_bytes(name)) if space == "src" else widest_src
            for placed in stage.ops:
                rows[placed.space] += row_bytes(placed.name)
                if self.program.op(placed.name).kind == "mp":
                    # convolutions often transform source rows before aggregating (GAT's fc)
                    rows["src"] += row_bytes(placed.name)
                widest_src = max(widest_src, row_bytes(placed.name)) if placed.space == "src" else widest_src
            rows["edge"] += widest_src
            per_layer.append(f"({rows['src']}, {rows['dst']}, {rows['edge']})")
        return "[" + ", ".join(per_layer) + "]"

    def docstring(self) -> list[str]:
        p = self.program
        g = self.params[0]
        names = {p.op(n).target: param for n, param in zip(p.inputs, self.params[1:])}
        names[p.op(p.graph).target] = f"[{g}] * {p.num_blocks}" if p.blocks_style else g
        inputs = ", ".join(names[name] if kind == "positional" else f"{name}={names[name]}"
                           for name, kind in p.signature)
        return [
            "Full-neighbour inference, one layer at a time over batches of destination nodes.",
            "",
            f"Equals `self.forward({inputs})` in eval mode, while only one batch's block and rows",
            "are on `device` at a time. g and the inputs stay where they are (on the CPU, typically);",
            "the results are on the CPU. batch_size is a number of destination nodes, or \"auto\":",
            "the largest batches whose rows fit in max_memory bytes on `device` (an estimate from",
            "the model's widths and g's mean in-degree). progress: a tqdm bar per layer, if installed.",
        ]


def render(program: Program, attrs: Attributes, plan: Plan, reserved: set[str],
           header: dict[str, str]) -> Rendered:
    r = _Renderer(program, attrs, plan, reserved)
    method = r.method()
    return Rendered(
        header=render_template("header.py.j2", **header),
        helpers=render_template("helpers.py.j2", names=r.helper_names),
        method=method,
        buffers=tuple(r.buffer.items()),
        origins=tuple(r.origins),
    )

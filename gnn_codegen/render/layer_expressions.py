"""Stage 6, render, one stage's expressions: the Python of one op inside a layer's
function (its arguments, the message-passing call, a graph argument)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gnn_codegen.errors import internal
from gnn_codegen.ir import MODULE_CONSTANTS, Op, Ref, iter_refs, reads_device
from gnn_codegen.analysis.sized_tensors import FACTORIES
from gnn_codegen.analysis.whole_prefixes import row_count_of_tensor, whole_prefix
from gnn_codegen.analysis.mp_arguments import Space, mp_extra_arguments, mp_features
from gnn_codegen.render.code import ARITHMETIC_LEVEL, BINARY, NEGATION_LEVEL, UNARY, Code, Copy, constant
from gnn_codegen.trace.write_out import helper_defaults, helper_optional, helper_parameters
from gnn_codegen.render.squeezed_rows import squeezed, squeezes_every_axis
from gnn_codegen.render.list_items import parameter_base


class OpExpressions:
    """The Python of one op in a layer's function (a part of LayerWriter)."""

    def param(self, name: str, space: Space) -> str:
        """The parameter that holds `name`'s rows on `space` (source rows, destination rows or
        node ranges, edges), made on first use: named after the stored tensor."""
        if (name, space) not in self.local:
            # `feat1` for an item of a list of per-graph rows, `feat1[2]` (graph_rows.py)
            lists = {row_list.name for row_lists in getattr(self.r, "row_lists", {}).values()
                     for row_list in row_lists}
            buffer = parameter_base(self.r.buffer[name], lists)
            also_src = space == "dst" and any(n == name for n, _ in self.params["src"])
            local = self.names.take(f"{buffer}_dst" if also_src else buffer)
            self.params["edge" if space == "edge" else space].append((name, local))
            self.local[(name, space)] = local
        return self.local[(name, space)]

    # -- expressions ----------------------------------------------------------------------------
    def value(self, name: str, need: Space) -> Code:
        op = self.program.op(name)
        if op.kind == "graph":
            return Code("block")
        if name in self.constants:  # a value of no rows read more than once (shared_constants.py)
            return Code(self.constants[name])
        if name in self.r.inline:
            return self.op_expression(op, need)
        if (name, need) in self.local:
            return Code(self.local[(name, need)])
        if self.r.attrs[name].rows == "global":  # a reduction over all nodes, made before the loop
            return Code(self.r.buffer[name])
        if (name, need) in self.expressions:  # written where its only reader is, on its line
            return self.expressions[(name, need)]
        if self.r.attrs[name].rows == "tuple":
            # e.g. GATConv(get_attention=True) -> (node rows, edge rows): indexing picks the rows
            return Code(next(local for (value, _), local in self.local.items() if value == name))
        if name not in self.space:  # a stored tensor (or an input) this stage reads
            return Code(self.param(name, need))
        if need == "dst" and (name, "src") in self.local:  # computed here on source rows
            return Code(f"{self.local[(name, 'src')]}[: block.num_dst_nodes()]")
        raise internal(f"{name} is not available on {need} rows in stage {self.stage.index}")

    def arg(self, value: Any, need: Space, in_index: bool = False) -> Code:
        if isinstance(value, Ref):
            return self.value(value.name, need)
        if isinstance(value, Copy):
            return Code(f"{self.arg(value.value, need).operand()}.clone()")
        if isinstance(value, slice) and in_index:
            parts = [self.arg(v, need).text if v is not None else "" for v in (value.start, value.stop, value.step)]
            return Code(":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else ""))
        if isinstance(value, slice):
            return Code(f"slice({', '.join(self.arg(v, need).text for v in (value.start, value.stop, value.step))})")
        if isinstance(value, tuple):
            items = [self.arg(v, need, in_index).text for v in value]
            if in_index:
                return Code(", ".join(items))
            return Code(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})")
        if isinstance(value, list):
            return Code(f"[{', '.join(self.arg(v, need).text for v in value)}]")
        if isinstance(value, MODULE_CONSTANTS):  # `1 - self.convs[4].beta` (module_constants.py)
            return Code(value.expression, atom=value.atom)
        text = constant(value)
        negative = text.startswith("-")
        return Code(text, atom=not negative, level=NEGATION_LEVEL if negative else 0)

    def call_args(self, op: Op, need: Space, skip: int = 0) -> str:
        parts = [self.arg(a, need).text for a in op.args[skip:]]
        parts += [f"{k}={self.arg(v, need).text}" for k, v in op.kwargs]
        return ", ".join(parts)

    def op_expression(self, op: Op, need: Space) -> Code:
        if op.kind == "attr":
            return Code(op.accessor)
        counted = self._counted_only(op, need)
        if counted is not None:
            return counted
        if op.helper:  # a written-out convolution's part: its module first, then the rest
            rest = list(op.args[1:])
            while rest and rest[-1] is None:  # arguments that default to None
                rest.pop()
            names = helper_parameters(op.helper)[1:]
            # a helper taking *values (with_graph_data) has more arguments than parameters: the
            # values go by position
            names += [""] * (len(rest) - len(names))
            args = [op.accessor]
            as_graph = self.as_graph(op.name)  # the graph it takes: the block as a graph
            optional, defaults = helper_optional(op.helper), helper_defaults(op.helper)
            keyword = False  # an argument went by name: every later one does
            for i, a in enumerate(rest):  # constants by name: `weight_first=True` says what it is
                graph = as_graph and op.mp is not None and op.mp.roles[i] == "graph"
                text = self.graph if graph else self.arg(a, self._role(op, i, need)).text
                if names[i] in optional and (keyword or text != names[i]):
                    # an optional argument by name (`h_dst=x0`), left out where it is the default
                    keyword = True
                    if not (names[i] in defaults and a is defaults[names[i]]):
                        args.append(f"{names[i]}={text}")
                    continue
                # but by position before values (with_graph_data's fields, then *values)
                later = [r for j, r in enumerate(rest[i + 1:], i + 1) if names[j] not in optional]
                by_position = any(True for _ in iter_refs(a)) or any(True for _ in iter_refs(later))
                keyword = keyword or not by_position
                args.append(text if by_position or not names[i] else f"{names[i]}={text}")
            args += [f"{k}={self.arg(v, 'edge' if op.kind == 'mp' else need).text}" for k, v in op.kwargs]
            call = f"{self.r.helper_names[op.helper]}({', '.join(args)})"
            if as_graph and self.r.attrs[op.name].rows == "node":
                return Code(f"{call}[: block.num_dst_nodes()]")  # the graph's first rows
            return Code(call)
        if op.kind == "module":
            return Code(f"{op.accessor}({self.call_args(op, need)})")
        if op.kind == "mp":
            call = f"{op.accessor}({self.mp_args(op)})"
            if self.as_graph(op.name) and self.r.attrs[op.name].rows == "node":
                return Code(f"{call}[: block.num_dst_nodes()]")  # the graph's first rows
            return Code(call)
        if op.kind == "method" and (made := self._made_where_moved(op)) is not None:
            return self.function_expression(made, need)
        if op.kind == "method":
            receiver = self.arg(op.args[0], need).operand()
            if squeezes_every_axis(op):  # h.squeeze(1), or h: the dims of size 1 but the rows' (squeezed_rows.py)
                return Code(squeezed(receiver, self.r.attrs[op.args[0].name].shape, op))
            if op.target == "squeeze" and op.args[1:] == (0,) and isinstance(op.args[0], Ref) and \
                    self.r.attrs[op.args[0].name].rows in ("node", "edge"):
                return Code(receiver)  # h.squeeze(0) of rows squeezes a batch of one node only (GGD)
            return Code(f"{receiver}.{op.target}({self.call_args(op, need, skip=1)})")
        if op.kind == "function" and squeezes_every_axis(op):  # torch.squeeze(h, 1), or h
            return Code(squeezed(self.arg(op.args[0], need).text, self.r.attrs[op.args[0].name].shape, op))
        if op.kind == "function":
            return self.function_expression(op, need)
        raise internal(f"cannot render op kind {op.kind}")

    def _counted_only(self, op: Op, need: Space) -> Code | None:
        """`t.shape[0]` or `t.size(0)` of node rows t that this layer's function does not hold
        on the rows it is read on: the block's count of those rows, not t's rows passed in only
        to be counted (GeniePath's `torch.zeros(1, x.shape[0], d)`, its LSTM's first memory,
        read the raw input x per batch for its row count; the plan loads no rows a layer only
        counts, cut/plan.row_deps). A function over ranges of nodes has no block, and a t it
        holds there is counted as forward counts it."""
        counted = row_count_of_tensor(Ref(op.name), self.program)
        if counted is None or self.node_ranges or need not in ("src", "dst") or self.r.attrs[counted].rows != "node":
            return None
        if self.space.get(counted) == need or counted in self.r.inline or (counted, need) in self.local:
            return None  # held on the rows it is counted on
        return Code(f"block.num_{need}_nodes()")

    def _made_where_moved(self, op: Op) -> Op | None:
        """`torch.zeros(n, d).to(x.device)` as `torch.zeros(n, d, device=device)`: the same
        tensor made on the device, not on the host and copied there per batch (GeniePath's LSTM
        memory); None for any other op."""
        if not (op.target == "to" and len(op.args) == 2 and not op.kwargs and isinstance(op.args[0], Ref)
                and isinstance(op.args[1], Ref) and reads_device(self.program, self.program.op(op.args[1].name))):
            return None
        made = self.program.op(op.args[0].name)
        if (made.kind != "function" or made.name not in self.r.inline
                or made.target.rsplit(".", 1)[-1] not in FACTORIES or any(k == "device" for k, _ in made.kwargs)):
            return None
        return replace(made, kwargs=(*made.kwargs, ("device", op.args[1])))

    @staticmethod
    def _role(op: Op, index: int, need: Space) -> Any:
        """The rows a written-out convolution's argument (after its module) is read at."""
        if op.kind != "mp" or op.mp is None:
            return need
        role = op.mp.roles[index] if index < len(op.mp.roles) else None
        return role if role in ("src", "dst", "edge") else "dst"

    def function_expression(self, op: Op, need: Space) -> Code:
        module, _, name = op.target.rpartition(".")
        if module == "operator" and name in ARITHMETIC_LEVEL and len(op.args) == 2:
            level = ARITHMETIC_LEVEL[name]
            a, b = (self.arg(x, need).operand_of(level, right) for right, x in enumerate(op.args))
            return Code(f"{a} {BINARY[name]} {b}", atom=False, level=level)
        if module == "operator" and name in BINARY and len(op.args) == 2:
            a, b = (self.arg(x, need).operand() for x in op.args)
            return Code(f"{a} {BINARY[name]} {b}", atom=False)
        if module == "operator" and name == "neg":
            negated = self.arg(op.args[0], need).operand_of(NEGATION_LEVEL, True)
            return Code(f"-{negated}", atom=False, level=NEGATION_LEVEL)
        if module == "operator" and name in UNARY:
            return Code(f"{UNARY[name]}{self.arg(op.args[0], need).operand()}", atom=False)
        if module == "operator" and name == "getitem":
            whole = whole_prefix(op, self.program, self.r.attrs)
            if whole is not None and (whole[1] in self.r.inline or self.space.get(whole[1]) == need):
                # `h0[: h.size(0)]` with h0 and h on this function's same rows (the count
                # written inside the slice reads h on them): h0 (whole_prefixes.py)
                return self.arg(whole[0], need)
            receiver = self.arg(op.args[0], need).operand()
            index = self.arg(op.args[1], need, in_index=True).text
            if isinstance(op.args[0], Ref) and self.as_graph(op.args[0].name) and self.r.attrs[op.name].rows == "node":
                return Code(f"{receiver}[{index}][: block.num_dst_nodes()]")  # the graph's first rows
            return Code(f"{receiver}[{index}]")
        if reads_device(self.program, op):  # every tensor of a batch is on the device
            return Code(self.r.device)
        if op.target == "getattr" and len(op.args) == 2 and isinstance(op.args[1], str):
            return Code(f"{self.arg(op.args[0], need).operand()}.{op.args[1]}")
        if module == "operator":
            raise internal(f"cannot render operator.{name}")
        return Code(f"{op.held_as or op.target}({self.call_args(op, need)})")

    def mp_args(self, op: Op) -> str:
        """A message-passing module called on the block: (source rows) or (source rows,
        destination rows), edge tensors in their own positions."""
        spaces = mp_features(op)
        rows = [self.arg(value, space).text for value, space in spaces]
        if self.in_place and len(rows) == 1:
            # the block's sources are all of g's nodes: its destination rows are not their first
            # rows, so the module gets them as the pair's second element
            rows.append(self.arg(spaces[0][0], "dst").text)
        features = rows[0] if len(rows) == 1 else f"({', '.join(rows)})"
        positional, keywords = mp_extra_arguments(op)
        extra = [self.arg(value, space).text for value, space in positional]
        extra += [f"{k}={self.arg(value, space).text}" for k, value, space in keywords]
        return ", ".join([self.graph if self.as_graph(op.name) else "block", features, *extra])

    def as_graph(self, name: str) -> bool:
        """A user's module given the block as a graph over its sources (block_as_graph.py)."""
        mp = self.program.op(name).mp
        return mp is not None and mp.as_graph

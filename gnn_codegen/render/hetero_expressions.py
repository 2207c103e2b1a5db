"""Python for the values of a traced heterogeneous forward (hetero/render.py writes the method
around them): each call as the user's file spells it (`F.relu(h)`, `self.proj[ntype](x)`,
`h.view(h.shape[0], -1)`), constants by name or inline, and local names taken from the lines
that assign the values (`h = h + self.h_bias`), the same for every node type."""

from __future__ import annotations

import operator
import re
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.errors import internal
from gnn_codegen.ir import quoted_code
from gnn_codegen.cut.hetero import HeteroPlan, resolve
from gnn_codegen.lower.program import _without_defaults
from gnn_codegen.lower.module_callables import held_by_module
from gnn_codegen.lower.spelling import function_expression, locations
from gnn_codegen.lower.accessors import accessor as module_accessor
from gnn_codegen.render.code import BINARY, UNARY, Code, constant
from gnn_codegen.render.quoted_lines import quoted
from gnn_codegen.render.squeezed_rows import squeezes_every_axis, squeezes_first_axis

_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:[-+*/@]?=)(?!=)")


class Names:
    """Unique names in one scope."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def new(self, base: str) -> str:
        base = re.sub(r"\W", "_", base) or "h"
        if base[0].isdigit():
            base = f"h{base}"
        name, i = base, 1
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name


def line_variable(node: fx.Node, path: Any) -> str:
    """The variable the node's source line assigns (`h = h + self.h_bias`: h): the user's line,
    else the line of the library code forward runs through; "" if neither assigns one."""
    for where in locations(node, path):
        match = _ASSIGNED.match(quoted_code(where))
        if match:
            return match.group(1)
    return ""


# the products a term named for its weight comes from (name_for)
_PRODUCTS = frozenset({"matmul", "mm", "linear"})


def base_name(node: fx.Node) -> str:
    return re.sub(r"_\d+$", "", node.name)


class ExpressionWriter:
    """Python for the traced values: names as the user's lines assign them, constants by their
    names or inline, calls as the user's file spells them."""

    def __init__(self, plan: HeteroPlan, namespace: dict[str, Any], reserved: set[str]):
        self.plan = plan
        self.traced = plan.traced
        self.namespace = namespace
        self.model = plan.traced.model
        self.modules = dict(plan.traced.graph_module.named_modules())
        self.path = plan.traced.path
        self.names = Names(reserved | {"self", "batches", "ntype", "block", "out_degrees"})
        self.once: dict[fx.Node, str] = {}  # constants with a name of their own
        self.groups: dict[fx.Node, tuple[str, str]] = {}  # stored value -> (dict name, its type)
        for (param, ntype), node in self.traced.placeholders.items():
            self.groups[node] = (param, ntype)
        # the values lines assign: the last op of each run of ops from one line, per node type
        # (a dict comprehension's line runs once per type)
        self.assigned: set[fx.Node] = set()
        runs: dict[str, tuple[tuple[str, str], fx.Node]] = {}
        for node in plan.traced.graph_module.graph.nodes:
            ntype, where = plan.ntype.get(node, ""), locations(node, self.path)
            previous = runs.get(ntype)
            if previous is not None and previous[0] != where:
                self.assigned.add(previous[1])
            runs[ntype] = (where, node)
        self.assigned.update(node for _, node in runs.values())

    def name_for(self, node: fx.Node) -> str:
        """The variable the user's line assigns, for the value it assigns (the line's last op);
        the op's own name (`matmul`) for the values computed on the way."""
        variable = line_variable(node, self.path)
        if variable and node in self.assigned:
            return variable
        # a product with a weight of the model's on the way (`torch.matmul(inputs[ntype],
        # self.loop_weight)` in `h = h + ...`): the term that weight makes, `loop_term`
        weights = [str(a.target).rsplit(".", 1)[-1] for a in node.args if isinstance(a, fx.Node)
                   and a.op == "get_attr" and re.search(r"._?weights?$", str(a.target).rsplit(".", 1)[-1])]
        if node.op == "call_function" and getattr(node.target, "__name__", "") in _PRODUCTS and len(weights) == 1:
            stem = re.sub(r"_?weights?$", "", weights[0])
            if stem.isidentifier():
                return f"{stem}_term"
        # `proj` for self.proj["paper"]: the same name for every type
        return re.sub(rf"_{re.escape(self.plan.ntype.get(node, ''))}$", "", base_name(node)) or "h"

    # --- expressions -------------------------------------------------------------------------

    def res(self, value: Any) -> Any:
        return resolve(value, self.modules)

    def expr(self, value: Any, env: dict[fx.Node, str]) -> str:
        """Python for a value: a node by its name in env or as a constant, or a literal."""
        return self.code(value, env).text

    def code(self, value: Any, env: dict[fx.Node, str]) -> Code:
        """expr's text, and whether it stands as an operand without parentheses."""
        if isinstance(value, fx.Node):
            value = self.res(value)
            if value in env:
                return Code(env[value])
            if value in self.once:
                return Code(self.once[value])
            if value.op == "get_attr":
                return Code(accessor(self.model, str(value.target)))
            if value.name in self.traced.constant_names:
                return self.call_code(value, env)
            raise internal(f"hetero render: {value.name} has no name here")
        if isinstance(value, dict):
            return Code("{" + ", ".join(f"{self.expr(k, env)}: {self.expr(v, env)}" for k, v in value.items()) + "}")
        if isinstance(value, tuple):
            inner = ", ".join(self.expr(v, env) for v in value)
            return Code(f"({inner},)" if len(value) == 1 else f"({inner})")
        if isinstance(value, list):
            return Code("[" + ", ".join(self.expr(v, env) for v in value) + "]")
        if isinstance(value, str):
            # double quotes always: render.py finds a type's name as "paper" in the code
            return Code(quoted(value))
        if isinstance(value, slice):
            parts = [self.expr(p, env) if p is not None else "" for p in (value.start, value.stop)]
            return Code(":".join(parts) + (f":{self.expr(value.step, env)}" if value.step is not None else ""))
        text = constant(value)
        return Code(text, atom=not text.startswith("-"))

    def call(self, node: fx.Node, env: dict[fx.Node, str]) -> str:
        return self.call_code(node, env).text

    def call_code(self, node: fx.Node, env: dict[fx.Node, str]) -> Code:
        """The call of a traced node, as the user's file spells it (operators as operators)."""
        args = [self.expr(a, env) for a in node.args]
        given = tuple(node.kwargs.items())
        if node.op == "call_function":  # F.relu(h), not F.relu(h, inplace=False) as fx records it
            given = _without_defaults(node.target, given)
        kwargs = [f"{k}={self.expr(v, env)}" for k, v in given]
        if node.op == "call_module":
            return Code(f"{accessor(self.model, str(node.target))}({', '.join(args + kwargs)})")
        if node.op == "call_method":
            receiver = self.code(node.args[0], env).operand()
            rows = node in self.plan.ntype  # a node type's rows (a weight's squeeze is as forward has it)
            if rows and squeezes_every_axis(node):  # every axis of size 1 but the rows' (squeezed_rows.py)
                return Code(f"{receiver}.squeeze(tuple(range(1, {receiver}.dim())))")
            if rows and squeezes_first_axis(node):  # of many rows, nothing
                return self.code(node.args[0], env)
            return Code(f"{receiver}.{node.target}({', '.join(args[1:] + kwargs)})")
        target, name = node.target, getattr(node.target, "__name__", "")
        if getattr(operator, name, None) is target and name in BINARY and not kwargs:
            left, right = (self.code(a, env).operand() for a in node.args)
            return Code(f"{left} {BINARY[name]} {right}", atom=False)
        if getattr(operator, name, None) is target and name in UNARY and not kwargs:
            return Code(f"{UNARY[name]}{self.code(node.args[0], env).operand()}", atom=False)
        if target is operator.getitem and not kwargs:
            index = node.args[1]
            inner = ", ".join(self.expr(i, env) for i in index) if isinstance(index, tuple) else args[1]
            return Code(f"{self.code(node.args[0], env).operand()}[{inner}]")
        if target is getattr:
            return Code(f"{self.code(node.args[0], env).operand()}.{node.args[1]}")
        # `self.layers[0].activation(h)` where the module holds the function (module_callables.py)
        spelled = held_by_module(node, self.model) or function_expression(target, self.namespace)  # type: ignore[arg-type]
        return Code(f"{spelled}({', '.join(args + kwargs)})")


def accessor(root: torch.nn.Module, target: str) -> str:
    """lower.accessor, and a ParameterDict's entry by its key (`self.embeds["paper"]`), as
    people write an embedding per node type."""
    parent, _, last = target.rpartition(".")
    if parent and isinstance(root.get_submodule(parent), torch.nn.ParameterDict):
        return f'{module_accessor(root, parent)}["{last}"]'
    if parent and isinstance(root.get_submodule(parent), torch.nn.ParameterList):
        return f"{module_accessor(root, parent)}[{last}]"
    return module_accessor(root, target)

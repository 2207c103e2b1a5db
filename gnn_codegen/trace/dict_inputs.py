"""Stage 2, trace (and the method's signature it implies): a forward of the homogeneous pipeline
whose features come as a dict by node type (OpenHGNN's `forward(self, g, h_dict)` over a
heterograph it only hands to `dgl.metapath_reachable_graph`, `h = h_dict[self.category]`,
`{t: self.fc(h_dict[t]) for t in h_dict}`), the dict's node types and widths named with
`--feat-dims paper=64` as for a heterogeneous model.

A dict's keys are a fact of the call, not of its data: forward is traced with a real dict whose
values are traced tensors, one input per type (`h_dict_paper`), so Python's loops over its keys
and lookups by key are decided while tracing. The model's class is swapped, while it is traced
or checked, for a subclass whose forward takes those tensors and calls the user's forward with
the dict (as forward_defaults.callables_bound does for callable defaults). The generated method
takes the dict as forward does, checks at its top that it holds exactly the types it was
generated for (a ValueError naming the difference: another type set may take other branches),
and reads each type's tensor from it."""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

import torch

from gnn_codegen.trace.metapath_types import rows_type_named, rows_type_of

T = TypeVar("T")

# (forward's parameter, ((node type, the input's name), ...)): one dict of features by type
DictInput = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class DictInputs:
    dicts: tuple[DictInput, ...]

    def widths(self, feat_dims: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        """--feat-dims by node type as widths of the inputs that stand for them."""
        by_type = {ntype: name for _, items in self.dicts for ntype, name in items}
        return {by_type.get(name, name): shape for name, shape in feat_dims.items()}

    def signature(self, traced: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """forward's signature as traced (each type's input a parameter) as the user's forward
        has it: each dict one parameter, where its first type's input stood."""
        by_name = {name: param for param, items in self.dicts for _, name in items}
        out = []
        for name, kind in traced:
            if by_name.get(name, name) not in [n for n, _ in out]:
                out.append((by_name.get(name, name), kind))
        return tuple(out)


def dict_inputs(model: torch.nn.Module, feat_dims: dict[str, tuple[int, ...]], graph_arg: str | None
                ) -> DictInputs | None:
    """forward's dict of features by node type, where --feat-dims names widths by something
    that is no parameter of forward's (node types) and forward has exactly one parameter
    without a default besides its graph that --feat-dims does not name: that one is the dict."""
    params = list(inspect.signature(type(model).forward).parameters.values())[1:]
    names = {p.name for p in params}
    types = [name for name in feat_dims if name not in names]
    if not types:
        return None
    open_ = [p for p in params if p.default is inspect.Parameter.empty and p.name not in feat_dims
             and p.name != graph_arg and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if graph_arg is None and open_:  # the graph is forward's first parameter
        open_ = open_[1:]
    if len(open_) != 1:
        return None
    param = open_[0].name
    taken = names | {"self"}
    items = []
    for ntype in types:
        name = f"{param}_{ntype}"
        while name in taken:
            name += "_"
        taken.add(name)
        items.append((ntype, name))
    return DictInputs(((param, tuple(items)),))


def proven_with_dicts(model: torch.nn.Module, feat_dims: dict[str, tuple[int, ...]],
                      prove: Callable[[dict[str, tuple[int, ...]]], T]) -> tuple[T, DictInputs | None]:
    """prove(widths) with forward's parameters as they are, or, where --feat-dims names what is
    no parameter of forward's and forward uses its one open parameter as a dict (used_as_dict),
    with that parameter a dict of those names (and the rows of metapath graphs of its one type,
    metapath_types.py). Names that forward reads from its graph (`--feat-dims w=1`) or a typo
    (`--feat-dims xx=5` for a tensor x) keep the first way and its messages."""
    packed = dict_inputs(model, feat_dims, None)
    if packed is None or not all(used_as_dict(type(model).forward, param) for param, _ in packed.dicts):
        return prove(feat_dims), None
    with taking_tensors(model, packed), rows_type_named(rows_type_of(packed.dicts)):
        return prove(packed.widths(feat_dims)), packed


def used_as_dict(forward: Any, param: str) -> bool:
    """Whether forward's source uses `param` as a dict: read by a string or attribute key
    (`h_dict["paper"]`, `h_dict[self.category]`) or a loop's key (`for t in self.category:
    h_dict[t]`), its keys or items asked for, iterated, or tested for membership. A tensor is
    indexed by other things (`x[mask]`, `x[:, 0]`, `x[i]` for i in range(...))."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(forward)))
    except (OSError, TypeError, SyntaxError):
        return False

    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == param

    # names a loop binds from something other than range(...): keys (`for t in self.category`)
    keys = {target.id for loop in ast.walk(tree) if isinstance(loop, (ast.For, ast.comprehension))
            and not (isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
                     and loop.iter.func.id in ("range", "enumerate", "zip"))
            for target in ast.walk(loop.target) if isinstance(target, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and named(node.value) and (
                isinstance(node.slice, ast.Attribute)
                or isinstance(node.slice, ast.Name) and node.slice.id in keys
                or isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return True
        if isinstance(node, ast.Attribute) and named(node.value) and node.attr in ("items", "keys", "values", "get"):
            return True
        if isinstance(node, (ast.For, ast.comprehension)) and named(node.iter):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(named(c) for c in node.comparators):
            return True
    return False


@contextlib.contextmanager
def taking_tensors(model: torch.nn.Module, inputs: DictInputs | None) -> Iterator[None]:
    """While inside, the model's class is a subclass of the same name whose forward takes each
    dict's tensors (`h_dict_paper`) where the user's takes the dict, and calls the user's forward
    with the dict. fx reads forward's parameters from its code object, hence a function written
    for them."""
    if inputs is None:
        yield
        return
    cls = type(model)
    packed = dict(inputs.dicts)
    spelled, call, defaults, keyword_only = [], [], {}, False
    for p in list(inspect.signature(cls.forward).parameters.values())[1:]:
        if p.kind == p.VAR_POSITIONAL or p.kind == p.VAR_KEYWORD:
            continue  # forward is called without more, as the tracer calls it
        if p.kind == p.KEYWORD_ONLY and not keyword_only:
            spelled.append("*")
            keyword_only = True
        if p.name in packed:
            spelled += [name for _, name in packed[p.name]]
            call.append(f"{p.name}={{{', '.join(f'{t!r}: {name}' for t, name in packed[p.name])}}}")
            continue
        if p.default is inspect.Parameter.empty:
            spelled.append(p.name)
        else:
            defaults[f"_default_{p.name}"] = p.default
            spelled.append(f"{p.name}=_default_{p.name}")
        call.append(f"{p.name}={p.name}")
    source = f"def forward({', '.join(['self', *spelled])}):\n    return _forward(self, {', '.join(call)})\n"
    namespace: dict[str, Any] = {"_forward": cls.forward, **defaults}
    exec(compile(source, f"<{cls.__name__}.forward taking its dict's tensors>", "exec"), namespace)
    model.__class__ = type(cls.__name__, (cls,), {"forward": namespace["forward"], "__module__": cls.__module__})
    try:
        yield
    finally:
        model.__class__ = cls


def packed_arguments(named: list[tuple[str, Any]], packed: tuple[DictInput, ...]) -> list[tuple[str, Any]]:
    """(name, value) pairs of the method's parameters with each dict's inputs made one dict
    parameter, where its first input stood: (forward's parameter, {type: value, ...})."""
    by_name = {name: (param, ntype) for param, items in packed for ntype, name in items}
    out: list[tuple[str, Any]] = []
    dicts: dict[str, dict[str, Any]] = {}
    for name, value in named:
        if name not in by_name:
            out.append((name, value))
            continue
        param, ntype = by_name[name]
        if param not in dicts:
            dicts[param] = {}
            out.append((param, dicts[param]))
        dicts[param][ntype] = value
    return out


def unpacking_lines(packed: tuple[DictInput, ...], spelled: dict[str, str], params: dict[str, str]) -> list[str]:
    """The generated method's first lines for each dict: its types checked, each read.
    spelled: input name -> its name in the method; params: forward's parameter -> its name."""
    lines = []
    for param, items in packed:
        given = params[param]
        types = sorted(t for t, _ in items)
        lines += [
            f"if sorted({given}) != {types!r}:  # forward's Python decided on these keys",
            f"    raise ValueError(\"generated for {given} with the keys {types} (--feat-dims): \"",
            f"                     f\"{given} has {{sorted({given})}}; regenerate with --feat-dims naming each\")",
        ]
        lines += [f"{spelled[name]} = {given}[{ntype!r}]" for ntype, name in items]
    return lines

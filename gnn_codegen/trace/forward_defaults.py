"""Stage 2, trace: forward's parameters with defaults, as forward uses them. Each is traced at
its default (trace.py) except where Python itself would not run forward that way:

- a callable default (`post_step=lambda y: y.clamp(0., 1.)`, `activation=F.relu`) is applied
  as Python applies it: forward is traced with the callable bound, so its body is followed like
  forward's own code (and refused, where it cannot be, at its own line);
- a None default that forward hands to a message-passing module as its features
  (`def forward(self, g, inference=False, feat=None)`, called as `model(g, feat=x)`) is no
  value forward can run with: it is an input, taken by keyword as forward is called;
- the traced program's signature lists the parameters it takes before those it was traced at
  (torch.fx writes placeholders in order, and a parameter without a default after one with a
  default is a signature Python rejects)."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Iterator

import torch
import torch.fx as fx


def callable_defaults(model: torch.nn.Module) -> dict[str, Any]:
    """forward's parameters whose default is a function or other callable (not a class, not a
    module: those are values fx may record), by name."""
    return {p.name: p.default for p in inspect.signature(type(model).forward).parameters.values()
            if p.default is not inspect.Parameter.empty and callable(p.default)
            and not isinstance(p.default, (type, torch.nn.Module))}


@contextlib.contextmanager
def callables_bound(model: torch.nn.Module, bound: dict[str, Any]) -> Iterator[None]:
    """While inside, the model's class is a subclass of the same name whose forward lacks the
    parameters of `bound` and calls the user's forward with them at their values: torch.fx then
    follows `post_step(h)` into the callable's body, as Python runs it. fx reads forward's
    parameters from its code object, hence a function written for the others."""
    if not bound:
        yield
        return
    cls = type(model)
    params = [p for p in list(inspect.signature(cls.forward).parameters.values())[1:] if p.name not in bound]
    defaults = {f"_default_{p.name}": p.default for p in params if p.default is not inspect.Parameter.empty}
    spelled, keyword_only = [], False
    for p in params:
        if p.kind == p.KEYWORD_ONLY and not keyword_only:
            spelled.append("*")
            keyword_only = True
        spelled.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}=_default_{p.name}")
    call = ", ".join([f"{p.name}={p.name}" for p in params] + [f"{name}=_bound[{name!r}]" for name in bound])
    source = f"def forward({', '.join(['self', *spelled])}):\n    return _forward(self, {call})\n"
    namespace: dict[str, Any] = {"_forward": cls.forward, "_bound": bound, **defaults}
    exec(compile(source, f"<{cls.__name__}.forward with its callable defaults>", "exec"), namespace)
    applying = type(cls.__name__, (cls,), {"forward": namespace["forward"], "__module__": cls.__module__})
    model.__class__ = applying
    try:
        yield
    finally:
        model.__class__ = cls


def _has_default(node: fx.Node) -> bool:
    return node.op == "placeholder" and bool(node.args)


def required_first(graph: fx.Graph) -> None:
    """Move every placeholder without a default before the first one with a default (a
    parameter traced at its value, `inference=False`), so that the program's signature is one
    Python accepts. Everything that runs the program passes each placeholder by position in the
    program's own order (attributes.py), so the order is free."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    first = next((n for n in placeholders if _has_default(n)), None)
    if first is None:
        return
    for node in placeholders[placeholders.index(first) + 1:]:
        if not _has_default(node):
            first.prepend(node)


def none_default_choices(model: torch.nn.Module, graph_arg: str) -> list[frozenset[str]]:
    """The ways to take forward's None defaults as inputs, in the order to try them: each alone
    in the order of forward's signature, then all together."""
    names = [p.name for p in inspect.signature(type(model).forward).parameters.values()
             if p.default is None and p.name != graph_arg]
    return [*(frozenset({n}) for n in names), *([frozenset(names)] if len(names) > 1 else [])]


def none_fed_as_features(graph: fx.Graph, none_defaults: list[str], feature_calls: Any) -> bool:
    """Whether the program traced at its defaults hands None as the features of a
    message-passing call (`self.conv(g, None)`): forward cannot run so, so one of the None
    defaults is an input that its callers always give. `feature_calls(node)` gives a node's
    feature arguments (none for other nodes)."""
    if not none_defaults:
        return False
    return any(feature is None for node in graph.nodes for feature in feature_calls(node))


def _is_guard(node: fx.Node) -> bool:
    """fx's own check that a parameter traced at a value has it (`_assert_is_none(h_1)`)."""
    return node.op == "call_function" and (getattr(node.target, "__module__", "") or "").startswith("torch.fx") \
        or node.op == "call_function" and node.target is torch._assert


def same_program_but(default: fx.Graph, given: fx.Graph, table: str, parameter: str) -> bool:
    """Whether `given` (forward traced with `parameter` given) is `default` (traced at its None
    default, where forward then reads the model's `table`, a placeholder once lifted) with
    `parameter` read wherever `default` reads `table`: node for node, the same calls on the
    same arguments. Then inference may take the parameter, None meaning the model's table."""
    def body(graph: fx.Graph) -> list[fx.Node]:
        kept = [n for n in graph.nodes if n.op != "placeholder" and not _is_guard(n)]
        # what only guards read: the guards' operands (`eq = inference_1 == False`)
        return [n for n in kept if n.op == "output" or any(not _is_guard(u) for u in n.users)]

    names: dict[fx.Node, str] = {}
    for graph, renamed in ((default, table), (given, parameter)):
        for node in graph.nodes:
            if node.op == "placeholder":
                names[node] = "$input" if str(node.target) == renamed else f"${node.target}"
    ours, theirs = body(default), body(given)
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        names.setdefault(a, a.name)
        names.setdefault(b, a.name)
    read = [str(n.target) for n in given.nodes if n.op == "placeholder"]
    if table in read:  # forward reads the table even when given the parameter
        return False

    def spelled(value: Any) -> Any:
        return fx.node.map_arg(value, lambda n: names.get(n, n.name))  # type: ignore[arg-type,return-value]

    return all(a.op == b.op and a.target == b.target and str(spelled(a.args)) == str(spelled(b.args))
               and str(spelled(a.kwargs)) == str(spelled(b.kwargs)) for a, b in zip(ours, theirs))

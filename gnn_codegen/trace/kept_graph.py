"""Models that keep their graph (`self.g = g` in __init__, `forward(self, features)`), as DGL's
model zoo, appnp, tagcn, dgi and monet examples write them: forward is traced as if it took the
graph first, with every place the model keeps the graph reading that parameter while it runs, so
the generated `inference(self, g, features, ...)` uses its `g` wherever forward uses `self.g`."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Iterator

import dgl
import torch

from gnn_codegen.errors import SignatureError
from gnn_codegen.names import NameAllocator


def graphs_on_the_model(model: torch.nn.Module) -> list[tuple[str, dgl.DGLGraph]]:
    """(`g`, `encoder.g`: where a module keeps it, its graph) for each DGLGraph attribute of the
    model and its submodules."""
    found = []
    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, dgl.DGLGraph):
                found.append((f"{prefix}.{attr}" if prefix else attr, value))
    return found


def kept_graph(model: torch.nn.Module, taken: set[str]) -> tuple[str, tuple[str, ...]]:
    """For a forward that takes no graph: the name inference calls the graph (the attribute's,
    `g` for self.g, unless forward has a parameter of that name) and where the model keeps it.
    Several different graphs on the model are refused: which one is forward's is unclear."""
    kept = graphs_on_the_model(model)
    name = type(model).__name__
    distinct = {id(graph) for _, graph in kept}
    if len(distinct) > 1:
        where = ", ".join(f"self.{path}" for path, _ in kept)
        raise SignatureError(
            f"{name} keeps {len(distinct)} different graphs ({where}) and its forward takes none, "
            "so which graph each layer runs on cannot become one graph argument of inference. "
            "Keep one graph (every module reading the same object), or pass the graph to "
            "forward (def forward(self, g, features))."
        )
    paths = tuple(path for path, _ in kept)
    return NameAllocator(taken).take(paths[0].rsplit(".", 1)[-1]), paths


@contextlib.contextmanager
def graph_set_on(model: torch.nn.Module, paths: tuple[str, ...], graph: Any) -> Iterator[None]:
    """While inside: every place the model keeps its graph holds `graph` (a tracing proxy, or
    the graph a check runs forward on); afterwards the model's own graph again."""
    previous = []
    for path in paths:
        owner, _, attr = path.rpartition(".")
        module = model.get_submodule(owner) if owner else model
        previous.append((module, attr, vars(module)[attr]))
        vars(module)[attr] = graph  # a plain attribute: nn.Module.__setattr__ would not add it
    try:
        yield
    finally:
        for module, attr, value in previous:
            vars(module)[attr] = value


@contextlib.contextmanager
def forward_taking_the_graph(model: torch.nn.Module, graph_name: str, paths: tuple[str, ...]) -> Iterator[None]:
    """While inside, the model's class is a subclass of the same name whose forward takes the graph
    first: `forward(self, g, features)` sets the kept graph to its `g` and runs the user's forward.
    torch.fx reads forward's parameters from its code object, hence a function written for them."""
    cls = type(model)
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
    # forward's defaults, which fx records on the placeholders of parameters traced at them
    defaults = {f"_default_{p.name}": p.default for p in params if p.default is not p.empty}
    spelled = [f"{p.name}=_default_{p.name}" if f"_default_{p.name}" in defaults else p.name for p in params]
    arguments = ", ".join(["self", graph_name, *spelled[:len(positional)],
                           *(["*", *spelled[len(positional):]] if keyword else [])])
    call = ", ".join([*positional, *(f"{k}={k}" for k in keyword)])
    source = (
        f"def forward({arguments}):\n"
        f"    with _graph_set_on(self, _paths, {graph_name}):\n"
        f"        return _forward(self, {call})\n"
    )
    namespace: dict[str, Any] = {"_graph_set_on": graph_set_on, "_paths": paths, "_forward": cls.forward, **defaults}
    exec(compile(source, f"<{cls.__name__}.forward taking its graph>", "exec"), namespace)
    taking = type(cls.__name__, (cls,), {"forward": namespace["forward"], "__module__": cls.__module__})
    model.__class__ = taking
    try:
        yield
    finally:
        model.__class__ = cls

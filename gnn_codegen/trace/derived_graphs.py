"""Graphs that forward derives from its graph alone (`g = dgl.add_self_loop(g)`,
`dgl.remove_self_loop`, `dgl.reverse`, `dgl.to_bidirected`, `dgl.to_simple`,
`dgl.add_reverse_edges`): values of the graph, computed once on the full graph at the top of the
generated inference, each with batches of its own over the same nodes.

While forward is traced, those functions of dgl are wrapped (as torch.fx's autowrap wraps a
module's globals), so that a call on the traced graph becomes one node of the traced program
instead of DGL code running on a proxy; outside tracing, and on any other argument, they are
DGL's own. Every one of them keeps the graph's nodes and their IDs, so per-node tensors need no
translation; edges differ, so edge data does not carry over (refused in plan.py)."""

from __future__ import annotations

import contextlib
import functools
from types import ModuleType
from typing import Any, Iterator

import dgl
import torch.fx as fx

from gnn_codegen.errors import GraphUseError
from gnn_codegen.trace.graph_lineage import CONVERTS, DERIVED, SAME_GRAPH
from gnn_codegen.trace.homogenized import conversion_arguments
from gnn_codegen.trace.patching import replaced
from gnn_codegen.trace.type_offsets import written_inputs

def converted(tracer: fx.Tracer, g: fx.Proxy, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
              graph_proxy: type) -> Any:
    """`dgl.to_homogeneous(hg, ...)` (or `hg.node_type_subgraph([...])`) on the traced graph:
    the call recorded on the tracer (homogenized.py), forward's graph standing for its result."""
    if g.node.op != "placeholder" or getattr(tracer, "homogenized", None) is not None:
        raise GraphUseError(
            f"forward calls dgl.{name} on a graph other than the heterograph it is given, or "
            "converts it twice: gnn-codegen follows one conversion of forward's graph, made before "
            "anything else reads it. Convert the graph before calling the model, or evaluate this "
            "model with its full-graph forward.")
    options = dict(zip(("ndata", "edata", "store_type", "return_count"), args)) if name == "to_homogeneous" else {}
    options, fields = written_inputs(tracer, {**options, **kwargs}) if name == "to_homogeneous" else (kwargs, {})
    tracer.homogenized = conversion_arguments(name, () if name == "to_homogeneous" else args,  # type: ignore[attr-defined]
                                              options)
    result = graph_proxy(g.node, tracer)
    # its types are no longer hg's, and it keeps the fields forward wrote on hg (type_offsets.py)
    result.__dict__.update(converted=True, fields=fields)
    return result


def _modules() -> list[ModuleType]:
    found = [dgl]
    for path in ("transforms", "transforms.functional"):
        module: Any = dgl
        for part in path.split("."):
            module = getattr(module, part, None)
        if isinstance(module, ModuleType):
            found.append(module)
    return found


@contextlib.contextmanager
def traced_derived_graphs(tracer: fx.Tracer, user_globals: dict[str, Any], graph_proxy: type) -> Iterator[None]:
    """While inside, DGL's derived-graph functions called on a graph of `tracer` record a call
    and return a graph proxy (`graph_proxy`) of the result."""
    originals = {name: getattr(dgl, name) for name in (*DERIVED, *SAME_GRAPH, *CONVERTS) if hasattr(dgl, name)}

    def wrapped(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(g: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(g, fx.Proxy) and g.tracer is tracer and fn.__name__ in SAME_GRAPH:
                tracer.converts_blocks = True  # type: ignore[attr-defined]  # Traced.converts_blocks
                return g
            if isinstance(g, fx.Proxy) and g.tracer is tracer and fn.__name__ in CONVERTS:
                return converted(tracer, g, fn.__name__, args, kwargs, graph_proxy)
            if isinstance(g, fx.Proxy) and g.tracer is tracer:
                node = tracer.create_proxy("call_function", fn, (g, *args), kwargs).node
                return graph_proxy(node, tracer)
            return fn(g, *args, **kwargs)

        return call

    wrappers = {name: wrapped(fn) for name, fn in originals.items()}
    # (module or the user's globals, attribute or key, DGL's function, its wrapper)
    patches: list[tuple[Any, str, Any, Any]] = []
    for module in _modules():
        patches += [(module, name, fn, wrappers[name]) for name, fn in originals.items()
                    if getattr(module, name, None) is fn]
    for key, value in user_globals.items():
        patches += [(user_globals, key, fn, wrappers[name]) for name, fn in originals.items() if value is fn]
    with replaced(patches):
        yield

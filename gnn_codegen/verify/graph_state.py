"""Part of stage 8, verify: why a check failed, where the cause is state a user's layer keeps on
forward's graph between layers. OpenHGNN's SimpleHGNConv writes its attention as
`g.edata["alpha"]` on the graph it is given and, called again on the same graph by the next
layer, finds it there (`if "alpha" in g.edata.keys():`) and mixes it in. Layer-wise inference
runs every layer on blocks of its own, which never carry what an earlier layer left, so its
numbers differ; the check catches that. This pass names the layers and the field instead of
reporting a bug of gnn-codegen: it runs forward on the check's graph once more, watching the
graph data each message-passing module finds on entry and leaves on exit."""

from __future__ import annotations

from typing import Any

import dgl
import torch

from gnn_codegen.ir import Program


def _keys(graph: Any) -> set[tuple[str, str]]:
    if not isinstance(graph, dgl.DGLGraph):
        return set()
    try:
        return {("edata", k) for k in graph.edata.keys()} | {("ndata", k) for k in graph.ndata.keys()}
    except Exception:  # a heterograph's ndata keys by type: not watched
        return set()


def state_between_layers(model: torch.nn.Module, program: Program, run: Any) -> str | None:
    """The refusal for a field that one message-passing module of `program` leaves on its graph
    and a later one finds on the same graph, while `run()` runs forward; None where none does."""
    paths = {program.module_path(op): op for op in program.ops
             if op.kind == "mp" and not (op.mp is not None and op.mp.inline)}
    seen: list[tuple[str, int, set[tuple[str, str]]]] = []  # (module path, id(graph), fields it left)
    found: list[tuple[str, str, tuple[str, str]]] = []
    handles = []

    def before(path: str) -> Any:
        def hook(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
            graph = args[0] if args else None
            keys = _keys(graph)
            for earlier, graph_id, left in seen:
                for key in sorted(left & keys):
                    if graph_id == id(graph) and not found:
                        found.append((earlier, path, key))
            module.__dict__["_gnn_codegen_keys"] = (id(graph), keys)
        return hook

    def after(path: str) -> Any:
        def hook(module: torch.nn.Module, args: tuple[Any, ...], output: Any) -> None:
            graph_id, keys = module.__dict__.pop("_gnn_codegen_keys", (None, set()))
            graph = args[0] if args else None
            seen.append((path, graph_id, _keys(graph) - keys))
        return hook

    for path in paths:
        module = model.get_submodule(path)
        handles += [module.register_forward_pre_hook(before(path)), module.register_forward_hook(after(path))]
    try:
        run()
    except Exception:  # forward ran once already; a second run that fails explains nothing
        return None
    finally:
        for handle in handles:
            handle.remove()
    if not found:
        return None
    earlier, later, (view, key) = found[0]
    op = paths[later]
    cls = type(model.get_submodule(earlier)).__name__
    return (
        f"{op.location or 'forward'}: self.{earlier} ({cls}) leaves g.{view}[{key!r}] on the graph forward "
        f"gives it, and self.{later} finds it there, on the same graph: state kept on forward's graph "
        "between layers, which layer-wise inference cannot carry (each layer runs on blocks of its "
        "own, which hold nothing an earlier layer left), so the generated code would give other "
        "numbers; nor does it follow a layer's per-edge result handed to the next as an argument. "
        "Evaluate this model with its full-graph forward, or use a variant whose layers write on "
        "their graph only inside `with g.local_scope():` (and so keep nothing between layers)."
    )

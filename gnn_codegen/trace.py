"""Stage 2, trace: the model instance into a torch.fx GraphModule whose message-passing modules
are leaves and whose graph argument is one placeholder, whatever the forward's style."""

from __future__ import annotations

import inspect
import keyword
import linecache
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.errors import DataDependentControlFlowError, TraceFailedError
from gnn_codegen.known_modules import is_message_passing
from gnn_codegen.rowwise import is_rowwise_module

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

GRAPH_PARAM_NAMES = ("g", "graph", "blocks", "mfgs", "block", "mfg", "graphs", "subgraphs")


@dataclass(frozen=True)
class Traced:
    model: torch.nn.Module  # the user's instance (its containers keep their types, unlike fx's copy)
    graph_module: fx.GraphModule
    graph_arg: str  # name of forward's graph (or list-of-blocks) parameter
    inputs: tuple[str, ...]  # forward's tensor parameters after the graph, in order
    blocks_style: bool  # forward indexes / iterates / measures its graph argument
    num_blocks: int  # how many blocks a blocks-style forward consumes


class _BlockListProxy(fx.Proxy):
    """The graph placeholder, which also behaves as a list of `num_blocks` blocks, so
    `zip(self.layers, blocks)`, `blocks[i]`, `blocks[-1]` and `len(blocks)` trace to the one graph.
    Each position is its own proxy object, so `block is blocks[-1]` stays true only for the last."""

    num_blocks = 1
    used_as_list = False

    def _as_list(self) -> list[fx.Proxy]:
        type(self).used_as_list = True
        if "_items" not in self.__dict__:
            self.__dict__["_items"] = [fx.Proxy(self.node, self.tracer) for _ in range(type(self).num_blocks)]
        return list(self.__dict__["_items"])

    def __iter__(self) -> Any:
        return iter(self._as_list())

    def __len__(self) -> int:
        return len(self._as_list())

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, slice)):
            return self._as_list()[index]
        return super().__getitem__(index)


class _Tracer(fx.Tracer):
    def __init__(self, graph_arg: str, forced_leaves: frozenset[str], forced_mp: frozenset[str]):
        super().__init__()
        self.graph_arg = graph_arg
        self.forced_leaves = forced_leaves
        self.forced_mp = forced_mp

    def create_node(self, *args: Any, **kwargs: Any) -> fx.Node:
        """Record where in the user's code each node was created, in the format of fx's
        record_stack_traces, without it: symbolizing fx's tracebacks imports torch._dynamo,
        which doubled the CLI's run time."""
        node = super().create_node(*args, **kwargs)
        frames = []
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith(_TORCH_DIR):
                code = linecache.getline(filename, frame.f_lineno).strip()
                frames.append(f'  File "{filename}", line {frame.f_lineno}, in {frame.f_code.co_name}\n    {code}')
            frame = frame.f_back
        node.stack_trace = "\n".join(reversed(frames))
        return node

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if type(m).__name__ in self.forced_leaves or is_message_passing(m, self.forced_mp):
            return True
        if type(m) is torch.nn.Sequential and len(m) and is_rowwise_module(m):
            return True  # keep `self.head(h)` as the user wrote it
        if type(m) is dglnn.JumpingKnowledge:
            return True
        return super().is_leaf_module(m, module_qualified_name)

    def proxy(self, node: fx.Node) -> fx.Proxy:
        if node.op == "placeholder" and node.target == self.graph_arg:
            return _BlockListProxy(node, self)
        return super().proxy(node)


def _forward_params(model: torch.nn.Module) -> list[inspect.Parameter]:
    params = list(inspect.signature(type(model).forward).parameters.values())[1:]
    if not params:
        raise TraceFailedError(
            f"{type(model).__name__}.forward takes no arguments; it must take the graph (or a list of "
            "blocks) first, then the node features, e.g. `def forward(self, g, x)`."
        )
    return params


def _count_mp_modules(model: torch.nn.Module, forced_mp: frozenset[str]) -> int:
    count = 0
    for _, m in model.named_modules():
        if is_message_passing(m, forced_mp):
            count += 1
    return max(count, 1)


def _user_location(tb: Any, path: Path) -> str | None:
    for frame in reversed(traceback.extract_tb(tb)):
        if Path(frame.filename).resolve() == path.resolve():
            return f"{path}:{frame.lineno} (`{(frame.line or '').strip()}`)"
    return None


def _mp_depth(gm: fx.GraphModule, forced_mp: frozenset[str]) -> int:
    depth: dict[str, int] = {}
    modules = dict(gm.named_modules())
    deepest = 0
    for node in gm.graph.nodes:
        d = max((depth[n.name] for n in node.all_input_nodes), default=0)
        if node.op == "call_module" and is_message_passing(modules[str(node.target)], forced_mp):
            d += 1
        depth[node.name] = d
        deepest = max(deepest, d)
    return deepest


def _trace_once(model: torch.nn.Module, graph_arg: str, num_blocks: int, path: Path,
                leaves: frozenset[str], forced_mp: frozenset[str]) -> tuple[fx.GraphModule, bool]:
    proxy_cls = type("_Blocks", (_BlockListProxy,), {"num_blocks": num_blocks, "used_as_list": False})
    tracer = _Tracer(graph_arg, leaves, forced_mp)
    tracer.proxy = lambda node: (  # type: ignore[method-assign]
        proxy_cls(node, tracer) if node.op == "placeholder" and node.target == graph_arg
        else fx.Proxy(node, tracer)
    )
    name = type(model).__name__
    # Parameters with defaults (`edge_weight=None`, `return_attention=False`) are traced at their
    # default value, like Python would call forward(g, x).
    defaults = {
        p.name: p.default
        for p in inspect.signature(type(model).forward).parameters.values()
        if p.default is not inspect.Parameter.empty
    }
    try:
        graph = tracer.trace(model, concrete_args=defaults or None)
    except fx.proxy.TraceError as exc:
        where = _user_location(exc.__traceback__, path) or f"{name}.forward"
        if "control flow" in str(exc) and not _raised_in_user_file(exc.__traceback__, path):
            raise TraceFailedError(
                f"{where}: this line calls library code that inspects the graph or a tensor while "
                "tracing (graph changes such as dgl.add_self_loop(g) do this). forward may only "
                "call message-passing modules on the graph and row-wise tensor operations: change "
                "the graph before calling the model (and pass the changed graph to `inference`)."
            ) from None
        if "control flow" in str(exc):
            raise DataDependentControlFlowError(
                f"{where}: forward branches or loops on a tensor's value, which depends on the data "
                "and so cannot become one fixed layer-wise loop. Compute the condition outside the "
                "model (a constructor argument or a flag), or mark the module that holds it as a leaf "
                "with --leaf NAME if it only mixes features of the same node."
            ) from None
        raise TraceFailedError(f"{where}: torch.fx could not trace forward: {exc}.") from None
    except Exception as exc:
        where = _user_location(exc.__traceback__, path) or f"{name}.forward"
        raise TraceFailedError(
            f"{where}: tracing forward with torch.fx failed with {type(exc).__name__}: {exc}. "
            "forward may only call message-passing modules on the graph and tensor operations on "
            "features; graph mutation, graph data access (g.ndata, g.in_degrees()) and Python code "
            "that inspects tensor values cannot be turned into layer-wise inference. Message "
            "passing written inline (g.update_all, g.local_scope()) works when moved into its own "
            "nn.Module whose forward takes (graph, features)."
        ) from None
    try:
        return fx.GraphModule(model, graph, name), proxy_cls.used_as_list
    except SyntaxError:
        bad = [n.target for n in graph.nodes if n.op in ("call_module", "get_attr")
               and any(keyword.iskeyword(part) for part in str(n.target).split("."))]
        raise TraceFailedError(
            f"{name}: submodule or attribute name {bad[0] if bad else '?'} contains a Python keyword "
            "(e.g. a ModuleDict key 'in' or 'class'), which generated code cannot spell as an "
            "attribute. Rename the key."
        ) from None


def _raised_in_user_file(tb: Any, path: Path) -> bool:
    frames = traceback.extract_tb(tb)
    user = [i for i, f in enumerate(frames) if Path(f.filename).resolve() == path.resolve()]
    # fx's own frames sit on top of the user's when the user's code branches on a proxy
    return bool(user) and all("torch/fx" in f.filename for f in frames[user[-1] + 1:])


def trace(model: torch.nn.Module, path: Path, leaves: frozenset[str] = frozenset(),
          forced_mp: frozenset[str] = frozenset()) -> Traced:
    model.eval()  # `self.training` and Dropout must read as inference while tracing
    params = _forward_params(model)
    graph_arg = params[0].name
    variadic = [p.name for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if variadic:
        raise TraceFailedError(
            f"{type(model).__name__}.forward takes *{variadic[0]}; name every input instead "
            "(e.g. `def forward(self, g, x)`) so the generated inference can take the same ones."
        )
    inputs = tuple(p.name for p in params[1:] if p.default is inspect.Parameter.empty)
    num_blocks = _count_mp_modules(model, forced_mp)
    try:
        gm, blocks_style = _trace_once(model, graph_arg, num_blocks, path, leaves, forced_mp)
    except TraceFailedError as first_error:
        # A blocks-style forward may consume fewer blocks than there are message-passing modules
        # (one is unused, or two share a depth): try the other counts before giving up.
        for other in range(1, num_blocks + 1):
            try:
                gm, blocks_style = _trace_once(model, graph_arg, other, path, leaves, forced_mp)
            except TraceFailedError:
                continue
            if _mp_depth(gm, forced_mp) == other:
                num_blocks = other
                break
        else:
            raise first_error
    depth = _mp_depth(gm, forced_mp)
    if blocks_style and depth != num_blocks and depth > 0:
        # Two convolutions at one depth (or one conv called per block): the forward consumes
        # `depth` blocks, not one per module, so trace again with that many.
        num_blocks = depth
        gm, blocks_style = _trace_once(model, graph_arg, num_blocks, path, leaves, forced_mp)
    return Traced(model, gm, graph_arg, inputs, blocks_style, num_blocks if blocks_style else 1)

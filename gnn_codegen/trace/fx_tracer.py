"""Stage 2, trace, the tracer: torch.fx's Tracer keeping message-passing modules (and the
user's own) as leaves, and what it reads of the model while it traces (its depth of message
passing, the user's globals and where a failure was raised in the user's file)."""

from __future__ import annotations

import contextlib
import linecache
import operator
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.trace.graph_lineage import is_graph_node
from gnn_codegen.trace.edge_weight_norm import is_edge_weight_norm
from gnn_codegen.analysis.shape_keeping import through_shape_keeping
from gnn_codegen.trace.static_decisions import concrete, decide
from gnn_codegen.trace.static_shapes import decided
from gnn_codegen.trace.graph_data import graph_data_read
from gnn_codegen.trace.inline_mp import update_all
from gnn_codegen.analysis.input_specs import declared_width
from gnn_codegen.analysis.known_modules import is_message_passing
from gnn_codegen.analysis.rowwise import is_rowwise_module


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


# elementwise functions and methods of one tensor that keep its shape (and so its width), and
# modules that do
class _Tracer(fx.Tracer):
    def __init__(self, graph_arg: str, forced_leaves: frozenset[str], forced_mp: frozenset[str],
                 through: frozenset[type] = frozenset(), widths: dict[str, tuple[int, ...]] | None = None):
        super().__init__()
        self.graph_arg = graph_arg
        self.widths = widths or {}  # --feat-dims, for the examples static decisions are taken on
        self.forced_leaves = forced_leaves
        self.forced_mp = forced_mp
        self.through = through

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

    def to_bool(self, obj: fx.Proxy) -> bool:
        """`if (graph.in_degrees() == 0).any(): raise DGLError(...)`, DGL's check in the modules
        traced into: decided as no such nodes, and checked on the whole graph when inference is
        called (render.py), where forward would raise."""
        graph = _zero_in_degree_test(obj.node, self.graph_arg)
        if graph is not None:
            self.zero_in_degree_checks = [*getattr(self, "zero_in_degree_checks", []), graph]
            return False
        known = decided(obj.node, self.root)  # ChebConv's `if lambda_max.dim() == 1:`
        if known is not None:
            return known
        taken = decide(obj.node, self, self.graph_arg, self.widths)  # `if h.shape[-1] == self.out_dim:`
        if taken is not None:
            return taken
        return super().to_bool(obj)

    def iter(self, obj: fx.Proxy) -> Any:
        """`for d in h.shape:` (fx itself follows `n, d = h.shape`): item by item, as many as
        len() works out (MetadataProxy)."""
        try:
            return iter([obj[i] for i in range(len(obj))])
        except RuntimeError:  # no shape: fx's refusal
            return super().iter(obj)

    def concrete(self, node: fx.Node, kind: type) -> Any:
        """`len(h.shape)`, `int(h.shape[1])` (MetadataProxy): worked out like a test."""
        return concrete(node, self, self.graph_arg, self.widths, kind)

    def call_module(self, m: torch.nn.Module, forward: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if type(m) in self.through:  # its inside is traced: remember the width it declares
            features = args[1] if len(args) > 1 else None
            width = declared_width(m)
            if isinstance(features, fx.Proxy) and width:
                # forward's parameter, or its graph's data (`g.ndata["x"]`, an input once lifted),
                # or either through activations that keep its shape (`layer(g, F.relu(x))`)
                node = through_shape_keeping(features.node, self.root)
                read = graph_data_read(node, self.graph_arg)
                which = node.target if node.op == "placeholder" else read
                if which is not None:
                    self.declared_widths = {**getattr(self, "declared_widths", {}), which: width}
                else:
                    self.candidate_widths = (*getattr(self, "candidate_widths", ()), width)
        if is_edge_weight_norm(m):  # also one DGL's modules make in forward, not the model's
            return forward(*args, **kwargs)  # records one call (edge_weight_norm.py)
        return super().call_module(m, forward, args, kwargs)

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if type(m) in self.through:  # a user's message-passing module, traced into (pipeline.py)
            return False
        if type(m).__name__ in self.forced_leaves or is_message_passing(m, self.forced_mp):
            return True
        if type(m) is torch.nn.Sequential and len(m) and is_rowwise_module(m):
            return True  # keep `self.head(h)` as the user wrote it
        if type(m) in (dglnn.JumpingKnowledge, dglnn.TypedLinear):  # row-wise, one call (rowwise.py)
            return True
        return super().is_leaf_module(m, module_qualified_name)


@contextlib.contextmanager
def _attributes_kept(model: torch.nn.Module) -> Any:
    """Plain attributes forward sets while traced (SGConv(cached=True) keeps its propagated
    features in self._cached_h) are restored after: no tracing proxy is left on the model."""
    containers = ("_modules", "_parameters", "_buffers")
    saved = [(module, {k: v for k, v in vars(module).items() if k not in containers}) for module in model.modules()]
    try:
        yield
    finally:
        for module, attributes in saved:
            for key in [k for k in vars(module) if k not in attributes and k not in containers]:
                del vars(module)[key]
            vars(module).update(attributes)


def _zero_in_degree_test(node: fx.Node, graph_arg: str) -> str | None:
    """The graph's node name when `node` is `(graph.in_degrees() == 0).any()`, else None."""
    if not (node.op == "call_method" and node.target == "any" and len(node.args) == 1 and not node.kwargs):
        return None
    test = node.args[0]
    if not (isinstance(test, fx.Node) and test.op == "call_function" and test.target is operator.eq
            and len(test.args) == 2 and test.args[1] == 0 and isinstance(test.args[0], fx.Node)):
        return None
    degrees = test.args[0]
    if not (degrees.op == "call_method" and degrees.target == "in_degrees" and len(degrees.args) == 1
            and is_graph_node(degrees.args[0], graph_arg)):
        return None
    return degrees.args[0].name


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
        elif node.op == "call_function" and node.target is update_all:  # written inline
            d += 1
        depth[node.name] = d
        deepest = max(deepest, d)
    return deepest


def _user_globals(model: torch.nn.Module) -> list[dict[str, Any]]:
    """The globals of forward's file and of the files of the user's modules it may call."""
    found = [type(model).forward.__globals__]
    for m in model.modules():
        namespace = getattr(type(m).forward, "__globals__", None)
        if namespace is not None and not type(m).__module__.startswith(("torch.", "dgl.")) \
                and all(namespace is not f for f in found):
            found.append(namespace)
    return found


def _raised_in_user_file(tb: Any, path: Path) -> bool:
    frames = traceback.extract_tb(tb)
    user = [i for i, f in enumerate(frames) if Path(f.filename).resolve() == path.resolve()]
    # fx's own frames (and the tracer's to_bool here) sit on top of the user's when the user's
    # code branches on a proxy
    return bool(user) and all("torch/fx" in f.filename or Path(f.filename).resolve() == Path(__file__).resolve()
                              for f in frames[user[-1] + 1:])

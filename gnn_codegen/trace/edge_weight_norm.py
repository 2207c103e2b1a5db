"""DGL's EdgeWeightNorm (`norm(g, w)`, and inside APPNPConv, SGConv, TAGConv and GCN2Conv given
an edge_weight): a value of the graph and its edge weights, computed once on the full graph.

It divides each edge's weight by sums of weights over its source's out-edges and its
destination's in-edges. A 1-hop block holds every in-edge of its destinations but not every
out-edge of its sources, so on a block the result is wrong; on the full graph it is a tensor of
one number per edge, which the generated code computes at the top of inference
(`w_norm = self.norm(g, w)`) and reads per block by edge ID, like an edge input. DGL's own forward
also tests the weights' values (`th.any(w <= 0).item()`, refusing non-positive ones with
norm="both"), which a trace cannot follow: while forward is traced, EdgeWeightNorm's forward called
on the traced graph records one call of `normalized_edge_weight` instead, and the generated code
calls DGL's module, which makes the same test on the real weights.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import dgl.nn as dglnn
import torch
import torch.fx as fx

from gnn_codegen.trace.patching import replaced

# the target of its graph_value op (ir.Op): a tensor of one number per edge
EDGE_WEIGHT_NORM = "EdgeWeightNorm"
# node.meta key: the model's submodule the call was made on (`norm` for self.norm), when it is one
MODULE_PATH = "gnn_codegen_edge_weight_norm"


def normalized_edge_weight(graph: Any, edge_weight: torch.Tensor, norm: str = "both", eps: float = 0.0) -> torch.Tensor:
    """The traced program's stand-in for `EdgeWeightNorm(norm, eps)(graph, edge_weight)`."""
    return dglnn.EdgeWeightNorm(norm=norm, eps=eps)(graph, edge_weight)


def is_edge_weight_norm(module: torch.nn.Module) -> bool:
    return type(module) is dglnn.EdgeWeightNorm


@contextlib.contextmanager
def traced_edge_weight_norms(tracer: fx.Tracer) -> Iterator[None]:
    """While inside, EdgeWeightNorm's forward on a graph of `tracer` records a call of
    normalized_edge_weight (with the module's path in the model, when it is the model's own)."""
    original = dglnn.EdgeWeightNorm.forward

    def forward(self: Any, graph: Any, edge_weight: Any) -> Any:
        if not (isinstance(graph, fx.Proxy) and graph.tracer is tracer):
            return original(self, graph, edge_weight)
        proxy = tracer.create_proxy("call_function", normalized_edge_weight, (graph, edge_weight),
                                    {"norm": self._norm, "eps": self._eps})
        # tracer.root is the model being traced (set by trace, after this context is entered)
        path = next((p for p, m in tracer.root.named_modules() if m is self), None)
        if path:
            proxy.node.meta[MODULE_PATH] = path
        return proxy

    with replaced([(dglnn.EdgeWeightNorm, "forward", original, forward)]):
        yield

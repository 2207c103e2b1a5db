"""The graph argument while forward is traced (trace.py): one placeholder that also behaves as a
list of blocks, and whose uses in Python that a layer-wise loop cannot follow are refused on
the spot, naming the construct (`for ntype in g.ntypes`, `"w" in g.edata`, `g.ndata["h"] = h`,
`g.update_all(...)` written in forward) instead of surfacing as torch.fx's own errors."""

from __future__ import annotations

from typing import Any, NoReturn

import torch.fx as fx

from gnn_codegen.errors import GraphUseError

_TYPE_LISTS = frozenset({"ntypes", "etypes", "canonical_etypes", "srctypes", "dsttypes"})
_DATA_VIEWS = frozenset({"ndata", "edata", "srcdata", "dstdata", "nodes", "edges", "srcnodes", "dstnodes"})
# Graph methods that are message passing written inline in forward.
_INLINE = frozenset({
    "update_all", "apply_edges", "multi_update_all", "send_and_recv", "pull", "push", "apply_nodes",
    "local_scope", "local_var", "prop_nodes", "prop_edges", "filter_nodes", "filter_edges",
})
_HETERO = (
    "heterogeneous graphs (several node or edge types) are not supported yet: convert the graph "
    "with dgl.to_homogeneous and write the layers as homogeneous convolutions (RelGraphConv with "
    "edge types for relation-specific weights), or evaluate this model with its full-graph forward."
)
_INLINE_WAY_OUT = (
    "message passing written inline in forward is not supported yet: move it into an nn.Module "
    "whose forward takes (graph, features) and call that module in forward (gnn-codegen proves "
    "such a module exact on blocks), or evaluate this model with its full-graph forward."
)


def _refuse(what: str, why: str) -> NoReturn:
    raise GraphUseError(f"{what}: {why}")


class GraphAttribute(fx.proxy.Attribute):
    """`g.<name>` while tracing: what forward may do with it (call a count, index its data) is
    recorded as usual; deciding in Python on it is refused."""

    def _what(self) -> str:
        return f"{_graph_name(self.root)}.{self.attr}"

    def _decides(self, how: str) -> NoReturn:
        if self.attr in _TYPE_LISTS:
            _refuse(f"forward {how} {self._what()} (the graph's types) in Python", _HETERO)
        if self.attr in _DATA_VIEWS:
            _refuse(
                f"forward {how} {self._what()} (which data the graph carries) in Python",
                "layer-wise inference cannot decide this once for every graph. Pass the data "
                "forward reads as an argument of forward (def forward(self, g, x, w=None)), "
                "or evaluate this model with its full-graph forward.",
            )
        _refuse(f"forward {how} {self._what()} in Python",
                "a layer-wise loop cannot follow a decision on the graph's structure; compute it "
                "outside the model, or evaluate this model with its full-graph forward.")

    def __iter__(self) -> Any:
        self._decides("loops over")

    def __contains__(self, item: Any) -> bool:
        self._decides(f"tests {item!r} in" if isinstance(item, str) else "tests membership in")

    def __bool__(self) -> bool:
        self._decides("branches on")

    def __len__(self) -> int:
        self._decides("takes the length of")

    def __setitem__(self, key: Any, value: Any) -> None:
        _refuse(f"forward writes graph data ({self._what()}[{key!r}] = ...)", _INLINE_WAY_OUT)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.attr in _INLINE:
            _refuse(f"forward calls {self._what()}({'...' if args or kwargs else ''})", _INLINE_WAY_OUT)
        return super().__call__(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if self.attr in _DATA_VIEWS and name in ("update", "pop", "clear", "setdefault"):
            _refuse(f"forward changes graph data ({self._what()}.{name}(...))", _INLINE_WAY_OUT)
        return super().__getattr__(name)


def _graph_name(proxy: fx.Proxy) -> str:
    return str(proxy.node.target) if proxy.node.op == "placeholder" else proxy.node.name


class BlockListProxy(fx.Proxy):
    """The graph placeholder, which also behaves as a list of `num_blocks` blocks, so
    `zip(self.layers, blocks)`, `blocks[i]`, `blocks[-1]` and `len(blocks)` trace to the one graph.
    Each position is its own proxy object, so `block is blocks[-1]` stays true only for the last."""

    num_blocks = 1
    used_as_list = False

    def _as_list(self) -> list[fx.Proxy]:
        type(self).used_as_list = True
        if "_items" not in self.__dict__:
            self.__dict__["_items"] = [BlockProxy(self.node, self.tracer) for _ in range(type(self).num_blocks)]
        return list(self.__dict__["_items"])

    def __iter__(self) -> Any:
        return iter(self._as_list())

    def __len__(self) -> int:
        return len(self._as_list())

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, slice)):
            return self._as_list()[index]
        return super().__getitem__(index)

    def __getattr__(self, name: str) -> Any:
        return GraphAttribute(self, name)

    def __setitem__(self, key: Any, value: Any) -> None:
        _refuse(f"forward assigns {_graph_name(self)}[{key!r}]", _INLINE_WAY_OUT)


class BlockProxy(fx.Proxy):
    """One block of the list: the same placeholder, its attributes watched the same way."""

    def __getattr__(self, name: str) -> Any:
        return GraphAttribute(self, name)

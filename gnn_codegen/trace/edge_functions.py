"""Part of stage 2, trace: `g.apply_edges(...)` written inline in forward, with a built-in
function (`fn.u_dot_v("h", "h", "score")`) or a Python edge function, as benchmarking-gnns'
MoNet writes one:

    g.ndata["deg"] = g.in_degrees()
    g.apply_edges(self.compute_pseudo)      # def compute_pseudo(self, edges):
    pseudo = g.edata["pseudo"]              #     srcs = 1 / torch.sqrt(edges.src["deg"] + 1) ...

A Python edge function reads its edges only through `edges.src[k]`, `edges.dst[k]` and
`edges.data[k]`: each edge's source row, destination row and own row. So it is called once,
while tracing, on symbolic edges whose `src[k]` is the source rows gathered per edge (an inline
`apply_edges(fn.copy_u(k, k))`, a message-passing op that reads the block's source rows at its
edges), `dst[k]` the same of destination rows (`fn.copy_v`), `data[k]` the edge field; what it
computes from them is ordinary ops on edge rows, which the row-wise check then judges like any
other (a function that mixes edges, `edges.src["h"].sum(0)`, is refused there). Its result's
fields become edge data of the traced graph's frame. On a 1-hop block every in-edge of a batch's
destination nodes is there with both ends' rows, so each edge's value is exact.

What such a function reads beyond that (`edges.batch_size()`, `edges.edges()`) is refused,
naming the call."""

from __future__ import annotations

from typing import Any, Callable, NoReturn

_READS = {"src": "copy_u", "dst": "copy_v"}


class EdgeFieldError(Exception):
    """An edge function read something of its edges other than their rows."""


class _EndRows:
    """`edges.src` / `edges.dst` / `edges.data` of the symbolic edges: each key a traced value."""

    def __init__(self, read: Callable[[str], Any], what: str):
        self._read, self._what = read, what

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, str):
            raise EdgeFieldError(f"edges.{self._what}[{key!r}]")
        return self._read(key)

    def __contains__(self, key: Any) -> NoReturn:
        raise EdgeFieldError(f"{key!r} in edges.{self._what}")


class SymbolicEdges:
    """What a Python edge function is called with while forward is traced."""

    def __init__(self, gathered: Callable[[str, str], Any], edge_field: Callable[[str], Any]):
        self.src = _EndRows(lambda key: gathered("src", key), "src")
        self.dst = _EndRows(lambda key: gathered("dst", key), "dst")
        self.data = _EndRows(edge_field, "data")

    def __getattr__(self, name: str) -> NoReturn:
        raise EdgeFieldError(f"edges.{name}")


def gather_message(end: str, key: str) -> tuple[str, ...]:
    """The built-in message that gathers an end's field per edge, as inline_mp spells one."""
    return (_READS[end], key, key)


def follow(func: Any, gathered: Callable[[str, str], Any], edge_field: Callable[[str], Any]) -> dict[str, Any]:
    """The fields a Python edge function returns, computed on symbolic edges (raises
    EdgeFieldError naming what else it read, TypeError where it returns no dict)."""
    result = func(SymbolicEdges(gathered, edge_field))
    if not isinstance(result, dict) or not all(isinstance(k, str) for k in result):
        raise TypeError(f"an edge function returns a dict of fields, not {type(result).__name__}")
    return result

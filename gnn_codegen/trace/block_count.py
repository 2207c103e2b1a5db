"""Stage 2, trace: how many blocks a blocks-style forward is traced with, when forward's own
layers do not fix it. The tracer tries counts until one traces (trace.py); this module checks that
the count found is the model's and not the input's, and refuses to guess when it is the input's."""

from __future__ import annotations

import linecache
from pathlib import Path
from typing import Callable

from gnn_codegen.errors import BlockCountError, OptionsError

# what a trace with a given block count gives: (its message-passing depth, where forward measured
# its list of blocks), or None when forward cannot be traced with that many blocks
TraceWith = Callable[[int], "tuple[int, tuple[tuple[str, int], ...]] | None"]


def check_depth_is_the_models(trace_with: TraceWith, num_blocks: int, depth: int, path: Path,
                              graph_arg: str) -> None:
    """A forward that zips its layers with its blocks, or indexes its layers by block, runs as
    deep with one block more (zip stops at the layers) or fails (an index past the layers). One
    that runs deeper loops over whatever blocks it is given (`for i in range(len(blocks))` with
    weightless propagation, or one shared conv): its depth is the caller's choice, and the
    generated inference would compute forward with `num_blocks` blocks, silently not the user's
    call. So: refused, saying where forward measures its blocks and how to give the count."""
    deeper = trace_with(num_blocks + 1)
    if deeper is None or deeper[0] <= depth:
        return
    where = _measured_at(deeper[1], path)
    raise BlockCountError(
        f"{where}forward runs as many hops of message passing as it is given blocks (traced with "
        f"{num_blocks} block{'s' if num_blocks != 1 else ''} in {graph_arg} it runs {depth} hop"
        f"{'s' if depth != 1 else ''}, with {num_blocks + 1} it runs {deeper[0]}): the depth is a property of "
        "the call, not of the model, and gnn-codegen does not guess it. Give the number of blocks you call "
        "forward with in training, e.g. --blocks 2: the generated inference then computes forward with 2 "
        "blocks, each the whole graph (its docstring says so)."
    )


def check_blocks_option(blocks: int | None, blocks_style: bool, graph_arg: str) -> None:
    """--blocks N only means something for a forward that takes a list of blocks."""
    if blocks is None:
        return
    if blocks < 1:
        raise OptionsError(f"--blocks {blocks}: give the number of blocks forward takes, 1 or more.")
    if not blocks_style:
        raise OptionsError(
            f"--blocks {blocks}: forward's {graph_arg} is one graph, not a list of blocks (forward neither "
            "indexes, iterates nor measures it); leave --blocks out."
        )


def _measured_at(measures: tuple[tuple[str, int], ...], path: Path) -> str:
    """`file:line (`code`): ` of the first place forward measured its blocks, the user's file first."""
    if not measures:
        return ""
    mine = [m for m in measures if Path(m[0]).resolve() == path.resolve()]
    filename, line = (mine or list(measures))[0]
    code = linecache.getline(filename, line).strip()
    shown = path if mine else filename
    return f"{shown}:{line} (`{code}`): "

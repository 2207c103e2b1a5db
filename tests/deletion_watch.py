"""Watches a generated `inference` run line by line, to prove that every `del` in it frees what
it names (tests/test_equivalence.py, tests/test_differential.py)."""

from __future__ import annotations

import dis
import itertools
import sys
from typing import Any, Callable

import torch


def views_kept_alive(inference: Callable[..., Any], *args: Any, **kwargs: Any) -> list[str]:
    """Runs `inference(*args, **kwargs)` (a bound generated method) and returns "v keeps t" for
    each local tensor t that was deleted while a local v made after it still shared its memory:
    on the CPU `t[start:end].to(device)` is a view of t, and `t[input_nodes]` is t itself when
    sources are read in place, so a loop's last batch can keep all of t alive after `del t`.
    (The tensor a view was made from may of course outlive the view.)"""
    code = inference.__func__.__wrapped__.__code__  # under @torch.no_grad()
    born: dict[str, tuple[int, int]] = {}  # local -> (the memory it shares, when it got it)
    kept: list[str] = []
    ticks = itertools.count()
    # a `del` that black splits over lines runs one line per name: judge it once it is done
    instructions: dict[int, set[str]] = {}
    for instruction in dis.get_instructions(code):
        if instruction.positions and instruction.positions.lineno is not None:
            instructions.setdefault(instruction.positions.lineno, set()).add(instruction.opname)
    inside_del = {line for line, names in instructions.items() if names <= {"DELETE_FAST", "NOP"}}

    def trace_lines(frame, event, arg):
        if event == "line" and frame.f_lineno in inside_del:
            return trace_lines
        now = {
            name: value.untyped_storage().data_ptr()
            for name, value in frame.f_locals.items()
            if isinstance(value, torch.Tensor) and value.untyped_storage().nbytes() > 0
        }
        tick = next(ticks)
        for name in [n for n in born if n not in now]:  # deleted since the last line
            memory, since = born.pop(name)
            kept.extend(
                f"{other} keeps {name}" for other, (m, t) in born.items()
                if m == memory and t > since and other in now
            )
        for name, memory in now.items():
            if born.get(name, (None,))[0] != memory:
                born[name] = (memory, tick)
        return trace_lines

    def trace_calls(frame, event, arg):
        return trace_lines if frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(trace_calls)
    try:
        inference(*args, **kwargs)
    finally:
        sys.settrace(previous)
    if next(ticks) == 0:
        raise AssertionError("the tracer never saw inference run")
    return kept

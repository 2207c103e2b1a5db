"""Peak anonymous memory of a call (RssAnon, sampled every half millisecond on a thread): what
the out-of-core tests measure in a process of their own. Memory-mapped files count as file
pages, not anonymous ones, so a call that keeps its results in files shows only its batches."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable


def rss_anon() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("RssAnon:"))


def peak_during(call: Callable[[], Any]) -> tuple[int, Any]:
    """(the most anonymous memory above what was there before, during call(); its result)."""
    peak: list[int] = [rss_anon()]
    done: list[int] = []

    def sample() -> None:
        while not done:
            peak.append(rss_anon())
            time.sleep(0.0005)

    thread = threading.Thread(target=sample)
    base = rss_anon()
    thread.start()
    try:
        result = call()
    finally:
        done.append(1)
        thread.join()
    return max(peak) - base, result


def bytes_in_files(runtime: type) -> list[int]:
    """A list that a generated runtime class's _in_file appends the bytes of each file it makes
    to, from now on: what a call keeps out of core."""
    import numpy as np

    stored: list[int] = []
    in_file = runtime._in_file  # type: ignore[attr-defined]

    def recording(self: Any, shape: tuple[int, ...], like: Any) -> Any:
        stored.append(int(np.prod(shape)) * like.element_size())
        return in_file(self, shape, like)

    runtime._in_file = recording  # type: ignore[attr-defined]
    return stored


def report_out_of_core(run: Callable[[Any], Any], storage: str, stored: list[int]) -> None:
    """Prints, as a JSON line, the bytes run(storage) keeps in files (`stored`, bytes_in_files'),
    and the peak anonymous memory of run(storage) and of run(None), in memory."""
    import json

    stored.clear()
    out_of_core, result = peak_during(lambda: run(storage))
    bytes_stored = sum(stored)
    del result
    in_memory, _ = peak_during(lambda: run(None))
    print(json.dumps({"stored": bytes_stored, "out_of_core": out_of_core, "in_memory": in_memory}))

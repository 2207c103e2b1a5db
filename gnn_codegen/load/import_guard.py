"""Part of stage 1, load: runs the user's code (importing the file, building the model) so that
it cannot end gnn-codegen silently or keep it silent. os._exit, which no `except` can catch and
which skips every cleanup, raises ExitCalled instead while the user's code runs; and an import
that takes a while gets one line on stderr saying what gnn-codegen is waiting for."""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Iterator, NoReturn

# Seconds an import may take before gnn-codegen says that it is still importing the file (a
# model file rarely needs one; a script that loads data or trains at import takes minutes).
SLOW_IMPORT_SECONDS = 5.0


class ExitCalled(BaseException):
    """The user's code called os._exit(code). A BaseException, like SystemExit, so that the
    user's own `except Exception` does not swallow it."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def exit_call(exc: SystemExit | ExitCalled) -> str:
    """How the user's code ended: `os._exit(0)`, `sys.exit(1)`."""
    if isinstance(exc, ExitCalled):
        return f"os._exit({exc.code})"
    return "sys.exit()" if exc.code is None else f"sys.exit({exc.code!r})"


@contextlib.contextmanager
def exit_raises() -> Iterator[None]:
    """os._exit raises ExitCalled while the block runs, in this process and this thread only:
    a child the user's code forks, or a thread it starts, still ends as it asks to."""
    real = os._exit
    pid, thread = os.getpid(), threading.get_ident()

    def _exit(code: int) -> NoReturn:
        if os.getpid() != pid or threading.get_ident() != thread:
            real(code)
        raise ExitCalled(code)

    os._exit = _exit  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


@contextlib.contextmanager
def notice_when_slow(path: Path) -> Iterator[None]:
    """After SLOW_IMPORT_SECONDS, one line on stderr: the file is still being imported, at which
    of its lines, and why gnn-codegen imports it. Silent for the usual import of a second."""
    thread = threading.get_ident()
    seconds = SLOW_IMPORT_SECONDS

    def notice() -> None:
        line = _line_running(sys._current_frames().get(thread), path)
        print(
            f"gnn-codegen: still importing {path} after {seconds:g} s{line}. gnn-codegen imports the file "
            "to build the model, so all of its top-level code runs; keep script work (loading data, "
            'training) under `if __name__ == "__main__":`.',
            file=sys.stderr, flush=True,
        )

    timer = threading.Timer(seconds, notice)
    timer.daemon = True  # never keeps the process alive
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _line_running(frame: FrameType | None, path: Path) -> str:
    """`, at model.py:12 (`time.sleep(30)`)` for the innermost frame of the user's file."""
    target = path.resolve()
    while frame is not None:
        if Path(frame.f_code.co_filename).resolve() == target:
            code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return f", at {path}:{frame.f_lineno} (`{code}`)"
        frame = frame.f_back
    return ""

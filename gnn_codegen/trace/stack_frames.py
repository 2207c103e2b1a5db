"""Stage 2, trace, the frames of a node's recorded stack trace: the text fx_tracer.py writes on
each node (fx's record_stack_traces format) becomes (file, line, code) frames, outermost first.

One parser for every reader (names, constants read from modules, the names a line unpacks):
a frame whose code line is empty (the wrapper tracer.py compiles around a forward that keeps
its graph, `<GCN.forward taking its graph>`, has no source) must stay empty, not take the next
frame's `File ...` line as its code and hide the user's frame behind it, so the code is read
to the end of its own line only.

Frames of code without a name of its own (`<listcomp>`, `<genexpr>`, `<lambda>`) are left out:
they run an expression inside a statement of the function around them, whose line is the one
that names the value (`z = [gat(g, h).flatten(1) for gat in self.gats]` names each element z)."""

from __future__ import annotations

import re
from typing import NamedTuple

import torch.fx as fx

# `[ \t]*`, not `\s*`: whitespace that crosses a newline would read the next frame as the code
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ([^\n]*)\n[ \t]*([^\n]*)')


class Frame(NamedTuple):
    file: str
    line: int
    code: str  # the source line, stripped; "" where the file has none (compiled wrappers)


def frames(node: fx.Node) -> list[Frame]:
    """The frames that made the node, outermost first (the innermost, last, is where it was
    created)."""
    return [Frame(file, int(line), code.strip())
            for file, line, function, code in _FRAME.findall(node.stack_trace or "") if not function.startswith("<")]

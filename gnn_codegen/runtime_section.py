"""The runtime section of a generated module: the banner that opens it (gnn-codegen's version, a
content hash of the text below it, where it is tested) and the hash itself, stamped into the
module once it is formatted. A reviewer reads down to the banner; what is below it is the same
text in every module of a version and variant, which the hash lets anyone check."""

from __future__ import annotations

import hashlib
import re
import textwrap
from types import SimpleNamespace

from gnn_codegen.templating import render_template

# The start of the banner's first line. Tests cut a module there: the model's part is above it.
BANNER_START = "# --- gnn-codegen runtime"
_PLACEHOLDER = "?" * 12  # as long as the hash, so that stamping moves no line
_HASH_LINE = re.compile(r"^# --- gnn-codegen runtime (\S+), sha256 ([0-9a-f?]{12}) -+$", re.MULTILINE)
_WIDTH = 96  # the banner's lines, as long as the rest of what gnn-codegen writes
_BANNER_END = "# " + "-" * (_WIDTH - 2) + "\n"

# The tests that prove what the runtime promises (its class docstring says which proves what);
# tests/test_goldens.py checks the hash and that the section is one text per variant.
TESTED_BY = (
    "tests/test_goldens.py::test_runtime_section_is_hashed_and_identical",
    "tests/test_equivalence.py (batch sizes, rows in place or gathered)",
    "tests/test_subset_and_storage.py (nodes=, storage=, memory)",
    "tests/test_incremental.py (keep_layers=, changed=)",
    "tests/test_threads.py",
    "tests/test_distributed.py",
    "tests/test_simulated_device.py",
    "tests/cuda/check.py (streams, on a GPU)",
)


def banner(version: str, runtime: str) -> str:
    """The banner above `runtime` (the class's name, as the module spells it), its hash not yet
    stamped (stamp())."""
    text = (f"Everything below this banner is gnn-codegen's runtime: {runtime}, the batch loop that "
            "inference hands each layer's function to, and what it uses. It is identical in every module "
            "of this version and variant, and holds no model-specific code (the model's helpers are above "
            "the banner); the sha256 is of the text below the banner's last line, for anyone to "
            f"recompute. What it guarantees is in {runtime}'s docstring. Tested by:")
    lines = [
        f"{BANNER_START} {version}, sha256 {_PLACEHOLDER} ".ljust(_WIDTH, "-"),
        *(f"# {line}" for line in textwrap.wrap(text, _WIDTH - 2)),
        *(f"#   {name}" for name in TESTED_BY),
    ]
    return "\n".join(lines) + "\n" + _BANNER_END


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def split(source: str) -> tuple[str, str, str]:
    """(the module above the banner, the banner, the runtime below it)."""
    match = _HASH_LINE.search(source)
    if match is None:
        raise ValueError("no gnn-codegen runtime banner in this module")
    end = source.index(_BANNER_END, match.start()) + len(_BANNER_END)
    return source[: match.start()], source[match.start(): end], source[end:]


def banner_hash(source: str) -> str:
    """The hash the banner states."""
    match = _HASH_LINE.search(source)
    if match is None:
        raise ValueError("no gnn-codegen runtime banner in this module")
    return match.group(2)


def stamp(source: str) -> str:
    """`source` with its banner's hash filled in: that of the runtime below it, as formatted."""
    if _HASH_LINE.search(source) is None:
        return source
    head, top, runtime = split(source)
    return head + top.replace(_PLACEHOLDER, content_hash(runtime), 1) + runtime


def model_helpers(sections: set[str] | frozenset[str], names: dict[str, str] | object,
                  block_as_graph: str = "") -> str:
    """The helpers a module's layers call, rendered only where they do: the written-out
    convolutions' sections in `sections` (templates/convs.py.j2, `names` their names) and the
    function that gives a block as a graph over its sources (templates/block_as_graph.py.j2)."""
    parts = []
    if block_as_graph:
        parts.append(render_template("block_as_graph.py.j2", block_as_graph=block_as_graph))
    if sections:
        spelled = SimpleNamespace(**names) if isinstance(names, dict) else names
        parts.append(render_template("convs.py.j2", used=sections, names=spelled))
    return "\n\n\n".join(part.strip("\n") for part in parts if part.strip())


def runtime_helpers(helpers: str, version: str, runtime: str, runtime_source: str) -> str:
    """The text the module ends with: the model's helpers, then the banner and the runtime."""
    return render_template("helpers.py.j2", helpers=helpers, banner=banner(version, runtime),
                           runtime=runtime_source.strip("\n"))

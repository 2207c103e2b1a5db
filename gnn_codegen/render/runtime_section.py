"""The runtime section of a generated module: the banner that opens it (gnn-codegen's version, a
content hash of the text below it, where it is tested) and the hash itself, stamped into the
module once it is formatted. A reviewer reads down to the banner; what is below it is the same
text in every module of a version and variant, which the hash lets anyone check. A runtime
module (--runtime-module) holds one such section per variant, each under its own banner."""

from __future__ import annotations

import hashlib
import re
import textwrap
from types import SimpleNamespace

from gnn_codegen.render.templating import render_template

# The start of the banner's first line. Tests cut a module there: the model's part is above it.
BANNER_START = "# --- gnn-codegen runtime"
_PLACEHOLDER = "?" * 12  # as long as the hash, so that stamping moves no line
_HASH_LINE = re.compile(r"^# --- gnn-codegen runtime (\S+), sha256 ([0-9a-f?]{12}) -+$", re.MULTILINE)
_WIDTH = 96  # the banner's lines, as long as the rest of what gnn-codegen writes
_BANNER_END = "# " + "-" * (_WIDTH - 2) + "\n"

# The tests that prove what each variant's runtime promises (its class docstring says which
# proves what); tests/test_goldens.py checks the hash and that the section is one text per
# variant, tests/test_runtime_module.py that it computes the same imported from a module of
# its own (--runtime-module) and that a module refuses another runtime than its own.
TESTED_BY = (
    "tests/test_goldens.py::test_runtime_section_is_hashed_and_identical",
    "tests/test_equivalence.py (batch sizes, rows in place or gathered)",
    "tests/test_subset_and_storage.py (nodes=, storage=, memory)",
    "tests/test_incremental.py (keep_layers=, changed=)",
    "tests/test_threads.py",
    "tests/test_distributed.py",
    "tests/test_simulated_device.py",
    "tests/test_runtime_module.py (as a module of its own, --runtime-module)",
    "tests/cuda/check.py (streams, on a GPU)",
)
HETERO_TESTED_BY = (
    "tests/test_goldens.py::test_runtime_section_is_hashed_and_identical",
    "tests/test_hetero.py (batch sizes, rows in place or gathered, nodes=, storage=, memory)",
    "tests/test_hetero_differential.py",
    "tests/test_hetero_incremental.py (keep_layers=, changed=)",
    "tests/test_threads.py",
    "tests/test_distributed.py",
    "tests/test_simulated_device.py",
    "tests/test_runtime_module.py (as a module of its own, --runtime-module)",
)


def banner(version: str, runtime: str, tested_by: tuple[str, ...] = TESTED_BY, until_next: bool = False) -> str:
    """The banner above `runtime` (the class's name, as the module spells it), its hash not yet
    stamped (stamp()). until_next: another banner follows in the file (a runtime module's),
    where the section this one hashes ends."""
    below = ("the text below the banner's last line, down to the next such banner (blank lines before "
             "it left out)" if until_next else "the text below the banner's last line")
    text = (f"Everything below this banner is gnn-codegen's runtime: {runtime}, the batch loop that "
            "inference hands each layer's function to, and what it uses. It is identical in every module "
            "of this version and variant, and holds no model-specific code (the model's helpers are above "
            f"the banner); the sha256 is of {below}, for anyone to "
            f"recompute. What it guarantees is in {runtime}'s docstring. Tested by:")
    lines = [
        f"{BANNER_START} {version}, sha256 {_PLACEHOLDER} ".ljust(_WIDTH, "-"),
        *(f"# {line}" for line in textwrap.wrap(text, _WIDTH - 2)),
        *(f"#   {name}" for name in tested_by),
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


def sections(source: str) -> list[tuple[str, str]]:
    """Each banner of `source` with the runtime section it hashes: the text below it down to
    the next banner, its trailing blank lines left out, or to the end (a module holds one
    banner; a runtime module one per variant)."""
    matches = list(_HASH_LINE.finditer(source))
    found: list[tuple[str, str]] = []
    for i, match in enumerate(matches):
        end = source.index(_BANNER_END, match.start()) + len(_BANNER_END)
        stop = matches[i + 1].start() if i + 1 < len(matches) else len(source)
        text = source[end:stop]
        found.append((source[match.start(): end], text.rstrip("\n") + "\n" if i + 1 < len(matches) else text))
    return found


def banner_hash(source: str) -> str:
    """The hash the banner states."""
    match = _HASH_LINE.search(source)
    if match is None:
        raise ValueError("no gnn-codegen runtime banner in this module")
    return match.group(2)


def stamp(source: str) -> str:
    """`source` with its banner's hash filled in: that of the runtime below it, as formatted."""
    for top, runtime in sections(source):  # each banner's placeholder as long as its hash
        source = source.replace(top, top.replace(_PLACEHOLDER, content_hash(runtime), 1), 1)
    return source


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


def runtime_helpers(helpers: str, version: str, runtime: str, runtime_source: str,
                    tested_by: tuple[str, ...] = TESTED_BY, until_next: bool = False) -> str:
    """The text the module ends with: the model's helpers, then the banner and the runtime."""
    return render_template("helpers.py.j2", helpers=helpers, banner=banner(version, runtime, tested_by, until_next),
                           runtime=runtime_source.strip("\n"))

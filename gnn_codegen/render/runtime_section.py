"""The runtime section of a generated module: the banner that opens it (gnn-codegen's version, a
content hash of the text below it, where it is tested) and the hash itself, stamped into the
module once it is formatted. A reviewer reads down to the first banner; what is below the
runtime's is the same text in every module of a version and variant, which the hash lets anyone
check. A runtime module (--runtime-module) holds one such section per variant, each under its
own banner. The convolution helpers' section (helpers_section.py) opens with a banner of the
same form, hashed and stamped by the same functions here."""

from __future__ import annotations

import hashlib
import re
import textwrap

from gnn_codegen.render.runtime_imports import import_block
from gnn_codegen.render.templating import render_template

# The start of the runtime banner's first line. Tests cut a module there: the model's part and
# its helpers are above it.
BANNER_START = "# --- gnn-codegen runtime"
# the kinds of section a banner opens: the runtime, or the helpers the model's layers call
RUNTIME, HELPERS = "runtime", "convolution helpers"
_PLACEHOLDER = "?" * 12  # as long as the hash, so that stamping moves no line
_HASH_LINE = re.compile(rf"^# --- gnn-codegen ({RUNTIME}|{HELPERS}) (\S+), sha256 ([0-9a-f?]{{12}}) -+$",
                        re.MULTILINE)
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
            "inference hands each layer's function to, and what it uses, its imports first. It is identical in every module "
            "of this version and variant, and holds no model-specific code (the model's code, and the "
            f"helpers its layers call, are above this banner); the sha256 is of {below}, for anyone to "
            f"recompute. What it guarantees, and the parameters inference passes it, are in {runtime}'s "
            "docstring. Tested by:")
    return framed(RUNTIME, version, text, tested_by)


def framed(kind: str, version: str, text: str, tested_by: tuple[str, ...]) -> str:
    """A banner of `kind` (RUNTIME, HELPERS): its first line (version, hash placeholder), the
    paragraph `text`, the tests that cover the section, and its closing rule."""
    lines = [
        f"# --- gnn-codegen {kind} {version}, sha256 {_PLACEHOLDER} ".ljust(_WIDTH, "-"),
        *(f"# {line}" for line in textwrap.wrap(text, _WIDTH - 2)),
        *(f"#   {name}" for name in tested_by),
    ]
    return "\n".join(lines) + "\n" + _BANNER_END


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _runtime_banner(source: str) -> re.Match[str] | None:
    return next((m for m in _HASH_LINE.finditer(source) if m.group(1) == RUNTIME), None)


def split(source: str) -> tuple[str, str, str]:
    """(the module above the runtime's banner, that banner, the runtime below it)."""
    match = _runtime_banner(source)
    if match is None:
        raise ValueError("no gnn-codegen runtime banner in this module")
    end = source.index(_BANNER_END, match.start()) + len(_BANNER_END)
    return source[: match.start()], source[match.start(): end], source[end:]


def sections(source: str) -> list[tuple[str, str]]:
    """Each banner of `source` with the section it hashes: the text below it down to the next
    banner, its trailing blank lines left out, or to the end (a module holds its helpers'
    banner where it has helpers, then the runtime's; a runtime module one per variant)."""
    matches = list(_HASH_LINE.finditer(source))
    found: list[tuple[str, str]] = []
    for i, match in enumerate(matches):
        end = source.index(_BANNER_END, match.start()) + len(_BANNER_END)
        stop = matches[i + 1].start() if i + 1 < len(matches) else len(source)
        text = source[end:stop]
        found.append((source[match.start(): end], text.rstrip("\n") + "\n" if i + 1 < len(matches) else text))
    return found


def banner_hash(source: str) -> str:
    """The hash the runtime's banner states."""
    match = _runtime_banner(source)
    if match is None:
        raise ValueError("no gnn-codegen runtime banner in this module")
    return match.group(3)


def stamp(source: str) -> str:
    """`source` with its banners' hashes filled in: each that of the section below it, as
    formatted."""
    for top, runtime in sections(source):  # each banner's placeholder as long as its hash
        source = source.replace(top, top.replace(_PLACEHOLDER, content_hash(runtime), 1), 1)
    return source


def runtime_helpers(helpers: str, version: str, runtime: str, runtime_source: str,
                    tested_by: tuple[str, ...] = TESTED_BY, until_next: bool = False) -> str:
    """The text the module ends with: the helpers its layers call under their banner
    (helpers_section.py; "" where they call none), then the banner and the runtime."""
    # the runtime's imports open its section: the modules are the runtime's, read by no line of
    # the model's (splice.py imports at the top only what the model's part reads)
    source = runtime_source.strip("\n")
    return render_template("helpers.py.j2", helpers=helpers, banner=banner(version, runtime, tested_by, until_next),
                           runtime=import_block(source) + "\n\n\n" + source)


def parameters_sentence(parameters: list[str], runtime: str, runtime_module: str | None = None) -> str:
    """The sentence of inference's docstring that points at the runtime's for the parameters
    that are the runtime's (the same in every module: device, batch_size, nodes=, storage=, ...),
    as the module names them; runtime_module: the runtime is imported from that module
    (--runtime-module), where its docstring then is."""
    where = (f"in {runtime_module}.py, which this module imports it from" if runtime_module
             else "below the runtime's banner")
    listed = ", ".join(parameters[:-1]) + " and " + parameters[-1]
    return f"{listed}: what each does is in {runtime}'s docstring ({where})."

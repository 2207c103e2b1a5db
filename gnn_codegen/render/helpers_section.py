"""Stage 6, render: the helpers a module's layers call (DGL convolutions' forward split per
source row and per block, rendered from templates/convs.py.j2, hetero_convs.py.j2 and
block_as_graph.py.j2 for the set the module calls), under a banner of their own between the
model's code and the runtime's banner. They are library code, not the model's: the banner says
so and hashes them (runtime_section.py's machinery), so that a reviewer reads the model's code
down to the first banner and can check the rest."""

from __future__ import annotations

from types import SimpleNamespace

import dgl

from gnn_codegen.render.runtime_module import DIST_RUNTIME
from gnn_codegen.render.runtime_section import HELPERS, framed, runtime_helpers
from gnn_codegen.render.templating import render_template

# The tests that prove the helpers (each against DGL's module, and every example against forward);
# tests/test_goldens.py checks that each golden's section is the templates' rendering and its hash.
TESTED_BY = (
    "tests/test_goldens.py::test_helper_section_is_rendered_and_hashed",
    "tests/test_known_modules.py (each written-out convolution equals DGL's on blocks)",
    "tests/test_rel_graph_conv.py, test_attention_weighted_sum.py, test_block_as_graph.py",
    "tests/test_relation_sum.py, test_relation_product.py (HeteroGraphConv)",
    "tests/test_equivalence.py, test_hetero.py (every example equals its forward)",
)


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


def banner(version: str, runtime_follows: bool = True) -> str:
    """The banner above the helpers, its hash not yet stamped (runtime_section.stamp).
    runtime_follows: the runtime's banner ends the section (else the module's end does:
    --runtime-module)."""
    end = "down to the runtime's banner" if runtime_follows else "to the end of the module"
    blanks = " (blank lines before the next banner left out)" if runtime_follows else ""
    text = ("Everything below this banner, " + end + ", is library code: gnn-codegen's helpers for "
            "the DGL modules this model's layers call, each module's forward split into its work once per "
            "source row and the rest on each batch's block (a documented function per part, read like "
            "DGL's forward). They are this version's templates (convs.py.j2, hetero_convs.py.j2) rendered "
            "for the set of helpers this module calls, and hold no model-specific code; the sha256 is of "
            f"the text below the banner's last line{blanks}, for anyone to recompute. Like DGL's forward they "
            "read its modules' private attributes (conv._norm, conv._activation, ...): this module was "
            f"generated and checked against forward with dgl {dgl.__version__}: regenerate it after "
            "upgrading DGL. Tested by:")
    return framed(HELPERS, version, text, TESTED_BY)


def under_banner(helpers: str, version: str, runtime_follows: bool = True) -> str:
    """`helpers` (rendered, black's format) under their banner; "" where there are none."""
    if not helpers.strip():
        return ""
    return banner(version, runtime_follows) + "\n\n" + helpers.strip("\n")  # as the runtime's


def render_helpers(runtime: str, sections: set[str], names: dict[str, str], version: str,
                   block_as_graph: str = "", dist_runtime: str = DIST_RUNTIME) -> str:
    """What the module adds after the class: the helpers its layers call (the written-out
    convolutions' sections, `block_as_graph` where the code calls it: block_as_graph.py) under
    their banner (under_banner, above), then the runtime under its banner (runtime_section.py),
    one text in every module."""
    return runtime_helpers(under_banner(model_helpers(sections, names, block_as_graph), version), version, runtime,
                           render_template("batches.py.j2", runtime=runtime, dist_runtime=dist_runtime))

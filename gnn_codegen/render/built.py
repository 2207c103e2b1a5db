"""Stage 6, render, how the model was built: the digest of the instance gnn-codegen traced, which
inference checks at its entry (templates/built.py.j2), and the line that checks it.

The trace unrolled the model's loops and read its Python-level settings (a ModuleList's length,
APPNP's k, GraphConv's norm, a width in `weight[:, :16]`) as they were on that instance: on a
model built with other constructor arguments the generated code would compute another function
than its forward, without a word. The digest is computed here by the runtime's own function,
rendered from the template and run in this process, so that generation and the generated check
can never disagree on what counts."""

from __future__ import annotations

import torch

from gnn_codegen.render.runtime import runtime_class


def built_digest(model: torch.nn.Module) -> str:
    """The digest of how `model` is built, as the generated inference computes it: by the
    runtime's function (every variant's is the same text, templates/built.py.j2), rendered
    and run here (runtime.py)."""
    return str(runtime_class().built(model))


def check_line(runtime: str, digest: str, model: str = "self") -> list[str]:
    """The lines at inference's entry that refuse a model built otherwise (runtime: the
    runtime's class, as the module names it)."""
    return [
        "# a model built otherwise (other layer counts, widths, k, ...): ValueError",
        f'{runtime}.check_built({model}, "{digest}")',
    ]

"""The runtime every generated module carries (templates/batches.py.j2), rendered and loaded
into this process: the probe (probe.py) runs a module on blocks the way the generated code
does, through the same class."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import dgl
import torch

from gnn_codegen.templating import render_template


@lru_cache(maxsize=1)
def runtime_class() -> Any:
    namespace: dict[str, Any] = {"torch": torch, "dgl": dgl, "__name__": __name__}
    source = render_template("batches.py.j2", runtime="FullNeighbourBatches")
    exec(compile(source, "<gnn-codegen batches.py.j2>", "exec"), namespace)
    return namespace["FullNeighbourBatches"]

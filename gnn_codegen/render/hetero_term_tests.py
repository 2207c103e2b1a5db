"""Stage 6, render (heterogeneous): the test of its module's settings under which forward adds
a term the relations' helper takes (rgcn-hetero's `if self.self_loop:` around `h = h +
torch.matmul(inputs[ntype], self.loop_weight)`), kept where the call passes the term:
`linear=(h_dst, self.layers[i].loop_weight) if self.layers[i].self_loop else None`, so that
the layer reads as forward does rather than as if the term were always there. The trace kept
the side this build takes; check_built refuses another setting (lower/setting_tests.py: only
tests of attributes the build digest covers count)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.fx as fx

from gnn_codegen.lower.setting_tests import branches_around
from gnn_codegen.render.hetero_expressions import accessor
from gnn_codegen.trace.stack_frames import frames


def term_test(node: fx.Node, model: torch.nn.Module) -> str | None:
    """The condition forward adds the term made by `node` under: the tests of the `if`s with no
    else around its line in its module's forward, each of that module's settings alone
    (`self.layers[0].self_loop`), joined by `and`; None where there is none."""
    stack = node.meta.get("nn_module_stack") or {}
    made = frames(node)
    if not stack or not made:
        return None
    path = list(stack)[-1]
    try:
        module = model.get_submodule(path)
    except AttributeError:
        return None
    branches = branches_around(module, accessor(model, path), Path(made[-1].file), made[-1].line)
    if not branches or not all(b.alone and b.condition for b in branches):
        return None  # an else, or a test of more than settings: as traced, nothing said
    conditions = [b.condition for b in branches]
    return conditions[0] if len(conditions) == 1 else " and ".join(f"({c})" for c in conditions)

"""Weights and normalisation statistics moved away from their initial values, so that a check
(probe.py, verify.py, the tests) cannot pass because of a lucky initialisation: zero biases,
unit variances, identical heads."""

from __future__ import annotations

import torch

from gnn_codegen.trace.plain_containers import held_modules


def perturb(model: torch.nn.Module, seed: int = 0) -> None:
    """Move weights and normalisation statistics away from their initial values, so that a
    test cannot pass because of a lucky initialisation (zero biases, unit variances)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        # with the modules forward reaches through plain lists and dicts, which model.parameters()
        # does not list (plain_containers.py)
        modules = [*model.modules(), *held_modules(model).values()]
        for p in dict.fromkeys(p for m in modules for p in m.parameters(recurse=False)):
            p.add_(0.1 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
        for m in modules:
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.copy_(0.5 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))

"""Weights and normalisation statistics moved away from their initial values, so that a check
(probe.py, verify.py, the tests) cannot pass because of a lucky initialisation: zero biases,
unit variances, identical heads."""

from __future__ import annotations

import torch


def perturb(model: torch.nn.Module, seed: int = 0) -> None:
    """Move weights and normalisation statistics away from their initial values, so that a
    test cannot pass because of a lucky initialisation (zero biases, unit variances)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.copy_(0.5 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))

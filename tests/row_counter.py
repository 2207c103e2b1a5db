"""Watches torch: the number of rows of every new tensor a torch function returns, to prove
what generated code does not compute (tests/test_known_modules.py, tests/test_equivalence.py)."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


class RowCounter(TorchFunctionMode):
    """Records the number of rows of every new tensor a torch function returns (not the views
    and no-ops, like `.contiguous()` on a contiguous tensor, which share an argument's memory).
    Sparse tensors have no storage of their own: their values and indices are counted where a
    function makes them."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[int] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        inputs = {a.untyped_storage().data_ptr() for a in args if _dense(a)}
        for t in result if isinstance(result, (tuple, list)) else [result]:
            if _dense(t) and t.dim() > 0 and t.untyped_storage().data_ptr() not in inputs:
                self.rows.append(t.shape[0])
        return result


def _dense(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.strided

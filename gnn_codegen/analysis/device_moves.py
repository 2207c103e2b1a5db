"""Stage 4, analysis, moves onto the device of tensors already there: DGL's TAGConv and
APPNPConv write `norm = norm.to(feat.device)`, and forward's own code `h.to(x.device)`, so
the generated code moved a norm it had just computed on the device to the device
(`norm_4 = norm_3.to(device)`). A layer's function runs where its rows are: the runtime hands
it every input and graph value on `device`, the model is there, and what it computes from
those is there too (torch refuses to mix devices). So a move to a batch tensor's device
(`t.device`, written `device`: reads_device) of a tensor computed so is the tensor itself,
and is dropped.

What stays moved: a tensor made from no tensor on the host (`torch.zeros(n, d)`, a
`torch.tensor([...])`), anything computed from one, and what `.cpu()` or `.to("cpu")` made.
Where a move has other arguments than the device (`copy=True`, a dtype beside it), it stays
as written. The simulated device (verify/simulated_device.py, tests/test_simulated_device.py)
checks every example with its graph and inputs on the host and the model on the device."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.ir import Op, Program, Ref, iter_refs, map_refs, reads_device
from gnn_codegen.lower.simplify import remove_dead

# values the runtime hands a layer's function on `device` (inputs' and graph values' rows), or
# that run there (the model's modules and parameters, message passing on the block)
_ON_DEVICE_KINDS = ("input", "graph_value", "mp", "module", "attr")
# torch functions that make a tensor from no tensor: on the host unless given device=
_FACTORIES = frozenset({
    "empty", "zeros", "ones", "full", "arange", "range", "linspace", "logspace", "eye", "tensor",
    "as_tensor", "from_numpy", "rand", "randn", "randint", "randperm", "empty_strided",
})
# methods whose result is on the host (or no tensor a later op could read as one)
_TO_HOST = frozenset({"cpu", "numpy", "tolist", "item", "pin_memory"})


def _is_device_read(value: Any, program: Program) -> bool:
    return isinstance(value, Ref) and reads_device(program, program.op(value.name))


class _Places:
    """Which tensors are proven on `device` in a layer's function (memoised)."""

    def __init__(self, program: Program, attrs: Attributes):
        self.program, self.info = program, attrs.as_dict()
        self.known: dict[str, bool] = {}

    def on_device(self, name: str) -> bool:
        if name not in self.known:
            self.known[name] = False  # a cycle cannot happen (ops are in order); be safe anyway
            self.known[name] = self._on_device(self.program.op(name))
        return self.known[name]

    def _tensor_on_device(self, value: Any) -> bool:
        return isinstance(value, Ref) and bool(getattr(self.info.get(value.name), "dtype", "")) \
            and self.on_device(value.name)

    def _on_device(self, op: Op) -> bool:
        if op.kind in _ON_DEVICE_KINDS:
            return True
        if op.kind not in ("function", "method"):
            return False
        kwargs = dict(op.kwargs)
        if "device" in kwargs:  # made or moved where it says
            return _is_device_read(kwargs["device"], self.program)
        if op.kind == "function" and op.target.rsplit(".", 1)[-1] in _FACTORIES:
            return False
        if op.kind == "method" and op.target in _TO_HOST:
            return False
        if op.kind == "method" and op.target == "to":
            where = op.args[1] if len(op.args) > 1 else None
            if isinstance(where, Ref):  # .to(t.device), .to(t): where t is
                return _is_device_read(where, self.program) or self._tensor_on_device(where)
            # .to(torch.float64), .to(dtype=...): where it was; .to("cpu"), .to(a device): not proven
            return (where is None or type(where).__name__ == "dtype") and self._tensor_on_device(op.args[0])
        # a tensor computed from one on the device is there too (torch refuses to mix them)
        return any(self._tensor_on_device(Ref(name)) for name in iter_refs((op.args, tuple(kwargs.values()))))


def _needless_move(op: Op, places: _Places, program: Program) -> str | None:
    """The tensor `op` moves onto the device it is on already, or None."""
    if op.kind != "method" or op.target != "to" or op.kwargs or len(op.args) != 2:
        return None
    tensor, where = op.args
    if not isinstance(tensor, Ref) or not _is_device_read(where, program):
        return None
    return tensor.name if places.on_device(tensor.name) else None


def without_needless_moves(program: Program, attrs: Attributes) -> Program:
    """The program with each move of a tensor onto the device it is already on read as that
    tensor (its readers read the tensor itself)."""
    places = _Places(program, attrs)
    moved = {op.name: name for op in program.ops if (name := _needless_move(op, places, program))}
    if not moved:
        return program

    def resolve(ref: Ref) -> Ref:
        while ref.name in moved:
            ref = Ref(moved[ref.name])
        return ref

    ops = tuple(replace(op, args=map_refs(op.args, resolve),
                        kwargs=tuple((k, map_refs(v, resolve)) for k, v in op.kwargs))
                for op in program.ops if op.name not in moved)
    return remove_dead(program.with_ops(ops, output=map_refs(program.output, resolve)))

"""A GPU simulated on the CPU, to prove the generated code's device contract where no GPU is:
the model on the device, the graph and the inputs on the host, and no operation ever meeting a
host tensor and a device tensor (which a real GPU refuses).

The device is `torch.device("cpu", 0)`: torch and DGL accept it wherever a device goes, it is
not equal to the host's `torch.device("cpu")`, and tensors on it are ordinary CPU tensors. Each
tensor carries a place, "host" or "device", kept beside it (a weak map, by identity): a moved
tensor (`.to(device)`, `.cpu()`) is a copy with the new place, a new tensor takes its inputs'
place, or the device it was made on; `.device` answers with the place. A torch function whose
tensors have both places raises DeviceMixError, as CUDA would. DGL's graphs have a place too
(`g.to(device)`), and its sparse kernels (gspmm, gsddmm, edge_softmax, segment reductions)
check their tensors against it.

What it cannot catch: what only a GPU does (streams, pinned memory, asynchronous copies: the
runtime takes its CUDA paths only for device.type == "cuda"), and tensors made inside DGL's
C++ (a graph's index arrays), which have no place and so never clash."""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import Any, Iterator

import dgl
import torch
from torch.overrides import TorchFunctionMode

DEVICE = torch.device("cpu", 0)
_DEVICE_PROPERTY = torch._C.TensorBase.__dict__["device"]
# torch's functions that make a tensor from no tensor (not from_dlpack: DGL's arrays have no place)
_FACTORIES = frozenset({
    "empty", "zeros", "ones", "full", "arange", "range", "linspace", "logspace", "eye", "tensor",
    "as_tensor", "rand", "randn", "randint", "randperm", "empty_strided",
})


class DeviceMixError(RuntimeError):
    """An operation on the simulated device read a host tensor (or the other way round)."""


def _is_device(value: Any) -> bool | None:
    """True for the simulated device, False for another one, None when `value` names none."""
    if isinstance(value, torch.device):
        return value == DEVICE
    if isinstance(value, str):
        try:
            return torch.device(value) == DEVICE
        except RuntimeError:
            return None
    return None


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


class SimulatedDevice(TorchFunctionMode):
    """`with SimulatedDevice() as sim:` ... `model.inference(g, x, ..., device=sim.device)`."""

    device = DEVICE

    def __init__(self) -> None:
        super().__init__()
        self.places: dict[int, str] = {}  # id(tensor) -> "host" | "device", while it lives
        # the graph indexes of the graphs on the device, by id, kept alive (so that an id is
        # never another's) while the simulation lasts
        self.device_graphs: dict[int, Any] = {}
        self._patches: contextlib.ExitStack | None = None

    # -- places ---------------------------------------------------------------------------------
    def move_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """As model.to(device): every parameter and buffer a device copy."""
        with torch.no_grad():
            for tensor in [*model.parameters(), *model.buffers()]:
                tensor.data = tensor.data.clone()
                self._tag(tensor, "device")
        return model

    def on_host(self, *tensors: torch.Tensor) -> None:
        for t in tensors:
            self._tag(t, "host")

    def _place(self, t: Any) -> str | None:
        return self.places.get(id(t)) if isinstance(t, torch.Tensor) else None

    def _tag(self, value: Any, place: str | None) -> Any:
        if place is not None:
            for t in _tensors(value):
                if id(t) not in self.places:
                    weakref.finalize(t, self.places.pop, id(t), None)
                self.places[id(t)] = place
        return value

    # -- torch ----------------------------------------------------------------------------------
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__self__", None) is _DEVICE_PROPERTY:  # tensor.device
            return DEVICE if self._place(args[0]) == "device" else func(*args)
        if func in (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda):
            return self._move(func, args, kwargs)
        if func in (torch.Tensor.copy_, torch.Tensor.__setitem__):
            # copying between places is what a copy is for: the result keeps its place
            return func(*args, **kwargs)
        tensors = list(_tensors((args, kwargs)))
        # an empty tensor holds nothing to mix (DGL makes some of a block's empty index arrays
        # without a device), but its place is the result's when there is no other
        places = {p for p in (self._place(t) for t in tensors if t.numel()) if p is not None}
        if len(places) > 1:
            name = getattr(func, "__qualname__", getattr(func, "__name__", str(func)))
            found = ", ".join(f"{self._place(t)} {tuple(t.shape)}" for t in tensors)
            raise DeviceMixError(f"{name} reads a host tensor and a device tensor ({found})")
        places = places or {p for p in (self._place(t) for t in tensors) if p is not None}
        result = func(*args, **kwargs)
        made_on = _is_device(kwargs.get("device"))
        inherited = next(iter(places)) if len(places) == 1 else None
        place = "device" if made_on else "host" if made_on is False else inherited
        if place is None and getattr(func, "__name__", "") in _FACTORIES:
            place = "host"  # made without a device: on the host, as on a GPU machine
        return self._tag(result, place)

    def _move(self, func: Any, args: tuple, kwargs: dict) -> Any:
        tensor, rest = args[0], args[1:]
        if func is torch.Tensor.cpu:
            target: bool | None = False
        elif func is torch.Tensor.cuda:
            raise DeviceMixError("the simulated device is not CUDA: generated code must use `device`")
        else:
            target = next((d for d in (_is_device(a) for a in (*rest, kwargs.get("device"))) if d is not None), None)
            if target is None:  # .to(dtype) or .to(other_tensor)
                other = next((a for a in rest if isinstance(a, torch.Tensor)), None)
                target = self._place(other) == "device" if other is not None else None
        if target is None:
            return self._tag(func(*args, **kwargs), self._place(tensor))
        kept = {k: v for k, v in kwargs.items() if k in ("dtype", "copy", "memory_format")}
        dtypes = [a for a in rest if isinstance(a, torch.dtype)]
        moved = tensor.to(*dtypes, **kept)
        if (self._place(tensor) == "device") != target or moved is tensor:
            moved = moved.clone()  # a copy on the other side, never the same memory
        return self._tag(moved, "device" if target else "host")

    # -- DGL ------------------------------------------------------------------------------------
    def __enter__(self) -> "SimulatedDevice":
        super().__enter__()
        self._patches = contextlib.ExitStack()
        self._patch_dgl(self._patches)
        return self

    def __exit__(self, *exc: Any) -> Any:
        if self._patches is not None:
            self._patches.close()
        return super().__exit__(*exc)

    def _patch_dgl(self, stack: contextlib.ExitStack) -> None:
        import dgl.backend.pytorch.sparse as sparse

        sim = self
        original_to, original_device = dgl.DGLGraph.to, dgl.DGLGraph.device

        def to(graph: Any, device: Any, **kwargs: Any) -> Any:
            moved = original_to(graph, device, **kwargs)  # a copy unless already there
            if _is_device(device) and moved is not graph:
                sim.device_graphs[id(moved._graph)] = moved._graph
            return moved

        def device(graph: Any) -> torch.device:
            return DEVICE if id(graph._graph) in sim.device_graphs else original_device.fget(graph)

        original_getitem = dgl.DGLGraph.__getitem__

        def getitem(graph: Any, key: Any) -> Any:
            # g[etype], made by update_all and friends: a graph of the same place
            part = original_getitem(graph, key)
            if id(graph._graph) in sim.device_graphs and isinstance(part, dgl.DGLGraph):
                sim.device_graphs[id(part._graph)] = part._graph
            return part

        for name, value in (("to", original_to), ("device", original_device), ("__getitem__", original_getitem)):
            stack.callback(setattr, dgl.DGLGraph, name, value)
        dgl.DGLGraph.to, dgl.DGLGraph.device, dgl.DGLGraph.__getitem__ = to, property(device), getitem
        # DGL's copy_to sends any device of type "cpu" to the host
        import dgl.backend as backend

        backend_tensor = sys.modules["dgl.backend.pytorch.tensor"]  # `tensor` is also a function

        original_copy = backend_tensor.copy_to

        def copy_to(input: Any, ctx: Any, **kwargs: Any) -> Any:
            return input.to(DEVICE) if _is_device(ctx) else original_copy(input, ctx, **kwargs)

        for module in (backend, backend_tensor):
            stack.callback(setattr, module, "copy_to", getattr(module, "copy_to"))
            setattr(module, "copy_to", copy_to)
        for name in ("_gspmm", "_gsddmm", "_edge_softmax_forward", "_gspmm_hetero", "_gsddmm_hetero"):
            kernel = getattr(sparse, name)
            stack.callback(setattr, sparse, name, kernel)
            setattr(sparse, name, self._checked(kernel))

    def _checked(self, kernel: Any) -> Any:
        sim = self

        def checked(gidx: Any, *args: Any, **kwargs: Any) -> Any:
            graph = "device" if id(gidx) in sim.device_graphs else "host"
            for t in _tensors((args, kwargs)):
                place = sim._place(t) if t.numel() else None
                if place is not None and place != graph:
                    raise DeviceMixError(f"DGL's {kernel.__name__.strip('_')} reads a {place} tensor on a {graph} graph")
            return sim._tag(kernel(gidx, *args, **kwargs), graph)  # made in C++: no place of its own

        return checked

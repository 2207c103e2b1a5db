"""Part of stage 2, trace: modules the model keeps in a plain Python list, tuple or dict
(`self.conv = [PolyConv(...), ...]`, BWGNN's) traced and reached as forward reaches them.

PyTorch does not register such modules: torch.fx finds no name for them (NameError: module is
not installed as a submodule), model.eval() does not reach them, and their parameters are in
neither model.parameters() nor the state_dict. Forward still calls them, and the generated
`inference` is a method of the user's own class, so it can call them as forward does
(`self.conv[0]`, `self.heads["a"]`). While gnn-codegen traces, lowers and proves the model
(pipeline.py), each such container stands in the model's registry as an nn.ModuleList or
nn.ModuleDict under its own attribute name, so fx names its modules by their path through the
container (`conv.0`, found by identity as any submodule), and every pass sees them as
submodules; lower.accessor spells that path as Python indexing of the plain container the
user's instance keeps again after. The stand-ins pass no train()/eval() on: the modules keep
the flag they have, as forward runs them when the user evaluates, and the generated inference
too; where that flag changes their result, check_modes refuses."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import torch

from gnn_codegen.lower.accessors import accessor
from gnn_codegen.errors import UnsupportedOperationError

Container = list[Any] | tuple[Any, ...] | dict[str, Any]


def is_unregistered_module_error(exc: BaseException) -> bool:
    return isinstance(exc, NameError) and "not installed as a submodule" in str(exc)


def _held(value: Any) -> bool:
    """A plain container whose items are all modules, spelled as a submodule path can be: a
    ModuleDict takes only string keys without dots."""
    if isinstance(value, dict):
        # nor one of ModuleDict's own attributes (`keys`, `training`), which it refuses as a key
        return bool(value) and all(isinstance(k, str) and k and "." not in k and not hasattr(torch.nn.ModuleDict, k)
                                   and isinstance(v, torch.nn.Module) for k, v in value.items())
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, torch.nn.Module) for v in value)


def _containers(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module, str, Container]]:
    """(path of the owner, owner, attribute, container) for each plain container of modules on
    the model or a module it registers."""
    return [(path, module, key, value) for path, module in model.named_modules()
            for key, value in list(vars(module).items())
            if key not in ("_modules", "_parameters", "_buffers") and _held(value)]


class _HeldList(torch.nn.ModuleList):
    """A plain list or tuple of modules, registered while gnn-codegen reads the model. train()
    and eval() stop here, as they do at the plain list: the modules keep their own flags."""

    def train(self, mode: bool = True) -> _HeldList:
        return self


class _HeldDict(torch.nn.ModuleDict):
    """A plain dict of modules, registered so (see _HeldList)."""

    def train(self, mode: bool = True) -> _HeldDict:
        return self


def held_modules(model: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """Every module reached through a plain container (and the modules those register), by its
    path as fx names it while tracing: `conv.0`, `conv.0.linear`, `heads.a`. Also while they
    are registered."""
    with registered(model):
        found = dict(model.named_modules())
    stand_ins = [p for p, m in found.items() if isinstance(m, (_HeldList, _HeldDict))]
    return {p: m for p, m in found.items() if any(p.startswith(s + ".") for s in stand_ins)}


@contextlib.contextmanager
def registered(model: torch.nn.Module) -> Iterator[None]:
    """Each plain container of modules registered as an nn.ModuleList (a list or tuple) or an
    nn.ModuleDict under its own attribute name, also those held by modules so reached; the
    plain containers put back after, in the user's instance as they were. Forward reads the
    stand-ins as it reads the containers: it iterates, indexes and measures them."""
    swapped: list[tuple[torch.nn.Module, str, Container]] = []
    try:
        while True:
            found = _containers(model)
            if not found:
                break
            for _, owner, key, value in found:
                del vars(owner)[key]
                owner._modules[key] = _HeldDict(value) if isinstance(value, dict) else _HeldList(value)
                swapped.append((owner, key, value))
        yield
    finally:
        for owner, key, value in reversed(swapped):
            del owner._modules[key]
            vars(owner)[key] = value


def with_held_state(target: torch.nn.Module, reference: torch.nn.Module) -> None:
    """Copy the parameters, buffers and training flags of the modules `reference` keeps in
    plain containers into the same modules of `target` (an instance of the same class):
    load_state_dict cannot, as they are not in the state_dict. Each module's own tensors, so
    that containers held inside held modules are copied too."""
    mine = held_modules(target)
    with torch.no_grad():
        for path, module in held_modules(reference).items():
            if path not in mine:
                continue
            other = mine[path]
            for name, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
                getattr(other, name).copy_(tensor)
            other.training = module.training


def _depends_on_mode(module: torch.nn.Module) -> bool:
    """Whether a torch.nn module computes another result in training mode: dropout (of any
    probability but 0), batch statistics (BatchNorm, InstanceNorm that tracks running ones)."""
    if isinstance(module, (torch.nn.modules.dropout._DropoutNd, torch.nn.RNNBase, torch.nn.MultiheadAttention)):
        return getattr(module, "p", getattr(module, "dropout", 0)) > 0
    return isinstance(module, torch.nn.modules.batchnorm._NormBase) and module.track_running_stats


def check_modes(model: torch.nn.Module) -> None:
    """Refuse a module in a plain container left in training mode where that changes its result:
    the user's model.eval() does not reach it, so their forward runs it so (dropout, batch
    statistics), and layer-wise inference would compute something else."""
    for path, module in held_modules(model).items():
        if module.training and _depends_on_mode(module):
            raise UnsupportedOperationError(
                f"{accessor(model, path)} ({type(module).__name__}) is kept in a plain Python list or dict, "
                "where model.eval() does not reach it: forward runs it in training mode (dropping at random, "
                "or normalising by the statistics of the rows it is given), also when you evaluate. Keep such "
                "modules in nn.ModuleList or nn.ModuleDict, so that model.eval() reaches them."
            )


def held_parameters_note(model: torch.nn.Module) -> tuple[str, ...]:
    """One line for the notes where modules in plain containers hold parameters or buffers:
    exact for the instance gnn-codegen built, but the user's load_state_dict leaves them out."""
    registered_too = {id(m) for m in model.modules()}  # `self.order = [self.convs[1], ...]`: saved there
    weighted = sorted(f"self.{path + '.' if path else ''}{key}" for path, _, key, value in _containers(model)
                      if any(id(m) not in registered_too and next(itertools.chain(m.parameters(), m.buffers()), None)
                             is not None for m in (value.values() if isinstance(value, dict) else value)))
    if not weighted:
        return ()
    return (
        f"{', '.join(weighted)} {'keeps' if len(weighted) == 1 else 'keep'} modules with weights in a plain "
        "Python list or dict: the generated method calls them as forward does, but their weights are in "
        "neither model.parameters() nor the state_dict, so load_state_dict does not restore them (in "
        "nn.ModuleList or nn.ModuleDict it would)",
    )


def unregistered_module_message() -> str:
    """For a module fx still finds no name for: one in a container that cannot stand as a
    ModuleList or ModuleDict (modules mixed with other values, keys that are not names), or one
    held elsewhere (an attribute of a plain object, a module made in forward)."""
    return (
        "forward calls a module that the model does not register and that gnn-codegen cannot name by a "
        "path through the model's attributes (a list or dict mixing modules with other values, keys that "
        "are not strings, a module held by a plain object or made in forward). Keep such modules in an "
        "nn.ModuleList, an nn.ModuleDict, or a plain list or dict of modules alone on the model."
    )

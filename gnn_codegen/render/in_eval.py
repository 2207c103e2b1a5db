"""Stage 6, render: what `self.eval()` at inference's start changes in this model, said on its
line: the dropouts that drop nothing and the batch norms that read their running statistics,
by the names forward calls them (`self.dropout`, `self.layers[0].feat_drop`), where a generic
"no dropout, BatchNorm's running statistics" was noise in a model with neither and hid the
dropout a model has. Dropouts of p=0 (GATConv's defaults) change nothing and are not named."""

from __future__ import annotations

import re
import textwrap

import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from gnn_codegen.lower.accessors import accessor

SHOWN = 2  # names said per kind; the rest are counted
WIDTH = 80  # black's 88 columns less the method body's indent

NEITHER = ("self.eval()  # forward in eval mode (it runs no dropout or batch norm)",)

# forward's calls that drop in training mode (`F.dropout(h, self.dropout, self.training)`, GCNII's)
_DROPPING = (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout)


def in_eval(model: nn.Module, traced: fx.GraphModule) -> tuple[str, ...]:
    """inference's `self.eval()` line for `model`, whose forward traced as `traced`, with what
    it changes said after it, or above it where that is longer than a line."""
    said = _changed(model, any(n.op == "call_function" and n.target in _DROPPING for n in traced.graph.nodes))
    if said is None:
        return NEITHER
    if len(f"self.eval()  # {said}") <= WIDTH:
        return (f"self.eval()  # {said}",)
    return (*(f"# {line}" for line in textwrap.wrap(said, WIDTH - 2, break_on_hyphens=False)), "self.eval()")


def _changed(model: nn.Module, functional: bool) -> str | None:
    dropped, normed = [], []
    for path, module in model.named_modules():
        if isinstance(module, nn.modules.dropout._DropoutNd) and module.p > 0:
            dropped.append(accessor(model, path))
        elif isinstance(module, nn.modules.batchnorm._BatchNorm) and module.track_running_stats:
            normed.append(accessor(model, path))
    dropped += ["forward's F.dropout"] if functional else []
    parts = ([f"no dropout in {_listed(dropped)}"] if dropped else []) + (
        [f"{_listed(normed)} with {'its' if len(normed) == 1 else 'their'} running statistics"] if normed else [])
    return f"forward in eval mode: {'; '.join(parts)}" if parts else None


def _listed(names: list[str]) -> str:
    names = _indexed(names)
    shown = names[:SHOWN]
    more = len(names) - len(shown)
    if more:
        return f"{', '.join(shown)} and {more} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _indexed(names: list[str]) -> list[str]:
    """Names alike but for their list indices said once, each index that differs among them as
    i, j (`self.layers[i].feat_drop` for the dropout of every layer; `self.blocks[i][1]`), in
    order of first appearance."""
    index = re.compile(r"\[\d+\]")
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(index.sub("[]", name), []).append(name)
    said: dict[str, str] = {}
    for alike in groups.values():
        # each name as text, [index], text, ...: the indices at the odd positions, alike in number
        pieces = [re.split(r"(\[\d+\])", name) for name in alike]
        letters = iter("ijkl")
        varying = {k: f"[{next(letters, 'n')}]" for k in range(1, len(pieces[0]), 2)
                   if len({p[k] for p in pieces}) > 1}
        for name, parts in zip(alike, pieces):
            said[name] = "".join(varying.get(k, part) for k, part in enumerate(parts))
    return list(dict.fromkeys(said[n] for n in names))

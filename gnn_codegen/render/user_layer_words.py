"""Stage 6, render, the words that name the passes of user's layers that each run a convolution
per graph they derive (user_layers.py: HAN's `HANLayer`, a GAT per metapath graph), where those
passes are written out one by one. A reviewer reads the user's layers, not the generated count of
(layer, graph) passes: such a pass's function is named for its user's layer and graph,
`layer0_pa_ap`, as its rows are (`feat0_pa_ap`), not `layer_1`; a pass over ranges of nodes
between two of those layers is named and described for them, `before_layer1`, "Before
self.layers[1], once per node, from what self.layers[0] stored.", not `before_layer_3`, "Before
layer 3, ... from what layer 2 stored.", which count passes; other stages keep the plan's
words."""

from __future__ import annotations

import re

from gnn_codegen.cut.plan import Plan, Stage
from gnn_codegen.render.user_layers import Part

_LAST_NUMBER = re.compile(r"\[(\d+)\]$")


def owner_index(part: Part) -> int | None:
    """0 for a part of `self.layers[0]`; None for a user's layer no list holds by index."""
    index = _LAST_NUMBER.search(part.owner)
    return int(index.group(1)) if index else None


def part_function_name(part: Part, graph_suffix: str) -> str | None:
    """`layer0_pa_ap` for self.layers[0]'s pass on g_pa_ap; None where the layer has no index."""
    index = owner_index(part)
    return None if index is None else f"layer{index}_{graph_suffix}"


def between_user_layers(plan: Plan, parts: dict[int, Part], stage: Stage) -> tuple[Part, Part] | None:
    """(the part that ends the user's layer before, the part that starts the one after) for a
    pass over ranges of nodes between two user's layers of parts (HAN's semantic attention's
    weighted sum and the next layer's GAT sources), each with an index; None otherwise."""
    if not stage.node_pass or stage.layer >= plan.num_layers:
        return None
    before, after = _part_of_layer(plan, parts, stage.layer), _part_of_layer(plan, parts, stage.layer + 1)
    if before is None or after is None or before.owner == after.owner or owner_index(after) is None:
        return None
    return before, after


def stage_name(plan: Plan, parts: dict[int, Part], stage: Stage) -> str:
    """plan.stage_name, in the user's layers where the stage is one of their parts or a pass
    between two of them: `self.layers[0], metapath 2 of 2`, `pass before self.layers[1]`."""
    if not stage.node_pass and stage.index in parts:
        return parts[stage.index].label()
    between = between_user_layers(plan, parts, stage)
    if between is not None:
        return f"pass before {between[1].owner}"
    return plan.stage_name(stage)


def _part_of_layer(plan: Plan, parts: dict[int, Part], layer: int) -> Part | None:
    """The Part of the plan's layer numbered `layer` (1 for the first), None where it is none."""
    for stage in plan.stages:
        if stage.index and not stage.node_pass and stage.layer == layer:
            return parts.get(stage.index)
    return None

"""Stage 5a, cut (policy): decide in which stage every op runs. A pure function on a small
torch-free dependency graph, separate from building the Plan (plan.py), as fx's split_module
separates its policy callback from the mechanism.

Message-passing depth d(v) = max(d(inputs)) + [v is message passing]. A message-passing op of
depth k runs in stage k. Any other op may run in any stage from its latest producer's to its
earliest consumer's; the rule here places it as early as possible (right after the message
passing it depends on), and never before stage 1, so input-only work runs inside layer 1."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CutNode:
    name: str
    deps: tuple[str, ...]  # ops whose values it reads (inline expressions looked through)
    is_mp: bool = False
    is_input: bool = False


@dataclass(frozen=True)
class Placement:
    stage: tuple[tuple[str, int], ...]  # op name -> stage (0 for inputs)
    num_stages: int

    def of(self, name: str) -> int:
        return dict(self.stage)[name]


def mp_depths(nodes: tuple[CutNode, ...]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for node in nodes:
        depth[node.name] = max((depth[d] for d in node.deps), default=0) + int(node.is_mp)
    return depth


def place_asap(nodes: tuple[CutNode, ...]) -> Placement:
    """Every op as early as its producers allow: cut right after each message-passing op."""
    depth = mp_depths(nodes)
    stage: dict[str, int] = {}
    for node in nodes:
        if node.is_input:
            stage[node.name] = 0
        elif node.is_mp:
            stage[node.name] = depth[node.name]
        else:
            stage[node.name] = max([1] + [stage[d] for d in node.deps])
    return Placement(tuple(stage.items()), max(depth.values(), default=0))

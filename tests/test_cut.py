"""The cut policy on small torch-free DAGs: stages follow message-passing depth, every other op
sits between its producers and consumers, as early as possible and never before stage 1."""

from __future__ import annotations

from gnn_codegen.cut import CutNode, mp_depths, place_asap


def N(name: str, *deps: str, mp: bool = False, inp: bool = False) -> CutNode:
    return CutNode(name, tuple(deps), is_mp=mp, is_input=inp)


def test_plain_stack() -> None:
    nodes = (N("x", inp=True), N("conv1", "x", mp=True), N("relu", "conv1"), N("conv2", "relu", mp=True))
    placement = place_asap(nodes)
    assert dict(placement.stage) == {"x": 0, "conv1": 1, "relu": 1, "conv2": 2}
    assert placement.num_stages == 2


def test_encoder_runs_in_layer_one_and_skip_right_after_its_producer() -> None:
    nodes = (
        N("x", inp=True), N("enc", "x"), N("conv1", "enc", mp=True), N("conv2", "conv1", mp=True),
        N("skip", "x"), N("add", "conv2", "skip"),
    )
    stage = dict(place_asap(nodes).stage)
    assert stage["enc"] == 1 and stage["skip"] == 1 and stage["add"] == 2


def test_two_convs_at_one_depth_share_a_stage() -> None:
    nodes = (N("x", inp=True), N("a", "x", mp=True), N("b", "x", mp=True), N("cat", "a", "b"),
             N("c", "cat", mp=True))
    assert mp_depths(nodes) == {"x": 0, "a": 1, "b": 1, "cat": 1, "c": 2}
    assert place_asap(nodes).num_stages == 2


def test_every_op_lies_between_its_producers_and_consumers() -> None:
    nodes = (N("x", inp=True), N("e", "x"), N("c1", "e", mp=True), N("r", "c1", "e"),
             N("c2", "r", mp=True), N("o", "c2", "r", "e"))
    stage = dict(place_asap(nodes).stage)
    for node in nodes:
        for d in node.deps:
            assert stage[d] <= stage[node.name]

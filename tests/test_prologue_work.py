"""The first layer's work on its destination rows alone (a skip's Linear) goes where later
layers' goes, where its input rows are made: the prologue, where one runs anyway
(cut/prologue_work.py). On small torch-free graphs of the cut: the search leaves it in the
first layer (reading forward's input again costs less than storing its result), the rule moves
it where the prologue consumes the input, and leaves it where a later stage reads the input
again (ChebConv's second hop) or where no prologue runs."""

from __future__ import annotations

from gnn_codegen.cut.cost import evaluate
from gnn_codegen.cut.placement import CutNode, check_placement
from gnn_codegen.cut.prologue_work import first_layer_work_in_prologue
from gnn_codegen.cut.search import place_optimal

F = 8.0


def _node(name: str, *deps: str, width: int = 16, **kw) -> CutNode:
    return CutNode(name, tuple(deps), row_bytes=width * 4, **kw)


def _skip_stack(input_read_later: bool = False) -> tuple[CutNode, ...]:
    """x (24 wide) -> a skip Linear (16 wide) and a convolution's work per source row (4
    wide: a narrowing GraphConv's weight), the convolution, their sum; then the same again on
    the sum (the second layer's skip and work)."""
    nodes = [
        _node("x", width=24, is_input=True),
        _node("fc0", "x", width=4, source_work=True),
        _node("skip0", "x"),
        _node("conv0", "fc0", width=4, is_mp=True, roles=(("fc0", ("src_in_place",)),)),
        _node("sum0", "skip0", "conv0"),
        _node("fc1", "sum0", width=4, source_work=True),
        _node("skip1", "sum0"),
        _node("conv1", "fc1", width=4, is_mp=True, roles=(("fc1", ("src_in_place",)),)),
    ]
    last = ("skip1", "conv1", "x") if input_read_later else ("skip1", "conv1")
    nodes.append(_node("out", *last, is_output=True))
    return tuple(nodes)


def test_the_search_leaves_the_first_skip_in_its_layer() -> None:
    """Why the rule exists: forward's input costs nothing to store, so reading it again on the
    first layer's destination rows is cheaper than storing the skip's result; the second
    layer's skip runs at the end of the first, where its input is made."""
    stage = dict(place_optimal(_skip_stack(), F).stage)
    assert stage["fc0"] == 0 and stage["skip0"] == 1
    assert stage["fc1"] == 1 and stage["skip1"] == 1


def test_the_first_skip_moves_into_the_prologue() -> None:
    nodes = _skip_stack()
    before = place_optimal(nodes, F)
    after = first_layer_work_in_prologue(nodes, before)
    check_placement(nodes, after)
    stage = dict(after.stage)
    assert stage["skip0"] == 0 and stage["fc0"] == 0
    assert {n: k for n, k in stage.items() if n != "skip0"} == {n: k for n, k in before.stage if n != "skip0"}
    # its price, which --explain shows: the skip's rows stored and read back where x was read
    assert evaluate(nodes, after, F).total - evaluate(nodes, before, F).total == 16 * 4 * 2 - 24 * 4


def test_no_prologue_none_is_added() -> None:
    """Convolutions that read their input as it is (no work per source row): no prologue
    runs, and none is added for the skip (a pass reads and writes every row)."""
    nodes = (
        _node("x", is_input=True),
        _node("skip0", "x"),
        _node("conv0", "x", is_mp=True, roles=(("x", ("src_in_place",)),)),
        _node("sum0", "skip0", "conv0"),
        _node("skip1", "sum0"),
        _node("conv1", "sum0", is_mp=True, roles=(("sum0", ("src_in_place",)),)),
        _node("out", "skip1", "conv1", is_output=True),
    )
    before = place_optimal(nodes, F)
    assert not any(k == 0 for n, k in before.stage if n != "x")
    assert first_layer_work_in_prologue(nodes, before) == before


def test_an_input_a_later_stage_reads_again_keeps_the_work_in_its_layer() -> None:
    """forward reads x again after the layers (ChebConv's second hop reads its input on
    destination rows): the prologue does not consume x, and the move would store one value
    more and save no read; later layers' counterparts then run in their own layer too."""
    nodes = _skip_stack(input_read_later=True)
    before = place_optimal(nodes, F)
    assert dict(before.stage)["skip0"] == 1
    assert first_layer_work_in_prologue(nodes, before) == before


def test_a_chain_of_such_work_moves_whole() -> None:
    """A skip of two ops (Linear, then an activation): both move, the chain's end is stored."""
    nodes = list(_skip_stack())
    at = next(i for i, n in enumerate(nodes) if n.name == "skip0")
    nodes[at:at + 1] = [_node("lin0", "x"), _node("skip0", "lin0")]
    nodes = tuple(nodes)
    after = dict(first_layer_work_in_prologue(nodes, place_optimal(nodes, F)).stage)
    assert after["lin0"] == 0 and after["skip0"] == 0

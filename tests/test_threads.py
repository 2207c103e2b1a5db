"""The runtime's choice of torch threads for its batches (templates/threads.py.j2): it runs each
batch on the count that has run the layer's batches fastest, tries a neighbouring count on at
most an eighth of them, and gives torch the user's count back after every layer. The clock is
a fake one here, whose seconds depend on the count in force: timings never enter a test."""

from __future__ import annotations

import pytest
import torch

from gnn_codegen.verify.hetero import check_hetero
from gnn_codegen.render.runtime import runtime_class
from gnn_codegen.verify.check import check as check_homogeneous
from tests.cases import CASES_BY_NAME, generate_case


class _FakeClock:
    """time.perf_counter for the runtime: each batch adds what it costs, cost(batch index,
    torch's thread count then)."""

    def __init__(self, cost):
        self.cost, self.now = cost, 0.0

    def perf_counter(self) -> float:
        return self.now

    def run(self, i: int) -> None:
        self.now += self.cost(i, torch.get_num_threads())


def _counts_used(monkeypatch, threads: int, cost, batches: int = 80) -> list[int]:
    """The thread count of each batch of a layer, where cost is {count: seconds} or cost(i, count)."""
    runtime = runtime_class()
    clock = _FakeClock(cost if callable(cost) else lambda i, count: cost[count])
    monkeypatch.setattr(runtime.__init__.__globals__["time"], "perf_counter", clock.perf_counter)
    batches_object = runtime.__new__(runtime)
    batches_object.threads = batches_object.fastest = threads
    batches_object.gap, batches_object.tries = 8, 0
    used = []
    for i, _ in enumerate(batches_object._paced(range(batches), lambda batch: 1)):
        used.append(torch.get_num_threads())
        clock.run(i)
    return used


@pytest.fixture
def user_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(4)
    yield 4
    torch.set_num_threads(before)


def test_a_busy_core_moves_the_batches_to_fewer_threads(monkeypatch, user_threads) -> None:
    # beside a busy process: every count above one thread waits for a preempted thread
    used = _counts_used(monkeypatch, user_threads, {4: 5.0, 2: 3.0, 1: 1.0})
    assert used[:3] == [4, 4, 2]  # the user's count, then a neighbour tried
    assert used[-8:].count(1) >= 7  # it walked down to one thread and stays there
    assert torch.get_num_threads() == user_threads  # the user's count back after the layer


def test_a_quiet_machine_keeps_the_users_count_but_for_a_few_tries(monkeypatch, user_threads) -> None:
    # each try of a slower count puts the next one further away: 3 tries in 80 batches
    used = _counts_used(monkeypatch, user_threads, {4: 1.0, 2: 2.0, 1: 4.0})
    assert used.count(4) >= len(used) - 3
    assert torch.get_num_threads() == user_threads


def test_a_core_taken_halfway_is_noticed_within_a_few_batches(monkeypatch, user_threads) -> None:
    quiet, busy = {4: 1.0, 2: 2.0, 1: 4.0}, {4: 12.0, 2: 6.0, 1: 4.0}
    used = _counts_used(monkeypatch, user_threads, lambda i, count: (quiet if i < 40 else busy)[count])
    assert used[:40].count(4) >= 37
    assert 1 in used[40:48]  # fewer threads tried at once, and down to one within a few batches
    assert used[50:].count(1) >= 28  # and kept there, but for a try or two


def test_one_thread_is_left_alone(monkeypatch) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert set(_counts_used(monkeypatch, 1, {1: 1.0})) == {1}
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("name", ["sage", "gat", "rgcn_hetero", "entity_classify"])
def test_inference_gives_the_users_count_back_and_forwards_result(name: str, user_threads) -> None:
    # batches of 7: tens of batches a layer, so other counts are tried in every layer
    generated = generate_case(CASES_BY_NAME[name])
    check = check_hetero if CASES_BY_NAME[name].heterogeneous else check_homogeneous
    result = check(generated, num_nodes=400, batch_sizes=(7,))
    assert result.ok, result.max_abs_diff
    assert torch.get_num_threads() == user_threads


def test_a_later_call_starts_from_the_count_the_last_one_ran_fastest_on(monkeypatch, user_threads) -> None:
    """A call of a few batches (changed=, nodes=) has too few to find the fastest count itself: on a
    busy machine it would run them all on the user's count, each operation waiting for a preempted
    thread. It starts from the count the last call of the process found, and still tries others."""
    import dgl

    runtime = runtime_class()
    monkeypatch.setattr(runtime, "fastest_seen", None, raising=False)  # this test's memory alone
    g = dgl.graph(([0], [1]))

    def later():
        return runtime(torch.nn.Linear(1, 1), g, 16, "cpu", 2**30, False).fastest

    assert later() == user_threads  # nothing learnt yet: the user's count
    used = _counts_used(monkeypatch, user_threads, {4: 5.0, 2: 3.0, 1: 1.0})
    assert used[-1] == 1 and later() == 1
    torch.set_num_threads(2)  # the user changed the count: theirs again
    assert later() == 2


def test_a_batch_of_ids_is_counted_once(monkeypatch) -> None:
    """_with_companion and _paced both ask a batch's work (its nodes and in-edges): for a batch of
    IDs (changed=, nodes=) its in-edges are counted once, not once per question."""
    import dgl
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counting(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))

    g = dgl.graph((torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 3, 0])))
    batches = runtime_class()(torch.nn.Linear(1, 1), g, 16, "cpu", 2**30, False)
    batch = torch.tensor([1, 3])
    with Counting() as first:
        assert batches._work(batch, True) == 4
    with Counting() as second:
        assert batches._work(batch, True) == 4 and batches._work(batch, False) == 2
    assert first.calls and not second.calls

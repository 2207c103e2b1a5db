"""The files of storage= across calls (issue 39): a result returned never changes, the file a
new result replaces is freed off the call (linked to a dead name, removed by a thread), a dead
file a killed process left is removed by the next call, and a call stopped while it replaces
the result leaves storage usable and nothing behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from gnn_codegen.verify.harness import allclose, run_inference
from tests.graph_updates import updated
from tests.test_incremental import _gcn

CALL = dict(batch_size=16, device="cpu")


def _every_file_deferred(monkeypatch: pytest.MonkeyPatch, model) -> None:
    """These graphs' files are small, which _replace removes at once: here each one goes, as a
    large one does, through a dead name and a thread."""
    runtime = type(model).forward.__globals__["_FullNeighbourBatches"]
    monkeypatch.setattr(runtime, "deferred_bytes", 0)


def _dead_files(storage: Path) -> list[str]:
    return sorted(p.name for p in storage.iterdir() if p.name.startswith("dead_"))


def _leftovers(storage: Path) -> list[str]:
    """Files a call makes and renames or removes (mkstemp's tmp*.npy, dead_*.npy)."""
    return sorted(p.name for p in storage.iterdir() if p.name.startswith(("tmp", "dead_")))


def _removed_by_threads() -> None:
    """Wait for the threads that remove dead files (_replace), as an exiting process does."""
    for thread in threading.enumerate():
        if thread.name.startswith("remove ") and thread.name.endswith(".npy"):
            thread.join()


def test_a_result_returned_never_changes_after_later_calls(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call's result, as returned and as another process maps result.npy (a map of the
    file by its path), stays as it was through the calls after it, changed= ones included."""
    generated, model, g, inputs = _gcn(tmp_path)
    _every_file_deferred(monkeypatch, model)
    results, maps = [], []
    for step in range(3):
        g, inputs, changed = updated(generated, g, inputs, seed=step)
        result = run_inference(model, generated, g, inputs, **CALL, storage=str(tmp_path),
                               changed=changed if step != 1 else "auto")
        results.append((result, result.clone()))
        maps.append(np.load(tmp_path / "result.npy", mmap_mode="r"))
        assert torch.equal(torch.from_numpy(np.array(maps[-1])), result)
    assert not torch.equal(results[0][1], results[1][1])  # the updates changed the results
    for (result, copy), mapped in zip(results, maps):
        assert torch.equal(result, copy)
        assert torch.equal(torch.from_numpy(np.array(mapped)), copy)
    _removed_by_threads()
    assert _leftovers(tmp_path) == []


def test_the_file_a_result_replaces_is_removed_off_the_call(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The old result.npy is not unlinked by the rename (the kernel would free its pages inside
    the call): a dead name keeps it, a thread removes that. A process killed before its thread
    ran (threads that never start) leaves the dead file; the next call on storage removes it,
    and no file of another name."""
    generated, model, g, inputs = _gcn(tmp_path)
    _every_file_deferred(monkeypatch, model)
    old = os.stat(tmp_path / "result.npy")
    started = []

    class NeverStarted:  # the process is killed before the thread runs
        def __init__(self, target, args, name):
            self.name = name

        def start(self):
            started.append(self.name)

    (tmp_path / "dead_notes.npy").write_bytes(b"the user's")  # not a name _replace makes
    g, inputs, changed = updated(generated, g, inputs, seed=5)
    with monkeypatch.context() as patch:
        patch.setattr(threading, "Thread", NeverStarted)
        first = run_inference(model, generated, g, inputs, **CALL, storage=str(tmp_path), changed=changed)
    # the old result's (and on this small graph, where the change reaches most rows, the kept
    # layers' files that new ones replaced)
    dead = [name for name in _dead_files(tmp_path) if name != "dead_notes.npy"]
    assert sorted(started) == ["remove " + str(tmp_path / name) for name in dead]
    assert old.st_ino in [os.stat(tmp_path / name).st_ino for name in dead]  # whole
    copy = first.clone()
    type(model).forward.__globals__["_FullNeighbourBatches"].deleting.clear()  # a new process
    second = run_inference(model, generated, g, inputs, **CALL, storage=str(tmp_path), changed="auto")
    assert not set(dead) & set(_dead_files(tmp_path))  # removed by the call, not left for a thread
    _removed_by_threads()
    assert _dead_files(tmp_path) == ["dead_notes.npy"]
    assert torch.equal(first, copy) and allclose(second, first, atol=1e-6, rtol=1e-6)


def test_a_call_stopped_while_it_replaces_the_result_leaves_storage_usable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped at the rename of the new result onto result.npy (after the old one was linked to
    a dead name): result.npy is the old result, no copy nor dead name is left, and the next call
    is exact."""
    generated, model, g, inputs = _gcn(tmp_path)
    _every_file_deferred(monkeypatch, model)
    before = np.load(tmp_path / "result.npy")
    new_g, new_inputs, changed = updated(generated, g, inputs, seed=6)
    replace = os.replace

    def stopped(source, destination, *args, **kwargs):
        if str(destination).endswith("result.npy"):
            assert _dead_files(tmp_path)  # the old result already has its dead name
            raise KeyboardInterrupt
        return replace(source, destination, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", stopped)
        with pytest.raises(KeyboardInterrupt):
            run_inference(model, generated, new_g, new_inputs, **CALL, storage=str(tmp_path), changed=changed)
    assert np.array_equal(np.load(tmp_path / "result.npy"), before)
    assert _leftovers(tmp_path) == []
    fresh = run_inference(model, generated, new_g, new_inputs, **CALL)
    again = run_inference(model, generated, new_g, new_inputs, **CALL, storage=str(tmp_path), changed="auto")
    assert allclose(again, fresh, atol=1e-4, rtol=1e-4)
    _removed_by_threads()
    assert _leftovers(tmp_path) == []

"""inference(..., nodes=ids) returns forward's rows for ids alone, in their order, computing
each layer only for the nodes the layers after it read; inference(..., storage=DIR) keeps what
it stores in .npy files in DIR, never writes into its inputs (read-only memory maps here: a
write would crash), returns its results over files left in DIR and deletes the others; and its
memory is bounded by a batch, not by the graph."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    full_graph_forward,
    gather_sources_always,
    generated_model,
    import_source,
    make_inputs,
    max_difference,
    random_graph,
    random_graph_for,
    returns_edge_rows,
    rows_for,
    run_inference,
    some_nodes,
    with_tables,
)
from gnn_codegen.ir import iter_refs
from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.simulated_device import SimulatedDevice
from tests.cases import CASES_BY_NAME, REPO, Case, all_cases, generate_case

CASES = all_cases()
NUM_NODES = 301


def _prepared(case: Case, seed: int, gather: bool = False):
    """The generated model with perturbed weights, a graph it accepts, inputs, forward's result."""
    generated = generate_case(case)
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    reference.eval()
    module = import_source(generated.source, generated.loaded.path.parent)
    if gather:
        gather_sources_always(module)
    model = generated_model(generated, module, reference)
    for zero_in_degree in (True, False):  # GATConv refuses nodes without in-edges
        g = random_graph_for(generated, NUM_NODES, seed=seed, zero_in_degree=zero_in_degree)
        inputs = make_inputs(generated, NUM_NODES, seed, g.num_edges())
        try:
            expected = full_graph_forward(reference, generated, g, inputs)
        except Exception:
            if not zero_in_degree:
                raise
            continue
        return generated, module, model, g, inputs, expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("sources", ["in place", "gathered"])
def test_nodes_gives_forwards_rows_of_those_nodes(case: Case, sources: str) -> None:
    generated, _, model, g, inputs, expected = _prepared(case, 0, gather=sources == "gathered")
    if returns_edge_rows(generated):
        with pytest.raises(ValueError, match="nodes= is not taken: it selects nodes, and forward also returns values per edge"):
            run_inference(model, generated, g, inputs, batch_size=7, device="cpu", nodes=torch.arange(3))
        return
    # none, one, a few (one twice, in no order), most of the graph (layers switch to all nodes)
    for count, batch_size in ((0, 7), (1, 7), (12, 5), (12, NUM_NODES + 1), (250, 64)):
        nodes = some_nodes(NUM_NODES, count, seed=count)
        actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu", nodes=nodes)
        wanted = rows_for(generated, expected, nodes)
        assert allclose(flatten(actual), wanted, atol=1e-4, rtol=1e-4), (
            f"{count} nodes, batch_size={batch_size}: max |difference| {max_difference(flatten(actual), wanted)}"
        )
    nodes = some_nodes(NUM_NODES, 12, seed=1).int()  # int32 IDs
    actual = run_inference(model, generated, g, inputs, batch_size="auto", device="cpu", nodes=nodes)
    assert allclose(flatten(actual), rows_for(generated, expected, nodes.long()), atol=1e-4, rtol=1e-4)


def _read_only(inputs: list[torch.Tensor], folder: Path) -> list[torch.Tensor]:
    """The inputs as read-only memory maps of .npy files, as a user loads features too big for
    memory: a write into one crashes the process."""
    mapped = []
    for i, t in enumerate(inputs):
        np.save(folder / f"input{i}.npy", t.numpy())
        with warnings.catch_warnings():  # "The given NumPy array is not writable": exactly
            warnings.simplefilter("ignore", UserWarning)
            mapped.append(torch.from_numpy(np.load(folder / f"input{i}.npy", mmap_mode="r")))
    return mapped


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_storage_keeps_results_in_files_and_never_writes_its_inputs(case: Case, tmp_path: Path) -> None:
    # source rows gathered, as where they do not fit in the page cache (else read in place)
    generated, _, model, g, inputs, expected = _prepared(case, 1, gather=True)
    inputs = _read_only(inputs, tmp_path)
    storage = tmp_path / "stored"
    actual = run_inference(model, generated, g, inputs, batch_size=7, device="cpu", storage=str(storage))
    assert allclose(actual, expected, atol=1e-4, rtol=1e-4), max_difference(actual, expected)
    with_rows = [n for n in iter_refs(generated.program.output) if generated.attributes[n].rows in ("node", "edge")]
    names = ["result.npy"] if len(with_rows) == 1 else [f"result_{i}.npy" for i in range(len(with_rows))]
    assert sorted(os.listdir(storage)) == sorted(names)  # every other file deleted
    in_files = [t for t, n in zip(flatten(actual), iter_refs(generated.program.output)) if n in with_rows]
    for name, t in zip(names, in_files):
        assert allclose(torch.from_numpy(np.load(storage / name)).view(t.dtype), t, atol=0, rtol=0)
    if not returns_edge_rows(generated):  # and for some nodes, again over what is there
        nodes = some_nodes(NUM_NODES, 12, seed=2)
        actual = run_inference(model, generated, g, inputs, batch_size=5, device="cpu", nodes=nodes,
                               storage=storage)
        assert allclose(flatten(actual), rows_for(generated, expected, nodes), atol=1e-4, rtol=1e-4)
        assert sorted(os.listdir(storage)) == sorted(names)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_on_a_simulated_gpu_with_nodes_and_storage(case: Case, tmp_path: Path) -> None:
    """The model on a (simulated) GPU, the graph and inputs on the host, the results in files
    and for some nodes: no host tensor meets a device tensor, and the rows are forward's."""
    generated, _, model, g, inputs, expected = _prepared(case, 2)
    nodes = None if returns_edge_rows(generated) else some_nodes(NUM_NODES, 12, seed=3)
    with with_tables(model, generated, inputs), SimulatedDevice() as sim:
        sim.move_model(model)
        sim.on_host(*inputs)
        actual = run_inference(model, generated, g, inputs, batch_size=7, device=sim.device, tables_set=True,
                               nodes=nodes, storage=str(tmp_path))
    wanted = expected if nodes is None else rows_for(generated, expected, nodes)
    assert allclose(flatten(actual), flatten(wanted), atol=1e-4, rtol=1e-4)


def _counting_rows(name: str, num_nodes: int, avg_degree: int = 5):
    """The case's generated module and model, a graph and inputs, and the list where each
    `map` call of the runtime records how many destination nodes it computes."""
    generated = generate_case(CASES_BY_NAME[name])
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module)
    g = random_graph(num_nodes, avg_degree=avg_degree, seed=0)
    (x,) = make_inputs(generated, num_nodes, 0)
    runtime, computed = module._FullNeighbourBatches, []
    original = runtime.map

    def recording(self, layer, *args, nodes=None, **kwargs):
        computed.append(self.num_nodes if nodes is None else len(nodes))
        return original(self, layer, *args, nodes=nodes, **kwargs)

    runtime.map = recording
    return runtime, model, g, x, computed


def test_layers_compute_only_the_nodes_the_next_layers_read() -> None:
    """For 5 nodes of a sparse graph, each layer's batches cover that layer's frontier, not
    the graph: the last layer the 5 nodes, each one before it their in-neighbours too."""
    runtime, model, g, x, computed = _counting_rows("sage", 3000, avg_degree=2)
    nodes = torch.tensor([7, 2999, 1500, 42, 7, 100])
    result = model.inference(g, x, 64, "cpu", nodes=nodes)
    needed = runtime(model, g, 64, "cpu", 2**30, False).needed(nodes, 3)
    # layer 1, layer 2 (with fc_neigh of its rows, for layer 3), layer 3
    assert computed == [len(needed[1]), len(needed[2]), 5]
    assert len(needed[3]) == 5 < len(needed[2]) < len(needed[1]) < 3000 / 4
    assert allclose(result, model([g] * 3, x)[nodes], atol=1e-5, rtol=1e-5)


def test_a_reduction_over_all_nodes_makes_the_layers_before_it_compute_all_nodes() -> None:
    """PairNorm's means over all nodes: every layer up to the last reduction computes every
    node; after it, the pass that scales the rows and computes GraphConv's norm per source row
    only the in-neighbours of the nodes asked for, and the last layer only those."""
    _, model, g, x, computed = _counting_rows("gcn_pairnorm", 500)
    nodes = torch.tensor([3, 1, 4])
    result = model.inference(g, x, 64, "cpu", nodes=nodes)
    assert computed[-1] == 3 and 3 < computed[-2] < 100 and set(computed[:-2]) == {500}, computed
    assert allclose(result, model(g, x)[nodes], atol=1e-4, rtol=1e-4)


def test_nodes_must_be_node_ids() -> None:
    generated, _, model, g, inputs, _ = _prepared(CASES_BY_NAME["sage"], 0)
    for wrong, message in ((torch.tensor([0.5]), "1-D tensor of node IDs, not 1-D torch.float32"),
                           (torch.tensor([[1]]), "not 2-D"), ([1, 2], "not list"),
                           (torch.tensor([NUM_NODES]), f"IDs of g's {NUM_NODES} nodes"),
                           (torch.tensor([-1]), "IDs of g's")):
        with pytest.raises(ValueError, match=message):
            run_inference(model, generated, g, inputs, batch_size=7, device="cpu", nodes=wrong)


MEMORY_SCRIPT = """
import sys
import numpy as np, torch, dgl
sys.path.insert(0, sys.argv[1])
import generated
from gnn_codegen.verify.harness import random_graph
from tests.peak_memory import bytes_in_files, report_out_of_core

N, storage = 200_000, sys.argv[2]
torch.manual_seed(0)
model = generated.SAGE(64, 64, 16).eval()
g = random_graph(N, avg_degree=5, seed=0)
g.create_formats_()  # the graph's structure is the caller's: made before the call
np.save(storage + "/x.npy", torch.randn(N, 64).numpy())
x = torch.from_numpy(np.load(storage + "/x.npy", mmap_mode="r"))
stored = bytes_in_files(generated._FullNeighbourBatches)
g_small = random_graph(1000, seed=0)  # torch and dgl warmed up on a small call
model.inference(g_small, x[:1000].clone(), 100, "cpu")
model.inference(g_small, x[:1000].clone(), 100, "cpu", storage=storage + "/warm")

report_out_of_core(lambda storage: model.inference(g, x, 1000, "cpu", storage=storage), storage + "/run", stored)
"""


def test_out_of_core_memory_is_bounded_by_a_batch_not_by_the_graph(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Peak anonymous memory (RssAnon, sampled) of a call on 200,000 nodes whose inputs are a
    read-only memory map: with storage=, at most 0.35x the bytes it stores in files; in memory,
    about those bytes (which shows the measurement sees them)."""
    # generated for the widths the script builds SAGE with (64, 64, 16): inference refuses a
    # model built otherwise than the one it was generated for
    case = CASES_BY_NAME["sage"]
    monkeypatch.chdir(REPO)
    generated = generate_all(case.target, replace(case.options, init=json.dumps(
        {"in_size": 64, "hid_size": 64, "out_size": 16})))
    (tmp_path / "generated.py").write_text(generated.source)
    run = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(tmp_path), str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    assert measured["stored"] == 200_000 * (64 + 64 + 16 + 16) * 4  # h1, h2, fc_neigh(h2), result
    assert measured["out_of_core"] <= 0.35 * measured["stored"], measured
    assert measured["in_memory"] >= 0.6 * measured["stored"], measured


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_int32_graphs_and_no_nodes(case: Case, tmp_path: Path) -> None:
    """A graph of int32 IDs (g.int(), common at scale) gives forward's result for all nodes and
    for some (int64 and int32 IDs), in memory and in files."""
    generated, _, model, g, inputs, expected = _prepared(case, 3)
    small = g.int()
    actual = run_inference(model, generated, small, inputs, batch_size=7, device="cpu")
    assert allclose(actual, expected, atol=1e-4, rtol=1e-4), max_difference(actual, expected)
    actual = run_inference(model, generated, small, inputs, batch_size=7, device="cpu", storage=tmp_path / "all")
    assert allclose(actual, expected, atol=1e-4, rtol=1e-4), max_difference(actual, expected)
    if returns_edge_rows(generated):
        return
    nodes = some_nodes(NUM_NODES, 12, seed=4)
    for ids, storage in ((nodes, None), (nodes.int(), None), (nodes, tmp_path / "some")):
        actual = run_inference(model, generated, small, inputs, batch_size=5, device="cpu", nodes=ids,
                               storage=storage)
        assert allclose(flatten(actual), rows_for(generated, expected, nodes), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_no_nodes_give_no_rows(case: Case, tmp_path: Path) -> None:
    """nodes= with no node gives no row, of the result's width and dtype, in memory and in
    files (where result.npy is an empty array)."""
    generated, _, model, g, inputs, expected = _prepared(case, 3)
    if returns_edge_rows(generated):
        return
    none = torch.tensor([], dtype=torch.long)
    small = g.int()
    for graph, storage in ((g, None), (g, tmp_path / "none"), (small, tmp_path / "none_int32")):
        actual = flatten(run_inference(model, generated, graph, inputs, batch_size=5, device="cpu", nodes=none,
                                       storage=storage))
        wanted = rows_for(generated, expected, none)
        assert [(t.shape, t.dtype) for t in actual] == [(w.shape, w.dtype) for w in wanted]
        if storage is not None:  # an empty result file all the same, and no other
            with_rows = [n for n in iter_refs(generated.program.output) if generated.attributes[n].rows == "node"]
            names = ["result.npy"] if len(with_rows) == 1 else [f"result_{i}.npy" for i in range(len(with_rows))]
            assert sorted(os.listdir(storage)) == sorted(names)
            assert np.load(storage / names[0]).shape == tuple(actual[0].shape) or len(names) > 1


def _sage(tmp_path: Path):
    """sage's generated model, a graph, its input and forward's result."""
    generated, _, model, g, inputs, expected = _prepared(CASES_BY_NAME["sage"], 0)
    return generated, model, g, inputs, expected


def test_a_result_once_returned_never_changes(tmp_path: Path) -> None:
    """storage= with nodes= twice into one directory: the second result.npy is a new file, not
    the first one's rewritten (which changed the first result, or with fewer rows made reading
    it a Bus error)."""
    generated, model, g, inputs, expected = _sage(tmp_path)
    first_nodes = some_nodes(NUM_NODES, 40, seed=5)
    first = run_inference(model, generated, g, inputs, batch_size=7, device="cpu", nodes=first_nodes,
                          storage=tmp_path)
    kept = first.clone()
    second = run_inference(model, generated, g, inputs, batch_size=7, device="cpu", nodes=first_nodes[:3],
                           storage=tmp_path)
    assert torch.equal(first, kept)  # with 3 rows written over 40, reading it was a Bus error
    assert torch.equal(torch.from_numpy(np.load(tmp_path / "result.npy")), second)
    again = run_inference(model, generated, g, inputs, batch_size=7, device="cpu", storage=tmp_path)
    assert allclose(second, expected[first_nodes[:3]], atol=1e-4, rtol=1e-4)
    assert torch.equal(first, kept)  # and again under all nodes' result
    assert allclose(again, expected, atol=1e-4, rtol=1e-4) and sorted(os.listdir(tmp_path)) == ["result.npy"]


def test_files_made_in_storage_never_follow_a_link(tmp_path: Path) -> None:
    """storage/result.npy a symbolic link to a file elsewhere: the result replaces the link, and
    the file it pointed at is left as it was, with nodes= and without."""
    generated, model, g, inputs, expected = _sage(tmp_path)
    outside = tmp_path / "precious.npy"
    storage = tmp_path / "stored"
    storage.mkdir()
    for nodes in (some_nodes(NUM_NODES, 12, seed=6), None):
        np.save(outside, np.arange(5))
        (storage / "result.npy").unlink(missing_ok=True)
        (storage / "result.npy").symlink_to(outside)
        actual = run_inference(model, generated, g, inputs, batch_size=7, device="cpu", nodes=nodes,
                               storage=storage)
        assert np.array_equal(np.load(outside), np.arange(5))
        assert not (storage / "result.npy").is_symlink()
        assert torch.equal(torch.from_numpy(np.load(storage / "result.npy")), actual)


def test_storage_must_be_a_directory(tmp_path: Path) -> None:
    generated, model, g, inputs, _ = _sage(tmp_path)
    (tmp_path / "a_file").write_text("")
    for wrong in (tmp_path / "a_file", "", 3):
        with pytest.raises(ValueError, match="storage must be a directory \\(created if missing\\)"):
            run_inference(model, generated, g, inputs, batch_size=7, device="cpu", storage=wrong)
    created = tmp_path / "new" / "dir"
    run_inference(model, generated, g, inputs, batch_size=7, device="cpu", storage=created)
    assert os.listdir(created) == ["result.npy"]


def test_a_full_disk_is_an_os_error_and_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file system says it has no room when a file's blocks are allocated: an OSError
    naming the directory and the bytes, and no file left (it was a sparse file and a Bus error
    at the first write into the map)."""
    import errno
    import gc

    generated, model, g, inputs, _ = _sage(tmp_path)
    calls = []

    def no_room(fd: int, offset: int, length: int) -> None:
        calls.append(length)
        if len(calls) > 1:  # the first layer's file fits, the second's does not
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", no_room, raising=False)
    where = re.escape(str(tmp_path / "s"))
    with pytest.raises(OSError, match=f"storage '{where}' has no room for a file of [0-9]+ bytes") as caught:
        run_inference(model, generated, g, inputs, batch_size=7, device="cpu", storage=str(tmp_path / "s"))
    assert caught.value.errno == errno.ENOSPC and str(calls[-1]) in str(caught.value)
    del caught
    gc.collect()
    assert os.listdir(tmp_path / "s") == []


FULL_DISK_SCRIPT = """
import sys
import torch
import generated
from gnn_codegen.verify.harness import random_graph

model = generated.SAGE(16, 32, 5).eval()
g = random_graph(20000, seed=0)
try:
    model.inference(g, torch.randn(20000, 16), 1000, "cpu", storage=sys.argv[1])
except OSError as error:
    print("OSError:", error)
"""


def test_a_real_full_disk(tmp_path: Path) -> None:
    """On a file system of 1 MiB (a tmpfs: root only), the 2.5 MB of a layer's results do not fit:
    an OSError, in a process that goes on (it was killed by SIGBUS), and no file left."""
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)],
                      capture_output=True).returncode:
        pytest.skip("no tmpfs can be mounted here (not root?)")
    try:
        env = {**os.environ, "PYTHONPATH": f"{REPO / 'generated_examples' / 'sage'}{os.pathsep}{REPO}"}
        done = subprocess.run([sys.executable, "-c", FULL_DISK_SCRIPT, str(small / "run")], capture_output=True,
                              text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"OSError: [Errno 28] storage '{small / 'run'}' has no room for a file of" in done.stdout
        assert os.listdir(small / "run") == []
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_the_runtimes_modules_are_never_the_users_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's file binds ctypes, errno, os, tempfile, weakref, numpy, torch and dgl to
    values of its own, which its class reads (so they are kept): the generated code imports those
    modules under names of its own, and runs with storage= (madvise found: `ctypes = 0.5` had
    silently turned it off, `os = ...` made an AttributeError)."""
    from gnn_codegen.pipeline import generate_all

    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/shadowed_names.py:Scaled", GenerateOptions(
        init=json.dumps({"in_size": 6, "out_size": 4})))
    source = generated.source
    for name in ("ctypes", "errno", "os", "tempfile", "weakref", "numpy", "torch", "dgl"):
        assert f"import {name} as {name}_2\n" in source
    assert 'os = "linux"' in source and "ctypes = 0.5" in source
    module = import_source(source, REPO / "tests" / "models", "shadowed_names_generated")
    model = module.Scaled(6, 4).eval()
    model.load_state_dict(generated.loaded.model.state_dict())
    g = random_graph(120, seed=1)
    x = torch.randn(120, 6)
    batches = module._FullNeighbourBatches(model, g, 16, "cpu", 2**30, False, str(tmp_path / "probe"))
    if sys.platform.startswith("linux"):
        assert batches.madvise is not None
    with torch.no_grad():
        expected = generated.loaded.model.eval()(g, x)
    for storage in (None, tmp_path / "s"):
        actual = model.inference(g, x, 16, "cpu", nodes=torch.tensor([3, 1]), storage=storage)
        assert allclose(actual, expected[[3, 1]], atol=1e-5, rtol=1e-5)
    assert module.ctypes == 0.5 and module.os == "linux" and module.numpy == 1.5

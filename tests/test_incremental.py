"""Incremental re-inference (issue 39): after a full run with keep_layers=True, a run with
changed= (or changed="auto") recomputes only the rows the changes reach, and returns what a fresh
run on the new graph and inputs returns; a stale or unfinished storage is refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import dgl
import numpy as np
import pytest
import torch

from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    generated_model,
    import_source,
    make_inputs,
    max_difference,
    random_graph_for,
    run_inference,
)
from gnn_codegen.analysis.perturb import perturb
from tests.graph_updates import updated
from tests.cases import CASES_BY_NAME, Case, all_cases, generate_case

CASES = all_cases()
NUM_NODES = 61


def _prepared(case: Case, seed: int = 0):
    """The generated model with perturbed weights, a graph it accepts and inputs."""
    generated = generate_case(case)
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module, reference)
    for zero_in_degree in (True, False):  # GATConv refuses nodes without in-edges
        g = random_graph_for(generated, NUM_NODES, seed=seed, zero_in_degree=zero_in_degree)
        inputs = make_inputs(generated, NUM_NODES, seed, g.num_edges())
        try:
            run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
        except Exception:
            if not zero_in_degree:
                raise
            continue
        return generated, model, g, inputs, not zero_in_degree


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_changed_equals_a_fresh_run(case: Case, tmp_path: Path) -> None:
    generated, model, g, inputs, self_loops = _prepared(case)
    storage = str(tmp_path)
    first = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage,
                          keep_layers=True)
    returned = [t.clone() for t in flatten(first)]
    for step in range(2):  # two updates in a row: the second starts from the first's kept layers
        g, inputs, changed = updated(generated, g, inputs, seed=step, self_loops=self_loops)
        fresh = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
        for ids in (changed, "auto") if step else (changed,):
            actual = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=storage,
                                   changed=ids)
            assert allclose(actual, fresh, atol=1e-4, rtol=1e-4), (step, ids, max_difference(actual, fresh))
    # a result once returned never changes: each run's result is a new file
    assert allclose(flatten(first), returned, atol=0, rtol=0)


def _gcn(tmp_path: Path):
    """gcn's generated model, a graph and inputs, after a full run that kept its layers."""
    generated, model, g, inputs, _ = _prepared(CASES_BY_NAME["gcn"])
    run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=str(tmp_path),
                  keep_layers=True)
    return generated, model, g, inputs


def test_auto_finds_the_changed_nodes(tmp_path: Path) -> None:
    generated, model, g, inputs = _gcn(tmp_path / "auto")
    _gcn(tmp_path / "ids")
    new_g, new_inputs, changed = updated(generated, g, inputs, seed=3)
    fresh = run_inference(model, generated, new_g, new_inputs, batch_size=16, device="cpu")
    call = dict(batch_size=16, device="cpu")
    auto = run_inference(model, generated, new_g, new_inputs, **call, storage=str(tmp_path / "auto"),
                         changed="auto")
    ids = run_inference(model, generated, new_g, new_inputs, **call, storage=str(tmp_path / "ids"),
                        changed=changed)
    assert allclose(auto, fresh, atol=1e-4, rtol=1e-4)
    assert allclose(auto, ids, atol=0, rtol=0)
    # the kept layers now are new_g's: nothing differs from the hashes kept
    again = run_inference(model, generated, new_g, new_inputs, **call, storage=str(tmp_path / "auto"),
                          changed="auto")
    assert allclose(again, fresh, atol=1e-4, rtol=1e-4)


def _runtime(model):
    """The runtime class of the model's generated module."""
    return type(model).forward.__globals__["_FullNeighbourBatches"]


def test_only_the_rows_the_changes_reach_are_computed(tmp_path: Path) -> None:
    generated, model, g, inputs, _ = _prepared(CASES_BY_NAME["gcn"])
    computed = []
    runtime = _runtime(model)
    original = runtime.map

    def counting(self, layer, *args, nodes=None, **kwargs):
        computed.append(self.num_nodes if nodes is None else len(nodes))
        return original(self, layer, *args, nodes=nodes, **kwargs)

    runtime.map = counting  # (for the full run too: the manifest holds the runtime's code)
    call = dict(batch_size=16, device="cpu", storage=str(tmp_path))
    try:
        run_inference(model, generated, g, inputs, **call, keep_layers=True)
        assert computed == [NUM_NODES] * 4
        computed.clear()
        run_inference(model, generated, g, inputs, **call, changed=torch.tensor([5]))
    finally:
        runtime.map = original
    # node 5's row, then its out-neighbours' and theirs: fewer than all at the first layers
    assert computed[0] == 1 and 1 < computed[1] < NUM_NODES / 2, computed


def _chain_beside_a_clique(num_nodes: int = NUM_NODES):
    """A graph whose edges are mostly among its last 30 nodes (each to each: 900 edges), and a
    chain 0 -> 1 -> 2 -> 3: a change at node 0 reaches 4 nodes in 3 layers, and few of the edges."""
    clique = torch.arange(num_nodes - 30, num_nodes)
    src = torch.cat([torch.tensor([0, 1, 2]), clique.repeat_interleave(len(clique))])
    dst = torch.cat([torch.tensor([1, 2, 3]), clique.repeat(len(clique))])
    return dgl.graph((src, dst), num_nodes=num_nodes)


class _Largest(torch.utils._python_dispatch.TorchDispatchMode):
    """The largest tensor of IDs, positions or marks (int or bool: not the parameters' bytes
    the manifest hashes) any torch operation makes while it is on (numel)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.int32, torch.int64):
                self.largest = max(self.largest, t.numel())
        return out


def test_the_rows_a_change_reaches_are_found_in_proportion_to_their_edges(tmp_path: Path) -> None:
    """The forward row sets read the out-edges of the rows they reach (g's CSR), not every
    in-edge of g once per layer: no tensor of IDs as large as g's edges is made to find them."""
    generated = generate_case(CASES_BY_NAME["sage"])
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module)
    g = _chain_beside_a_clique()
    inputs = make_inputs(generated, NUM_NODES, 0, g.num_edges())
    call = dict(batch_size=16, device="cpu", storage=str(tmp_path))
    runtime, sizes = _runtime(model), []
    original = runtime.needed

    def measured(self, *args, **kwargs):
        with _Largest() as mode:
            needed = original(self, *args, **kwargs)
        sizes.append(mode.largest)
        return needed

    runtime.needed = measured  # (for the full run too: the manifest holds the runtime's code)
    try:
        run_inference(model, generated, g, inputs, **call, keep_layers=True)
        sizes.clear()
        result = run_inference(model, generated, g, inputs, **call, changed=torch.tensor([0]))
    finally:
        runtime.needed = original
    fresh = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
    assert allclose(result, fresh, atol=1e-4, rtol=1e-4)
    assert sizes and max(sizes) < g.num_edges() / 4, (sizes, g.num_edges())


def _sage_on_a_chain(tmp_path: Path, num_nodes: int):
    """sage's generated model, a chain beside a clique of num_nodes nodes, inputs and the
    arguments of a call."""
    generated = generate_case(CASES_BY_NAME["sage"])
    module = import_source(generated.source, generated.loaded.path.parent)
    model = generated_model(generated, module)
    g = _chain_beside_a_clique(num_nodes)
    inputs = make_inputs(generated, num_nodes, 0, g.num_edges())
    return generated, model, g, inputs, dict(batch_size=16, device="cpu", storage=str(tmp_path))


def test_the_rows_a_change_reaches_are_sorted_not_marked_among_all_nodes(tmp_path: Path) -> None:
    """A few rows reached, layer by layer: their out-neighbours are sorted with them, in
    proportion to their edges, not marked in a tensor of every node of g."""
    generated, model, g, inputs, call = _sage_on_a_chain(tmp_path, 4000)
    runtime, sizes = _runtime(model), []
    original = runtime._with_out_neighbours

    def measured(self, nodes):
        with _Largest() as mode:
            reached = original(self, nodes)
        sizes.append(mode.largest)
        return reached

    runtime._with_out_neighbours = measured  # (for the full run too: the manifest holds the code)
    try:
        run_inference(model, generated, g, inputs, **call, keep_layers=True)
        result = run_inference(model, generated, g, inputs, **call, changed=torch.tensor([0]))
    finally:
        runtime._with_out_neighbours = original
    fresh = run_inference(model, generated, g, inputs, batch_size=16, device="cpu")
    assert allclose(result, fresh, atol=1e-4, rtol=1e-4)
    assert sizes and max(sizes) < 100, sizes


def test_a_change_writes_its_own_rows_of_the_kept_hashes_and_out_degrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """changed= updates the kept per-node hashes and out-degrees where they are, the changed
    nodes' rows alone (no file of a row per node written whole), and does not wait for the
    disk (no fsync: what the manifest guards against is a call that did not finish)."""
    generated, model, g, inputs, call = _sage_on_a_chain(tmp_path, 4000)
    new_inputs = [t.clone() for t in inputs]
    new_inputs[0][0] += 1  # node 0's features
    new_g = dgl.add_edges(g, torch.tensor([5]), torch.tensor([0]))  # and an in-edge of node 0
    fresh = run_inference(model, generated, new_g, new_inputs, batch_size=16, device="cpu")
    computed = []
    runtime = _runtime(model)
    original = runtime.map

    def counting(self, layer, *args, nodes=None, **kwargs):
        computed.append(self.num_nodes if nodes is None else len(nodes))
        return original(self, layer, *args, nodes=nodes, **kwargs)

    runtime.map = counting  # (for the full run too: the manifest holds the runtime's code)
    try:
        run_inference(model, generated, g, inputs, **call, keep_layers=True)
        saved, synced, save = [], [], np.save
        monkeypatch.setattr(np, "save", lambda path, *a, **kw: (saved.append(str(path)), save(path, *a, **kw)))
        monkeypatch.setattr("os.fsync", lambda fd: synced.append(fd))
        result = run_inference(model, generated, new_g, new_inputs, **call, changed=torch.tensor([0]))
        monkeypatch.undo()
        assert not [p for p in saved if "hashes" in p or "out_degrees" in p], saved
        assert not synced
        assert allclose(result, fresh, atol=1e-4, rtol=1e-4)
        # node 0's kept hashes are those of the new inputs and in-edges, and node 5's kept
        # out-degree the new one: "auto" finds nothing changed since
        computed.clear()
        again = run_inference(model, generated, new_g, new_inputs, **call, changed="auto")
    finally:
        runtime.map = original
    assert allclose(again, fresh, atol=1e-4, rtol=1e-4)
    assert max(computed) == 1, computed  # no node changed: one row, for the result's width


def test_a_graph_that_allows_csc_alone(tmp_path: Path) -> None:
    """g.formats("csc"), as a user restricts a large graph's formats to save memory: its out-edges
    are read in a copy that allows CSR (DGL's out_degrees() refuses such a graph)."""
    generated, model, g, inputs, self_loops = _prepared(CASES_BY_NAME["sage"])
    call = dict(batch_size=16, device="cpu", storage=str(tmp_path))
    run_inference(model, generated, g.formats("csc"), inputs, **call, keep_layers=True)
    new_g, new_inputs, changed = updated(generated, g, inputs, seed=1, self_loops=self_loops)
    result = run_inference(model, generated, new_g.formats("csc"), new_inputs, **call, changed=changed)
    fresh = run_inference(model, generated, new_g, new_inputs, batch_size=16, device="cpu")
    assert allclose(result, fresh, atol=1e-4, rtol=1e-4)


def test_a_stale_storage_is_refused(tmp_path: Path) -> None:
    generated, model, g, inputs = _gcn(tmp_path)
    call = dict(batch_size=16, device="cpu", storage=str(tmp_path), changed=torch.tensor([1]))
    with torch.no_grad():  # a model trained again
        next(model.parameters()).add_(1)
    with pytest.raises(ValueError, match="other parameters or buffers.*keep_layers=True"):
        run_inference(model, generated, g, inputs, **call)
    with torch.no_grad():
        next(model.parameters()).sub_(1)
    smaller = dgl.graph(g.edges(), num_nodes=NUM_NODES + 1)
    more = [torch.cat([t, t[:1]]) if len(t) == NUM_NODES else t for t in inputs]
    with pytest.raises(ValueError, match="for 61 nodes, and g has 62"):
        run_inference(model, generated, smaller, more, **call)
    with pytest.raises(ValueError, match="no manifest"):
        run_inference(model, generated, g, inputs, **{**call, "storage": str(tmp_path / "empty")})
    manifest = tmp_path / "kept_manifest.json"
    fields = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**fields, "code": "another"}))
    with pytest.raises(ValueError, match="another generated module"):
        run_inference(model, generated, g, inputs, **call)


def test_a_run_left_unfinished_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generated, model, g, inputs = _gcn(tmp_path)
    calls = []

    def killed(*args, **kwargs):  # killed after the first layer's kept rows changed
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    # GraphConv's in-edge sums: torch's embedding_bag on a CPU (_in_edge_sum)
    original = torch.nn.functional.embedding_bag
    monkeypatch.setattr(torch.nn.functional, "embedding_bag", killed)
    with pytest.raises(KeyboardInterrupt):
        run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=str(tmp_path),
                      changed=torch.tensor([1, 2]))
    monkeypatch.undo()
    with pytest.raises(ValueError, match="did not finish: run a full inference"):
        run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=str(tmp_path),
                      changed=torch.tensor([1, 2]))
    # a full run makes it whole again
    run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=str(tmp_path), keep_layers=True)
    run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=str(tmp_path),
                  changed=torch.tensor([1, 2]))


def test_a_changed_node_left_out_is_the_callers_error(tmp_path: Path) -> None:
    """Documented: the rows it reaches keep their old values (in the result and in the kept
    layers, until a full run). changed="auto" is the way out for who cannot list the changes."""
    generated, model, g, inputs = _gcn(tmp_path / "wrong")
    _gcn(tmp_path / "auto")
    new_g, new_inputs, changed = updated(generated, g, inputs, seed=4, added=0, removed=0)
    fresh = run_inference(model, generated, new_g, new_inputs, batch_size=16, device="cpu")
    call = dict(batch_size=16, device="cpu")
    wrong = run_inference(model, generated, new_g, new_inputs, **call, storage=str(tmp_path / "wrong"),
                          changed=changed[1:])
    assert not allclose(wrong, fresh, atol=1e-4, rtol=1e-4)
    auto = run_inference(model, generated, new_g, new_inputs, **call, storage=str(tmp_path / "auto"),
                         changed="auto")
    assert allclose(auto, fresh, atol=1e-4, rtol=1e-4)


def test_arguments_it_refuses(tmp_path: Path) -> None:
    generated, model, g, inputs = _gcn(tmp_path)
    call = dict(batch_size=16, device="cpu")
    for kwargs, message in (
        (dict(keep_layers=True), "give storage=DIR"),
        (dict(storage=str(tmp_path), changed="all"), 'node IDs or "auto"'),
        (dict(storage=str(tmp_path), changed=torch.tensor([[1]])), "1-D tensor of node IDs"),
        (dict(storage=str(tmp_path), changed=torch.tensor([NUM_NODES])), "IDs of g's 61 nodes"),
        (dict(storage=str(tmp_path), changed=torch.tensor([1]), nodes=torch.tensor([1])), "without nodes"),
    ):
        with pytest.raises(ValueError, match=message):
            run_inference(model, generated, g, inputs, **call, **kwargs)


def test_inference_twice_on_one_storage_leaves_the_first_result_alone(tmp_path: Path) -> None:
    """Today's behaviour, kept: result.npy is a new file each time, so an array returned earlier
    (a memory map of the old one) never changes under its user."""
    generated, model, g, inputs, _ = _prepared(CASES_BY_NAME["gcn"])
    first = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", storage=str(tmp_path))
    kept = first.clone()
    other = [t * 2 if t.is_floating_point() else t for t in inputs]
    run_inference(model, generated, g, other, batch_size=16, device="cpu", storage=str(tmp_path))
    assert torch.equal(first, kept)
    assert not np.array_equal(np.load(tmp_path / "result.npy"), kept.numpy())

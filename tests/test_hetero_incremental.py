"""Incremental re-inference on heterographs (issue 39): after a full run with keep_layers=True, a
run with changed={type: IDs} (or changed="auto") recomputes only the rows the changes reach along
every relation, and returns what a fresh run on the new graph and features returns; a stale or
unfinished storage is refused, as on homogeneous graphs (tests/test_incremental.py)."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any, Iterator

import dgl
import pytest
import torch

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.verify.check import instantiate
from gnn_codegen.verify.harness import allclose, flatten, max_difference
from gnn_codegen.verify.hetero import cut_tables, inference_arguments, node_counts, random_inputs
from gnn_codegen.load.hetero_schema import random_heterograph
from tests.cases import all_cases, generate_case
from tests.graph_updates import updated_hetero

HETERO_CASES = [c for c in all_cases(heterogeneous=True) if c.heterogeneous]
HETERO_NAMES = [c.name for c in HETERO_CASES]
NUM_NODES = 200  # about, of all types


@contextlib.contextmanager
def _example(name: str, seed: int = 0) -> Iterator[tuple[Any, Any, dgl.DGLHeteroGraph, dict]]:
    """An example's generated model with perturbed weights (its tables cut to the graph's node
    counts while the block runs), a random heterograph of its schema and its features."""
    case = next(c for c in HETERO_CASES if c.name == name)
    generated = generate_case(case)
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, seed)
    model, _ = instantiate(generated, reference.eval(), f"incremental_{name}", gather=False)
    counts = node_counts(generated, NUM_NODES)
    with cut_tables(generated, counts, reference, model):
        g = random_heterograph(generated.schema, counts, seed=seed)
        yield generated, model, g, random_inputs(generated, counts, seed)


def _run(generated: Any, model: Any, g: dgl.DGLHeteroGraph, inputs: dict, **kwargs: Any) -> Any:
    """The generated inference on g and the features, as a user calls it (batches of 16)."""
    arguments = inference_arguments(generated, g, inputs)
    return getattr(model, generated.method_name)(g, *arguments.values(), batch_size=16, device="cpu", **kwargs)


@pytest.mark.parametrize("name", HETERO_NAMES)
def test_changed_equals_a_fresh_run(name: str, tmp_path: Path) -> None:
    with _example(name) as (generated, model, g, inputs):
        storage = str(tmp_path)
        first = _run(generated, model, g, inputs, storage=storage, keep_layers=True)
        returned = [t.clone() for t in flatten(first)]
        for step in range(2):  # two updates in a row: the second starts from the first's kept layers
            g, inputs, changed = updated_hetero(g, inputs, seed=step)
            fresh = _run(generated, model, g, inputs)
            for ids in (changed, "auto") if step else (changed,):
                actual = _run(generated, model, g, inputs, storage=storage, changed=ids)
                assert allclose(actual, fresh, atol=1e-4, rtol=1e-4), (step, ids, max_difference(actual, fresh))
        # a result once returned never changes: each run's result is a new file
        assert allclose(flatten(first), returned, atol=0, rtol=0)


def test_auto_finds_the_changed_nodes(tmp_path: Path) -> None:
    with _example("rgcn_hetero", seed=1) as (generated, model, g, inputs):
        for folder in ("auto", "ids"):
            _run(generated, model, g, inputs, storage=str(tmp_path / folder), keep_layers=True)
        new_g, new_inputs, changed = updated_hetero(g, inputs, seed=3)
        fresh = _run(generated, model, new_g, new_inputs)
        auto = _run(generated, model, new_g, new_inputs, storage=str(tmp_path / "auto"), changed="auto")
        ids = _run(generated, model, new_g, new_inputs, storage=str(tmp_path / "ids"), changed=changed)
        assert allclose(auto, fresh, atol=1e-4, rtol=1e-4)
        assert allclose(auto, ids, atol=0, rtol=0)
        # the kept layers now are new_g's: nothing differs from the hashes kept
        again = _run(generated, model, new_g, new_inputs, storage=str(tmp_path / "auto"), changed="auto")
        assert allclose(again, fresh, atol=1e-4, rtol=1e-4)


def test_only_the_rows_the_changes_reach_are_computed(tmp_path: Path) -> None:
    """One paper's features redrawn: the first layer computes that paper's rows alone, the
    second the types its out-edges reach (a few nodes of each), not every node."""
    with _example("rgcn_hetero") as (generated, model, g, inputs):
        runtime = type(model).forward.__globals__["_HeteroBatches"]
        computed: list[tuple[str, int]] = []
        original = runtime.map

        def counting(self: Any, layer: Any, ntype: str, *args: Any, nodes: Any = None, **kwargs: Any) -> Any:
            computed.append((ntype, g.num_nodes(ntype) if nodes is None else len(nodes)))
            return original(self, layer, ntype, *args, nodes=nodes, **kwargs)

        runtime.map = counting  # (for the full run too: the manifest holds the runtime's code)
        try:
            _run(generated, model, g, inputs, storage=str(tmp_path), keep_layers=True)
            assert computed == [(t, g.num_nodes(t)) for t in sorted(g.ntypes)] * 2
            computed.clear()
            inputs["inputs"]["paper"][7] += 1
            _run(generated, model, g, inputs, storage=str(tmp_path), changed={"paper": torch.tensor([7])})
        finally:
            runtime.map = original
    first, second = dict(computed[:4]), dict(computed[4:])
    papers = g.out_edges(7, etype="cites")[1].unique()
    assert first["paper"] == len(torch.unique(torch.cat([papers, torch.tensor([7])]))), computed
    assert all(0 < count < g.num_nodes(t) / 2 for t, count in second.items() if t != "institution"), computed


def test_a_stale_storage_is_refused(tmp_path: Path) -> None:
    with _example("rgat") as (generated, model, g, inputs):
        _run(generated, model, g, inputs, storage=str(tmp_path), keep_layers=True)
        call = dict(storage=str(tmp_path), changed={"paper": torch.tensor([1])})
        with torch.no_grad():  # a model trained again
            next(model.parameters()).add_(1)
        with pytest.raises(ValueError, match="other parameters or buffers.*keep_layers=True"):
            _run(generated, model, g, inputs, **call)
        with torch.no_grad():
            next(model.parameters()).sub_(1)
        bigger = dgl.heterograph({rel: g.edges(etype=rel) for rel in g.canonical_etypes},
                                 num_nodes_dict={t: g.num_nodes(t) + (t == "author") for t in g.ntypes})
        more = {name: {t: torch.cat([x, x[:1]]) if t == "author" else x for t, x in by_type.items()}
                for name, by_type in inputs.items()}
        with pytest.raises(ValueError, match="its layers are for .* nodes, and g has"):
            _run(generated, model, bigger, more, **call)
        with pytest.raises(ValueError, match="no manifest"):
            _run(generated, model, g, inputs, **{**call, "storage": str(tmp_path / "empty")})
        manifest = tmp_path / "kept_manifest.json"
        fields = json.loads(manifest.read_text())
        manifest.write_text(json.dumps({**fields, "status": "in progress"}))
        with pytest.raises(ValueError, match="did not finish: run a full inference"):
            _run(generated, model, g, inputs, **call)
        manifest.write_text(json.dumps({**fields, "code": "another"}))
        with pytest.raises(ValueError, match="another generated module"):
            _run(generated, model, g, inputs, **call)
        # a full run makes it whole again
        _run(generated, model, g, inputs, storage=str(tmp_path), keep_layers=True)
        _run(generated, model, g, inputs, **call)


def test_arguments_it_refuses(tmp_path: Path) -> None:
    with _example("rgcn_hetero") as (generated, model, g, inputs):
        _run(generated, model, g, inputs, storage=str(tmp_path), keep_layers=True)
        for kwargs, message in (
            (dict(keep_layers=True), "give storage=DIR"),
            (dict(storage=str(tmp_path), changed="all"), 'dict of node IDs per type or "auto"'),
            (dict(storage=str(tmp_path), changed=torch.tensor([1])), 'dict of node IDs per type or "auto"'),
            (dict(storage=str(tmp_path), changed={"topic": torch.tensor([1])}), "g has no node type 'topic'"),
            (dict(storage=str(tmp_path), changed={"paper": torch.tensor([[1]])}), "1-D tensor of node IDs"),
            (dict(storage=str(tmp_path), changed={"paper": torch.tensor([10**6])}), "must be IDs of paper nodes"),
            (dict(storage=str(tmp_path), changed="auto", nodes={"paper": torch.tensor([1])}), "without nodes"),
        ):
            with pytest.raises(ValueError, match=message):
                _run(generated, model, g, inputs, **kwargs)


def test_a_model_that_reads_an_edge_count_refuses_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`h["user"] * g.num_edges("plays")`: edges added or removed change every row, so changed=
    would keep stale rows; it is refused, naming the call, and a full run with keep_layers= is not."""
    from gnn_codegen.pipeline import GenerateOptions, generate_all
    from gnn_codegen.verify.harness import import_source
    from tests.cases import REPO

    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/hetero.py:ReadsGraphSizes", GenerateOptions(feat_dims="user=8,game=8"))
    assert 'forward reads g.num_edges("plays")' in " ".join(generated.source.split()).replace('" "', "")
    module = import_source(generated.source, REPO / "tests" / "models", "reads_graph_sizes_incremental")
    model = module.ReadsGraphSizes().eval()
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1]),
                         ("game", "played_by", "user"): ([0, 1], [2, 2])})
    x = {"user": torch.randn(3, 8), "game": torch.randn(2, 8)}
    full = model.inference(g, x, batch_size=2, device="cpu", storage=str(tmp_path), keep_layers=True)
    assert torch.allclose(full, model(g, x), atol=1e-5)
    with pytest.raises(ValueError, match=r"not done for this model: forward reads g.num_edges\(\"plays\"\)"):
        model.inference(g, x, batch_size=2, device="cpu", storage=str(tmp_path), changed="auto")


def test_a_result_that_is_no_rows_of_a_type_is_refused() -> None:
    """Rendering alone (no example returns such a result): the refusal's condition and reason."""
    from gnn_codegen.render.hetero_incremental import refused, refusal_lines

    assert refused(True, ['num_nodes_paper = g.num_nodes("paper")']) is None
    condition, reason = refused(False, [])
    assert condition == "changed is not None or keep_layers" and "no rows per node of a type" in reason
    assert refusal_lines(False, [])[0] == "if changed is not None or keep_layers:"


def test_a_layer_that_reads_edge_data_recomputes_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Edge weights are not hashed: changed="auto" after only some weights changed finds no node,
    and still equals a fresh run, as every layer from the first that reads edge data runs for all
    rows."""
    from gnn_codegen.pipeline import GenerateOptions, generate_all
    from gnn_codegen.verify.harness import import_source
    from tests.cases import REPO

    monkeypatch.chdir(REPO)
    relations = ["follows", "plays", "played_by"]
    init = {"in_size": 5, "hid_size": 6, "out_size": 3, "rel_names": relations}
    generated = generate_all("tests/models/hetero.py:WeightedRGCN", GenerateOptions(
        init=json.dumps(init), metagraph="user:follows:user,user:plays:game,game:played_by:user"))
    module = import_source(generated.source, REPO / "tests" / "models", "weighted_rgcn_incremental")
    model = module.WeightedRGCN(**init).eval()
    counts = {"user": 40, "game": 30}
    g = random_heterograph(generated.schema, counts, seed=2)
    gen = torch.Generator().manual_seed(2)
    for rel in g.canonical_etypes:
        g.edges[rel].data["w"] = torch.rand(g.num_edges(rel), generator=gen) + 0.5
    x = {t: torch.randn(n, 5, generator=gen) for t, n in counts.items()}
    model.inference(g, x, batch_size=8, device="cpu", storage=str(tmp_path), keep_layers=True)
    g.edges["plays"].data["w"][:5] += 1
    actual = model.inference(g, x, batch_size=8, device="cpu", storage=str(tmp_path), changed="auto")
    fresh = model.inference(g, x, batch_size=8, device="cpu")
    assert allclose(actual, fresh, atol=1e-4, rtol=1e-4), max_difference(actual, fresh)

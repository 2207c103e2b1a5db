"""Heterogeneous models (gnn_codegen/hetero/): every case in generated_examples/ on a
heterograph and the models of tests/models/hetero.py equal forward on seeded random heterographs
(nodes without in-edges of a relation, a relation without edges, types no relation reaches),
with batch sizes that do and do not divide the node counts, perturbed weights and BatchNorm
statistics, and a simulated GPU; what cannot be proven is refused, naming the line."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from typing import Any

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import import_source
from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph
from gnn_codegen.verify.hetero import check_hetero
from gnn_codegen.pipeline import GenerateOptions, Generated, generate_all
from tests.cases import CASES_BY_NAME, REPO, all_cases, generate_case

# pytest -m long (CI runs it after the README's quick command): every heterogeneous example and
# test model, in every mode: a stress run
pytestmark = pytest.mark.long

HETERO_CASES = [c for c in all_cases(heterogeneous=True) if c.heterogeneous]
MODELS = "tests/models/hetero.py"
ACADEMIC = ("author:writes:paper,paper:written_by:author,paper:cites:paper,"
            "author:affiliated_with:institution,institution:employs:author")
GAMES = "user:follows:user,user:plays:game,game:played_by:user"
GAME_RELATIONS = ["follows", "plays", "played_by"]
OPTIONS = {
    "SAGEPerRelation": GenerateOptions(),  # keyed by canonical edge types: no --metagraph
    "RGAT": GenerateOptions(init=json.dumps({
        "etypes": ["writes", "written_by", "cites", "affiliated_with", "employs"], "in_size": 12,
        "hid_size": 16, "out_size": 5}), metagraph=ACADEMIC),
    "ProjectedGraphConv": GenerateOptions(init=json.dumps({
        "in_sizes": {"user": 5, "game": 7}, "hid_size": 8, "out_size": 3, "rel_names": GAME_RELATIONS}),
        metagraph=GAMES, feat_dims="user=5,game=7"),
    "GINPerRelation": GenerateOptions(init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}), metagraph=GAMES),
    "EmbeddingAndLinear": GenerateOptions(init=json.dumps({
        "num_nodes": {"user": 70, "game": 45}, "size": 6, "rel_names": GAME_RELATIONS}), metagraph=GAMES),
    # a layer of the user's, run on each batch's graph of its in-edges
    "HeteroRGCN": GenerateOptions(init=json.dumps({
        "etypes": GAME_RELATIONS, "in_size": 6, "hidden_size": 5, "out_size": 3}), metagraph=GAMES),
    "OwnLayerMaxCross": GenerateOptions(init=json.dumps({"size": 6, "etypes": GAME_RELATIONS}), metagraph=GAMES),
    # built from its graph (a stand-in heterograph of --metagraph), forward(self, h=None, blocks=None)
    "EntityClassifyOnBlocks": GenerateOptions(init=json.dumps({"h_dim": 6, "out_dim": 3}), metagraph=ACADEMIC),
    # edge weights per relation read from the graph, given through mod_kwargs
    "WeightedRGCN": GenerateOptions(init=json.dumps({"in_size": 5, "hid_size": 6, "out_size": 3,
                                                     "rel_names": GAME_RELATIONS}), metagraph=GAMES),
    "EdgeDataSAGE": GenerateOptions(init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}), metagraph=GAMES),
    # forward(self, feats) on the graph it keeps (self.g), built from a stand-in of --metagraph
    "KeptGraphRGCN": GenerateOptions(init=json.dumps({"in_size": 5, "hid_size": 6, "out_size": 3}),
                                     metagraph=GAMES),
    # the full graph's node count read in forward (`h["user"] / g.num_nodes("user")`)
    "ReadsGraphSizes": GenerateOptions(feat_dims="user=8,game=8"),
    "CountArithmetic": GenerateOptions(feat_dims="user=8,game=8"),
    # forward takes one type's features as a tensor: --feat-dims names the type
    "PaperFeaturesOnly": GenerateOptions(init=json.dumps({
        "num_nodes": {"author": 50}, "in_size": 6, "hid_size": 5, "out_size": 3,
        "rel_names": ["writes", "written_by", "cites"]}),
        metagraph="author:writes:paper,paper:written_by:author,paper:cites:paper", feat_dims="paper=6"),
    # aggregate as a function, and as a method of the model with weights of its own
    "CallableAggregates": GenerateOptions(init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}),
                                          metagraph=GAMES),
    # forward(blocks) reading its features from blocks[0].srcdata
    "SAGEOnBlocksReadingFeatures": GenerateOptions(init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}),
                                                   metagraph=GAMES),
    # each relation's weight through mod_kwargs: basis-decomposed (DGL's rgcn-hetero), block-diagonal
    "BasisRGCN": GenerateOptions(init=json.dumps({"in_size": 5, "hid_size": 8, "out_size": 3,
                                                  "rel_names": GAME_RELATIONS}), metagraph=GAMES),
    "BlockDiagonalRGCN": GenerateOptions(init=json.dumps({"size": 6, "out_size": 3, "rel_names": GAME_RELATIONS}),
                                         metagraph=GAMES),
    # DGL's rgat example on blocks: dgl's recursive_apply over each type's rows
    "HeteroGATRecursiveApply": GenerateOptions(init=json.dumps({"etypes": GAME_RELATIONS, "in_size": 6, "hid_size": 8,
                                                                "out_size": 3}), metagraph=GAMES,
                                               feat_dims="user=6,game=6"),
}


@pytest.fixture(scope="module", params=sorted(OPTIONS))
def model_generated(request, tmp_path_factory) -> Generated:
    import os

    previous = os.getcwd()
    os.chdir(REPO)
    try:
        return generate_all(f"{MODELS}:{request.param}", OPTIONS[request.param])
    finally:
        os.chdir(previous)


def _check_everywhere(generated: Generated) -> None:
    assert generated.verification is not None and generated.verification.ok
    for seed, (nodes, sizes) in enumerate([(300, (1, 64)), (120, (7, 1000)), (40, (3,))]):
        result = check_hetero(generated, nodes, seed=seed + 1, batch_sizes=sizes)
        assert result.ok, [(b.batch_size, b.sources, b.max_abs_diff) for b in result.batches]
        assert {"in place", "gathered", "gathered, the model on a simulated GPU",
                "moved whole to a simulated GPU, the model there", "in place, one relation without edges",
                "gathered, kept in files (storage=)", "in place, the most that fit in max_memory=16384",
                } <= {b.sources for b in result.batches}


@pytest.mark.parametrize("case", HETERO_CASES, ids=lambda c: c.name)
def test_examples_equal_forward(case) -> None:
    _check_everywhere(generate_case(case))


def test_models_equal_forward(model_generated: Generated) -> None:
    _check_everywhere(model_generated)


def test_only_what_reaches_the_result_is_computed() -> None:
    """RGAT classifies papers: its last layer runs for papers alone (as DGL's rgcn-hetero
    entity classifier needs only the target type), the last round of the loop over its layers
    (render/hetero_loops.py)."""
    generated = generate_all(f"{MODELS}:RGAT", OPTIONS["RGAT"])
    method = re.sub(r"\s+", "", generated.source.split("def inference(")[1].split("# --- gnn-codegen")[0])
    last = 'ntypes=(("paper",)ifi==len(self.layers)-1else("author","institution","paper"))'
    assert last in method and "forntypeinntypes:" in method, method
    assert 'returnbatches.result(h["paper"],nodes=nodes)' in method, method


def test_graph_conv_norm_reads_full_graph_out_degrees() -> None:
    """GraphConv's default norm ("both") divides by source out-degrees: on a block they count
    only the edges into the batch. DGL's own hand-written loop (the layer called on each block)
    differs from forward; the generated code does not."""
    case = next(c for c in HETERO_CASES if c.name == "rgcn_hetero")
    generated = generate_case(case)
    # each relation's source rows scaled once per node by its full-graph out-degrees
    assert "inputs_src=batches.map_sources(self.conv1,inputs,work=_relation_source,into=(ntype,),out_degrees=out_degrees" in "".join(
        generated.source.split())
    schema = parse_metagraph(case.options.metagraph)
    counts = {t: 50 + 9 * i for i, t in enumerate(schema.ntypes)}
    g = random_heterograph(schema, counts, seed=3)
    model = generated.loaded.model.eval()
    x = {t: torch.randn(n, 12) for t, n in counts.items()}
    with torch.no_grad():
        expected = model(g, x)
        h = {}
        for ntype in ("paper",):  # the hand-written way, one batch of 10 papers
            sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
            _, _, (block,) = sampler.sample_blocks(g, {ntype: torch.arange(10)})
            inputs = {t: x[t][block.srcnodes[t].data[dgl.NID]] for t in block.srctypes}
            h[ntype] = model.conv1(block, inputs)[ntype]
    module = import_source(generated.source, REPO / "generated_examples" / "rgcn_hetero", "rgcn_hetero_gen")
    ours = getattr(module, "RGCN")(**json.loads(case.options.init))
    ours.load_state_dict(model.state_dict())
    with torch.no_grad():
        first = ours.conv1(g, x)["paper"][:10]
    assert not torch.allclose(h["paper"], first, atol=1e-4)  # the hand-written loop is off
    result = ours.inference(g, x, batch_size=10, device="cpu")
    assert all(torch.allclose(result[t], expected[t], atol=1e-4) for t in expected)


def test_inference_checks_its_graph_and_features() -> None:
    case = next(c for c in HETERO_CASES if c.name == "rgcn_hetero")
    generated = generate_case(case)
    module = import_source(generated.source, REPO / "generated_examples" / "rgcn_hetero", "rgcn_hetero_checks")
    model = getattr(module, "RGCN")(**json.loads(case.options.init)).eval()
    schema = parse_metagraph(case.options.metagraph)
    counts = {t: 20 for t in schema.ntypes}
    g = random_heterograph(schema, counts)
    x = {t: torch.randn(20, 12) for t in schema.ntypes}
    other = random_heterograph(parse_metagraph(GAMES), {"user": 20, "game": 20})
    with pytest.raises(ValueError, match="generated for a graph with the relations"):
        model.inference(other, x, batch_size=8, device="cpu")
    with pytest.raises(ValueError, match="must be a dict of tensors for the node types"):
        model.inference(g, {t: v for t, v in x.items() if t != "field"}, batch_size=8, device="cpu")
    with pytest.raises(ValueError, match=r'inputs\["paper"\] must have a row per paper node'):
        model.inference(g, {**x, "paper": x["paper"][:5]}, batch_size=8, device="cpu")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        model.inference(g, x, batch_size=0, device="cpu")


REFUSED = {
    "MixesNodeTypes": (
        errors.UnsupportedOperationError,
        "tests/models/hetero.py:143 (`return h[\"user\"] + h[\"game\"]`): this line combines rows of "
        "node types game and user",
    ),
    "MeanOverNodes": (
        errors.UnsupportedOperationError,
        "tests/models/hetero.py:154 (`return h[\"user\"] - h[\"user\"].mean(0)`): .mean() is not known to keep "
        "each node's row independent",
    ),
    "WeightsAsArgument": (
        errors.TraceFailedError,
        "tests/models/hetero.py:434 (`return self.conv(g, x, mod_kwargs={\"plays\": {\"edge_weight\": "
        "edge_weight[\"plays\"]}})`): tracing forward with torch.fx failed with KeyError",
    ),
    "ArangeOfGraphSize": (
        errors.UnsupportedOperationError,
        "tests/models/hetero.py:448 (`ids = torch.arange(g.num_nodes(\"user\"))`): this line computes with "
        "the graph's size other than as a number",
    ),
    "WritesGraphFeatures": (
        errors.GraphUseError,
        "tests/models/hetero.py:344 (`g.nodes[\"user\"].data[\"h\"] = x[\"user\"]`): forward writes "
        "graph.nodes['user'].data['h'] of a heterogeneous graph",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_name_the_line(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    error_class, start = REFUSED[name]
    with pytest.raises(error_class) as caught:
        generate_all(f"{MODELS}:{name}", GenerateOptions(feat_dims="user=8,game=8"))
    assert str(caught.value).startswith(start), str(caught.value)
    if name == "WeightsAsArgument":  # the way out: edge data on the graph
        assert "give edge data by relation on the graph instead" in str(caught.value)


def test_missing_destination_features_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """DGL's HeteroGraphConv reads the destination type's features on a full graph: forward
    given features of users only fails there (KeyError), and gnn-codegen says so."""
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.GraphUseError, match="given features of user but not of game"):
        generate_all(f"{MODELS}:GINPerRelation", GenerateOptions(
            init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}), metagraph=GAMES, feat_dims="user=6"))


def test_metagraph_must_name_every_relation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.OptionsError, match="--metagraph has no relation plays"):
        generate_all(f"{MODELS}:GINPerRelation", GenerateOptions(
            init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}), metagraph="user:follows:user"))


def _example(name: str, module_name: str) -> tuple[Any, torch.nn.Module, dgl.DGLHeteroGraph, dict, Any]:
    """An example's generated class with perturbed weights, a random heterograph (some nodes
    of each type), features, and forward's result on it."""
    case = next(c for c in HETERO_CASES if c.name == name)
    generated = generate_case(case)
    module = import_source(generated.source, case.folder, module_name)
    model = getattr(module, generated.loaded.class_name)(**json.loads(case.options.init)).eval()
    from gnn_codegen.analysis.perturb import perturb

    perturb(model, 5)
    schema = parse_metagraph(case.options.metagraph)
    counts = {t: 150 + 31 * i for i, t in enumerate(schema.ntypes)}
    g = random_heterograph(schema, counts, seed=5)
    x = {t: torch.randn(n, 12) for t, n in counts.items()}
    with torch.no_grad():
        expected = model([g] * 3, x) if generated.hetero.traced.blocks else model(g, x)
    return module, model, g, x, expected


@pytest.mark.parametrize("count", [0, 1, 12, 150])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_nodes_of_one_type(count: int, dtype: torch.dtype) -> None:
    """RGAT classifies papers: nodes= takes paper IDs, in any order, duplicates kept."""
    _, model, g, x, expected = _example("rgat", f"rgat_nodes_{count}_{dtype}".replace(".", "_"))
    ids = torch.randperm(g.num_nodes("paper"), generator=torch.Generator().manual_seed(count))[:count]
    ids = torch.cat([ids, ids[:1]]).to(dtype)
    for batch_size in (7, 64):
        out = model.inference(g, x, batch_size=batch_size, device="cpu", nodes=ids)
        assert out.shape == (len(ids), expected.shape[1])
        assert torch.allclose(out, expected[ids.long()], atol=1e-4)


def test_nodes_walk_back_through_every_relation() -> None:
    """A few papers: each layer before the last computes their in-neighbours by every relation
    (authors through rev_writes, fields, papers), not every node."""
    module, model, g, x, expected = _example("rgat", "rgat_frontiers")
    from gnn_codegen.render.hetero import RUNTIME

    batches = getattr(module, RUNTIME)(model, g, 16, "cpu", 2**30, False)
    needed = batches.needed(torch.tensor([3, 5]), layers=3, result="paper")
    assert needed[3]["paper"].tolist() == [3, 5] and len(needed[3]["author"]) == 0
    first_hop = set()
    for rel in g.canonical_etypes:
        if rel[2] == "paper" and rel[0] == "author":
            first_hop |= set(g.in_edges(torch.tensor([3, 5]), etype=rel)[0].tolist())
    assert first_hop <= set(needed[2]["author"].tolist())
    assert len(needed[2]["author"]) < g.num_nodes("author")


def test_nodes_of_several_types() -> None:
    """A model that returns a dict per type takes a dict of IDs, and returns those types."""
    _, model, g, x, expected = _example("rgcn_hetero", "rgcn_hetero_nodes")
    ids = {"paper": torch.tensor([4, 0, 4]), "author": torch.tensor([7])}
    out = model.inference(g, x, batch_size=9, device="cpu", nodes=ids)
    assert sorted(out) == ["author", "paper"]
    for t, i in ids.items():
        assert torch.allclose(out[t], expected[t][i], atol=1e-4)
    with pytest.raises(ValueError, match="g has no node type 'topic'"):
        model.inference(g, x, batch_size=9, device="cpu", nodes={"topic": torch.tensor([1])})
    with pytest.raises(ValueError, match="must be IDs of g's paper nodes"):
        model.inference(g, x, batch_size=9, device="cpu", nodes={"paper": torch.tensor([10**6])})
    with pytest.raises(ValueError, match="must be a dict of node IDs per type"):
        model.inference(g, x, batch_size=9, device="cpu", nodes=torch.tensor([1]))


def test_nodes_of_one_type_of_a_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    """nodes= for users only: the games' layer has no node to compute and still runs for one
    (GATConv cannot reshape zero rows), and only users come back."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:GATPerRelation", GenerateOptions(
        init=json.dumps({"size": 6, "rel_names": GAME_RELATIONS}), metagraph=GAMES))
    module = import_source(generated.source, REPO / "tests" / "models", "gat_per_relation_nodes")
    model = getattr(module, "GATPerRelation")(6, GAME_RELATIONS).eval()
    g = random_heterograph(parse_metagraph(GAMES), {"user": 40, "game": 30}, seed=2)
    x = {"user": torch.randn(40, 6), "game": torch.randn(30, 6)}
    with torch.no_grad():
        expected = model(g, x)
    out = model.inference(g, x, batch_size=8, device="cpu", nodes={"user": torch.tensor([5, 1])})
    assert list(out) == ["user"] and torch.allclose(out["user"], expected["user"][[5, 1]], atol=1e-5)


def test_an_own_layer_that_reads_out_degrees_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.UnsupportedModuleError) as caught:
        generate_all(f"{MODELS}:OutDegreeScaled", GenerateOptions(
            init=json.dumps({"size": 6, "etypes": GAME_RELATIONS}), metagraph=GAMES))
    message = " ".join(str(caught.value).split())
    assert message.startswith("tests/models/hetero.py:") and "`return self.layer(G, inputs)`" in message
    assert "self.layer (OutDegreeScaledLayer), a heterogeneous layer of your own, runs layer-wise" in message
    assert "Write it with HeteroGraphConv" in message


def test_an_own_layer_needs_the_metagraph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.OptionsError, match="self.layer1 \\(HeteroRGCNLayer\\) is a heterogeneous layer"):
        generate_all(f"{MODELS}:HeteroRGCN", GenerateOptions(
            init=json.dumps({"etypes": GAME_RELATIONS, "in_size": 6, "hidden_size": 5, "out_size": 3})))


def test_features_read_from_the_graph_are_read_by_inference_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """forward(G, out_key) reading G.nodes[ntype].data["inp"], as DGL's HGT example: inference
    takes the graph alone, reads the same features from it, and is computed for --forward-args'
    out_key, a parameter of its own defaulting to it (another value: ValueError, not the traced
    value's result); the graph without them is a KeyError naming the key, as forward's would be."""
    case = CASES_BY_NAME["hgt_hetero"]
    generated = generate_case(case)
    assert generated.hetero.traced.graph_data == (("inp", "inp"),)
    module = import_source(generated.source, case.folder, "hgt_from_graph")
    model = getattr(module, "HGT")(**json.loads(case.options.init))
    model.eval()
    schema = parse_metagraph(case.options.metagraph)
    g = random_heterograph(schema, {t: 30 for t in schema.ntypes}, seed=3)
    for ntype in g.ntypes:
        g.nodes[ntype].data["inp"] = torch.randn(30, 10)
    with torch.no_grad():
        expected = model(g, "paper")
    assert torch.allclose(model.inference(g, batch_size=7, device="cpu"), expected, atol=1e-5)
    assert torch.allclose(model.inference(g, batch_size=7, device="cpu", out_key="paper"), expected, atol=1e-5)
    with pytest.raises(ValueError, match='forward for out_key="paper" only: generate it again with --forward-args'):
        model.inference(g, batch_size=7, device="cpu", out_key="author")
    del g.nodes["paper"].data["inp"]
    with pytest.raises(KeyError, match="inp"):
        model.inference(g, batch_size=7, device="cpu")


def test_forward_args(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parameter of forward that is not features (out_key) is traced at --forward-args' value;
    without it, the refusal names the parameter and the option; a name forward does not take,
    or a homogeneous model, is refused."""
    monkeypatch.chdir(REPO)
    case = CASES_BY_NAME["hgt_hetero"]
    with pytest.raises(errors.TraceFailedError, match="It traced out_key as a dict of features per node type; "
                       "give the value .* with --forward-args"):
        generate_all(case.target, replace(case.options, forward_args=None))
    with pytest.raises(errors.OptionsError, match="gives out, which is not a parameter of HGT.forward"):
        generate_all(case.target, replace(case.options, forward_args='{"out": "paper"}'))
    with pytest.raises(errors.OptionsError, match="must be a JSON object"):
        generate_all(case.target, replace(case.options, forward_args='["paper"]'))
    with pytest.raises(errors.OptionsError, match="for a heterogeneous model's forward parameters"):
        generate_all("generated_examples/sage/model.py:SAGE", GenerateOptions(
            init=json.dumps({"in_size": 5, "hid_size": 4, "out_size": 3}), forward_args='{"x": 1}'))


def _read_only(x: dict[str, torch.Tensor], folder: Any) -> dict[str, torch.Tensor]:
    """Features as read-only memory maps of .npy files, as a user loads features too big for
    memory: a write into one crashes the process."""
    import warnings

    import numpy as np

    mapped = {}
    for t, tensor in x.items():
        np.save(folder / f"{t}.npy", tensor.numpy())
        with warnings.catch_warnings():  # "The given NumPy array is not writable": exactly
            warnings.simplefilter("ignore", UserWarning)
            mapped[t] = torch.from_numpy(np.load(folder / f"{t}.npy", mmap_mode="r"))
    return mapped


@pytest.mark.parametrize("name", ["rgat", "rgcn_hetero"])
def test_storage_keeps_results_in_files_and_never_writes_its_inputs(name: str, tmp_path: Any) -> None:
    """storage=DIR: every layer's results in .npy files there, the returned ones left as
    result.npy (result_<type>.npy per type for a dict), the others deleted; the inputs, read-only
    memory maps, never written; for some nodes, again over what is there; batch_size="auto"
    with a small budget, and with storage."""
    import os

    import numpy as np

    _, model, g, x, expected = _example(name, f"{name}_storage")
    x = _read_only(x, tmp_path)
    storage = tmp_path / "stored"
    actual = model.inference(g, x, batch_size=7, device="cpu", storage=str(storage))
    expected_dict = expected if isinstance(expected, dict) else {None: expected}
    actual_dict = actual if isinstance(actual, dict) else {None: actual}
    names = {t: "result.npy" if t is None else f"result_{t}.npy" for t in expected_dict}
    assert sorted(os.listdir(storage)) == sorted(names.values())  # every other file deleted
    for t, want in expected_dict.items():
        assert torch.allclose(actual_dict[t], want, atol=1e-4)
        assert torch.equal(torch.from_numpy(np.load(storage / names[t])), actual_dict[t])
    ntype = "paper"
    ids = torch.tensor([5, 1, 5, 30])
    nodes = ids if not isinstance(expected, dict) else {ntype: ids}
    actual = model.inference(g, x, batch_size=5, device="cpu", nodes=nodes, storage=storage)
    got = actual if not isinstance(expected, dict) else actual[ntype]
    assert torch.allclose(got, expected_dict[None if not isinstance(expected, dict) else ntype][ids], atol=1e-4)
    assert len(os.listdir(storage)) == len(names)
    for budget in (1, 2**12, 2**40):  # one node a batch, several, all
        actual = model.inference(g, x, batch_size="auto", device="cpu", max_memory=budget,
                                 storage=tmp_path / f"auto{budget}")
        actual_dict = actual if isinstance(actual, dict) else {None: actual}
        for t, want in expected_dict.items():
            assert torch.allclose(actual_dict[t], want, atol=1e-4)
    with pytest.raises(ValueError, match="batch_size must be a positive int or 'auto'"):
        model.inference(g, x, batch_size="all", device="cpu")
    with pytest.raises(ValueError, match="max_memory must be a positive number of bytes"):
        model.inference(g, x, batch_size="auto", device="cpu", max_memory=0)


HETERO_MEMORY_SCRIPT = """
import importlib.util, json, sys
import numpy as np, torch
from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph
from tests.peak_memory import bytes_in_files, report_out_of_core

spec = importlib.util.spec_from_file_location("generated", sys.argv[1] + "/generated.py")
generated = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generated)
storage, case = sys.argv[2], json.loads(sys.argv[3])
schema = parse_metagraph(case["metagraph"])
N = 50_000  # of each of 4 types
torch.manual_seed(0)
model = generated.RGCN(64, 64, 16, case["init"]["rel_names"]).eval()
g = random_heterograph(schema, {t: N for t in schema.ntypes}, avg_degree=5, seed=0)
g.create_formats_()  # the graph's structure is the caller's: made before the call
x = {}
for t in schema.ntypes:
    np.save(f"{storage}/x_{t}.npy", torch.randn(N, 64).numpy())
    x[t] = torch.from_numpy(np.load(f"{storage}/x_{t}.npy", mmap_mode="r"))
stored = bytes_in_files(generated._HeteroBatches)
small = random_heterograph(schema, {t: 500 for t in schema.ntypes}, seed=0)
x_small = {t: v[:500].clone() for t, v in x.items()}  # torch and dgl warmed up on a small call
model.inference(small, x_small, 100, "cpu")
model.inference(small, x_small, 100, "cpu", storage=storage + "/warm")
report_out_of_core(lambda storage: model.inference(g, x, 1000, "cpu", storage=storage), storage + "/run", stored)
"""


def test_out_of_core_memory_is_bounded_by_a_batch_not_by_the_graph(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """RGCN on 200,000 nodes of 4 types whose features are read-only memory maps: with
    storage=, peak anonymous memory at most 0.35x the bytes kept in files (each layer's results
    and its relations' rows); in memory, most of them (which shows the measurement sees them)."""
    import subprocess
    import sys

    case = CASES_BY_NAME["rgcn_hetero"]
    # generated for the widths the script builds RGCN with (64, 64, 16): inference refuses a
    # model built otherwise than the one it was generated for
    init = {**json.loads(case.options.init), "in_feats": 64, "hid_feats": 64, "out_feats": 16}
    monkeypatch.chdir(REPO)
    generated = generate_all(case.target, replace(case.options, init=json.dumps(init)))
    (tmp_path / "generated.py").write_text(generated.source)
    spec = json.loads((case.folder / "case.json").read_text())
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", HETERO_MEMORY_SCRIPT, str(tmp_path), str(tmp_path),
                          json.dumps(spec)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    # h1 (64 wide) and the result (16) of each type; layer 2's relations' rows, weight first (16)
    assert measured["stored"] == 4 * 50_000 * (64 + 16) * 4 + 7 * 50_000 * 16 * 4
    assert measured["out_of_core"] <= 0.35 * measured["stored"], measured
    assert measured["in_memory"] >= 0.6 * measured["stored"], measured


def test_edge_weights_are_read_by_edge_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's edge weights are the rows of its in-edges' IDs (g's CSC arrays list them in
    another order than their IDs): read by position instead, the result is wrong, which shows
    the check's random graphs tell the two apart."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:WeightedRGCN", OPTIONS["WeightedRGCN"])
    module = import_source(generated.source, REPO / "tests" / "models", "weighted_rgcn_ids")
    model = getattr(module, "WeightedRGCN")(**json.loads(OPTIONS["WeightedRGCN"].init)).eval()
    g = random_heterograph(parse_metagraph(GAMES), {"user": 120, "game": 90}, seed=4)
    for rel in g.canonical_etypes:
        g.edges[rel].data["w"] = torch.rand(g.num_edges(rel), generator=torch.Generator().manual_seed(1)) + 0.5
    x = {"user": torch.randn(120, 5), "game": torch.randn(90, 5)}
    with torch.no_grad():
        expected = model(g, x)
    for nodes in (None, {"user": torch.tensor([7, 3, 100])}):
        actual = model.inference(g, x, batch_size=16, device="cpu", nodes=nodes)
        for t in actual:
            want = expected[t] if nodes is None else expected[t][nodes[t]]
            assert torch.allclose(actual[t], want, atol=1e-5)
    runtime, init = module._HeteroBatches, module._HeteroBatches.__init__

    def by_position(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.csc = {rel: (indptr, indices, ids[:0]) for rel, (indptr, indices, ids) in self.csc.items()}

    monkeypatch.setattr(runtime, "__init__", by_position)
    actual = model.inference(g, x, batch_size=16, device="cpu")
    assert not all(torch.allclose(actual[t], expected[t], atol=1e-3) for t in expected)


def test_one_types_features_as_a_tensor_needs_its_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """forward(g, x) with `{"paper": x}`: without --feat-dims the type of x is unknown, and the
    refusal says how to name it (with it, x is the papers' features: PaperFeaturesOnly above)."""
    monkeypatch.chdir(REPO)
    options = replace(OPTIONS["PaperFeaturesOnly"], feat_dims=None)
    with pytest.raises(errors.GraphUseError, match="forward uses x as one tensor.*--feat-dims paper=128"):
        generate_all(f"{MODELS}:PaperFeaturesOnly", options)


@pytest.mark.parametrize("name", ["rgat", "rgcn_hetero"])
def test_int32_graphs_and_no_nodes(name: str, tmp_path: Any) -> None:
    """A heterograph of int32 IDs gives forward's result for all nodes and for some, in memory
    and in files; nodes= with no node gives no row of the result's width and dtype (a dict: for
    the types asked for), in memory and in files."""
    _, model, g, x, expected = _example(name, f"{name}_int32")
    small = g.int()
    ids = torch.tensor([5, 1, 5, 30])
    by_type = not isinstance(expected, dict)
    for storage in (None, tmp_path / "all"):
        actual = model.inference(small, x, batch_size=7, device="cpu", storage=storage)
        for t, want in (expected.items() if not by_type else [(None, expected)]):
            assert torch.allclose(actual if t is None else actual[t], want, atol=1e-4)
    for graph, nodes, storage in ((small, ids, None), (small, ids.int(), tmp_path / "some"),
                                  (g, ids[:0], None), (g, ids[:0], tmp_path / "none"),
                                  (small, ids[:0].int(), tmp_path / "none_int32")):
        asked = nodes if by_type else {"paper": nodes}
        actual = model.inference(graph, x, batch_size=5, device="cpu", nodes=asked, storage=storage)
        got, want = (actual, expected) if by_type else (actual["paper"], expected["paper"])
        assert got.shape == (len(nodes), want.shape[1]) and got.dtype == want.dtype
        assert torch.allclose(got, want[nodes.long()], atol=1e-4)


@pytest.mark.parametrize("tqdm_installed", [True, False])
def test_progress_bar_changes_nothing_but_stderr(tqdm_installed: bool, monkeypatch, capfd) -> None:
    """progress=True shows a bar per layer and type where tqdm is installed, and nothing where
    it is not (it was an unguarded import: ModuleNotFoundError)."""
    _, model, g, x, expected = _example("rgcn_hetero", f"rgcn_progress_{tqdm_installed}")
    if not tqdm_installed:
        monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm: ImportError
    capfd.readouterr()
    result = model.inference(g, x, batch_size=40, device="cpu", progress=True)
    assert all(torch.allclose(result[t], v, atol=1e-4, rtol=1e-4) for t, v in expected.items())
    assert ("batch" in capfd.readouterr().err) == tqdm_installed


@pytest.mark.parametrize("name", ["BasisRGCN", "BlockDiagonalRGCN"])
def test_weights_through_mod_kwargs_read_source_rows_in_place(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: DGL's rgcn-hetero hands each relation's GraphConv its weight through
    mod_kwargs (a basis or block-diagonal decomposition's product), then adds a self-loop and a
    bias per type. Each relation's source work then runs once per node and every layer reads
    its source rows where they are: no batch gathers them (gathering was a third of the time),
    and the result is forward's, for widening, narrowing and weightless layers alike."""
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:{name}", replace(OPTIONS[name], verify=False))
    assert "mod_kwargs=wdict" in generated.source and ".conv(block" not in generated.source
    module = import_source(generated.source, REPO / "tests" / "models", f"{name.lower()}_in_place")
    model = getattr(module, name)(**json.loads(OPTIONS[name].init)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    g = random_heterograph(parse_metagraph(GAMES), {"user": 130, "game": 70}, seed=5)
    size = 5 if name == "BasisRGCN" else 6
    x = {"user": torch.randn(130, size), "game": torch.randn(70, size)}
    gathered: list[Any] = []
    runtime = module._HeteroBatches
    sources = runtime._sources
    monkeypatch.setattr(runtime, "_sources", lambda self, *a: gathered.append(a) or sources(self, *a))
    with torch.no_grad():
        expected = model(g, x)
        actual = model.inference(g, x, batch_size=16, device="cpu")
    assert not gathered
    for t in expected:
        assert torch.allclose(actual[t], expected[t], atol=1e-5), (t, (actual[t] - expected[t]).abs().max())


def test_a_table_computed_once_is_deleted_after_the_last_layer_that_reads_it(tmp_path) -> None:
    """A table computed once from the weights alone, a row per node (rgcn-hetero's self-loop
    term of the embeddings was one: 172 MB of EntityClassify's peak at 400k papers, alive to
    inference's end beside the last layer's results), is deleted after the last layer that
    reads it. Here the embeddings projected once, read by layer 1's sources only."""
    path = tmp_path / "projected.py"
    path.write_text(PROJECTED_EMBEDDINGS)
    options = GenerateOptions(init=json.dumps({"num_nodes": {"user": 90, "game": 70},
                                               "rel_names": ["follows", "plays", "played_by"]}),
                              metagraph="user:follows:user,user:plays:game,game:played_by:user")
    source = generate_all(f"{path}:ProjectedEmbeddings", options).source
    method = source[source.index("    def inference(") : source.index("# --- gnn-codegen")]
    assert "torch.matmul(self.embeds[" in method, method
    table = re.search(r"(\w+) = \{\s*\"\w+\": torch\.matmul\(self\.embeds\[", method).group(1)
    freed = method.index(f"del {table}\n")
    assert method.index("# Layer 1 of 2") < freed < method.index("# Layer 2 of 2"), method


PROJECTED_EMBEDDINGS = """
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F


class ProjectedEmbeddings(nn.Module):
    def __init__(self, num_nodes, rel_names):
        super().__init__()
        self.embeds = nn.ParameterDict({t: nn.Parameter(torch.randn(n, 8)) for t, n in num_nodes.items()})
        self.proj = nn.Parameter(torch.randn(8, 8))
        self.conv1 = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 8) for r in rel_names})
        self.conv2 = dglnn.HeteroGraphConv({r: dglnn.GraphConv(8, 4) for r in rel_names})

    def forward(self, g):
        h = {t: torch.matmul(e, self.proj) for t, e in self.embeds.items()}
        h = self.conv1(g, h)
        h = {t: F.relu(v) for t, v in h.items()}
        return self.conv2(g, h)
"""

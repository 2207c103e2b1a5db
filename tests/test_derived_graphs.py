"""Graphs forward derives from its graph alone, and values it computes from the graph outside
message passing (issue 35, items 3 and 5; tests/models/derived_graphs.py): each is made once on
the full graph at the top of the generated inference, and the generated inference equals
forward on graphs with and without nodes lacking in-edges, for batch sizes that do and do not
divide the node count. The check's graphs carry a parent's IDs in dgl.NID and dgl.EID."""

from __future__ import annotations

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import random_graph_for
from gnn_codegen.trace.homogenized import random_heterograph
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

# pytest -m long (CI runs it after the README's quick command): every graph-deriving model
# (self-loops, relation graphs, type subgraphs, metapaths), each generated and checked in full
pytestmark = pytest.mark.long

MODEL = "tests/models/derived_graphs.py"

# model -> lines the generated method must hold (as black wraps them or not)
READS = {
    # the file imports add_self_loop by name: the generated code spells it so
    "MethodFormSelfLoops": ["g_with_loops = add_self_loop(g)", "batches_with_loops.map(layer_2"],
    "ReloopedGAT": ["g_with_loops = add_self_loop(dgl.remove_self_loop(g))"],
    "ImportedSelfLoop": ["g_with_loops = add_self_loop(g)"],
    "SimpleThenLooped": ["g_with_loops = add_self_loop(dgl.remove_self_loop(dgl.to_simple(g)))"],
    "HandNormGCN": ["g_with_loops_in_degrees = g_with_loops.in_degrees()"],
    "NormStoredOnGraph": ["in_degrees = g.in_degrees()"],
    # one graph for both layers' self-loops, called as the layers call theirs
    "LoopsInsideLayers": ["graph = add_self_loop(g)", "out_degrees = graph.out_degrees()"],
    "DegreesBesideLoops": ["sg = add_self_loop(g)", "in_degrees = g.in_degrees()", "out_degrees = sg.out_degrees()",
                           "batches_with_loops.map(layer_2"],
    # made once from the whole graph's node count, never from a block's
    "Featureless": ["ones_per_node = torch.ones(g.num_nodes(), 1)", "nodes={\"ones_per_node\": ones_per_node}"],
    "EmbeddingByNodeCount": ["ids = torch.arange(g.num_nodes())",
                             "zeros_per_node = torch.zeros((g.num_nodes(), 6), dtype=torch.float32)"],
    # the heterograph made homogeneous first; the layers run on the result
    "HomogeneousRGCN": ['g = dgl.to_homogeneous(g, ndata=["feat"])', 'feat = g.ndata["feat"]',
                        "etype = g.edata[dgl.ETYPE]", "def inference(self, g, batch_size, device"],
    # the subgraph of one type, taken once; a guard where the type could hold several relations
    "PaperSubgraphSAGE": ['g = dgl.node_type_subgraph(g, ntypes=["paper"])', "if len(g.canonical_etypes) != 1:",
                          "def inference(self, g, x, batch_size, device"],
    "CitesSubgraphGCN": ['g = dgl.edge_type_subgraph(g, etypes=[("paper", "cites", "paper")])',
                         'feat = g.ndata["feat"]', "g_with_loops = add_self_loop(g)"],
    "HomogeneousGATByType": ['g = dgl.to_homogeneous(g, ndata=["feat"])', "ntype = g.ndata[dgl.NTYPE]",
                             "g_with_loops = add_self_loop(g)"],
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions())


def _flat(text: str) -> str:
    return "".join(text.split()).replace(",)", ")")


@pytest.mark.parametrize("name", sorted(READS))
def test_generated_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    method = generated.source.split("    @torch.no_grad()\n")[1].split("# --- gnn-codegen runtime")[0]
    for line in READS[name]:
        assert _flat(line) in _flat(method), line
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_converting_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.GraphUseError) as info:
        _generate("ConvertsTwice", monkeypatch)
    assert str(info.value) == (
        'tests/models/derived_graphs.py:229 (`g2 = dgl.to_homogeneous(hg, ndata=["feat"])`): forward calls '
        "dgl.to_homogeneous on a graph other than the heterograph it is given, or converts it twice: "
        "gnn-codegen follows one conversion of forward's graph, made before anything else reads it. "
        "Convert the graph before calling the model, or evaluate this model with its full-graph forward."
    )


def test_a_subgraph_between_two_types_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.GraphUseError) as info:
        _generate("AuthorPaperSubgraph", monkeypatch)
    assert str(info.value) == (
        "tests/models/derived_graphs.py:271 (`g = hg.edge_type_subgraph([(\"author\", \"writes\", \"paper\")])`): "
        "forward calls dgl.edge_type_subgraph(..., etypes=[('author', 'writes', 'paper')]): gnn-codegen "
        "follows a heterograph made into one graph of one node type and one edge type (dgl.to_homogeneous, "
        "or the subgraph of one node type or of one relation within a node type) before anything else "
        "reads it. Make that graph before calling the model, or evaluate this model with its full-graph "
        "forward."
    )


def test_the_homogeneous_rows_are_forwards_by_type_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    """inference takes the heterograph as forward does; nodes= are IDs of the homogeneous graph."""
    generated = _generate("HomogeneousRGCN", monkeypatch)
    from gnn_codegen.verify.harness import generated_model, import_source

    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    hg = random_heterograph(50, 2, 3, seed=3, zero_in_degree=True)
    for ntype in hg.ntypes:
        hg.nodes[ntype].data["feat"] = torch.randn(hg.num_nodes(ntype), 8)
    expected = model(hg)
    assert torch.allclose(model.inference(hg, 7, "cpu"), expected, atol=1e-5)
    nodes = torch.tensor([49, 0, 30, 24])  # both types
    assert torch.allclose(model.inference(hg, 7, "cpu", nodes=nodes), expected[nodes], atol=1e-5)


def test_the_checks_graph_carries_a_parents_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """So a generated module that reads g.ndata[dgl.NID] where forward reads IDs in g (or no
    field at all) gives other numbers on the check's graph, and is never written."""
    generated = _generate("EmbeddingByNodeCount", monkeypatch)
    g = random_graph_for(generated, 40, seed=0)
    assert not torch.equal(g.ndata[dgl.NID], torch.arange(40))
    assert sorted(g.edata[dgl.EID].tolist()) == list(range(g.num_edges()))
    misread = generated.source.replace("ids = torch.arange(g.num_nodes())", "ids = g.ndata[dgl.NID]")
    assert misread != generated.source
    wrong = type(generated)(**{**generated.__dict__, "source": misread})
    assert not check(wrong, num_nodes=97, seed=1, batch_sizes=(13,)).ok


# --- a tensor per node type written on the heterograph, then dgl.to_homogeneous (type_offsets.py)

METAGRAPH = "author:writes:paper,paper:cites:paper,paper:written-by:author,paper:has:term"
# model, --metagraph -> lines the generated method must hold
TYPED = {
    # no type list read: the check's own heterograph; one category's rows, picked by a mask
    ("TypedFeatsRGCN", ""): ["feats = torch.cat([feats[ntype] for ntype in g.ntypes])",
                             "g = dgl.to_homogeneous(g)", "nodes_by_type = {g.ntypes[1]: nodes}",
                             "return rows_by_type[1]"],
    ("TypedFeatsRGCN", METAGRAPH): ["g = dgl.to_homogeneous(g)", "return rows_by_type[1]"],
    # hg.ntypes read in a loop: answered from --metagraph, checked at entry
    ("TypedFeatsGAT", METAGRAPH): ['if g.ntypes != ["author", "paper", "term"]:',
                                   "x_dict = torch.cat([x_dict[ntype_2] for ntype_2 in g.ntypes])",
                                   "g = dgl.to_homogeneous(g)", '"paper": rows_by_type[1]'],
}


def _typed(name: str, metagraph: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions(metagraph=metagraph or None))


@pytest.mark.parametrize("name, metagraph", sorted(TYPED))
def test_a_tensor_per_type_made_homogeneous_is_followed_and_exact(name: str, metagraph: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """check() runs all nodes, nodes= (IDs by type) and storage= against forward."""
    generated = _typed(name, metagraph, monkeypatch)
    method = generated.source.split("    @torch.no_grad()\n")[1].split("# --- gnn-codegen runtime")[0]
    for line in TYPED[(name, metagraph)]:
        assert _flat(line) in _flat(method), line
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def _user_graph() -> dgl.DGLHeteroGraph:
    gen = torch.Generator().manual_seed(5)
    counts = {"author": 30, "paper": 40, "term": 7}
    relations = {}
    for src, rel, dst in (r.split(":") for r in METAGRAPH.split(",")):
        edges = 3 * counts[dst]
        relations[(src, rel, dst)] = (torch.randint(0, counts[src], (edges,), generator=gen),
                                      torch.randint(0, counts[dst], (edges,), generator=gen))
    return dgl.heterograph(relations, num_nodes_dict=counts)


def test_inference_takes_the_dict_and_ids_by_type_as_forward_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user calls it: a dict of features by type, `nodes=` a dict of IDs by type; a graph
    of other node types than --metagraph's is refused where inference starts."""
    generated = _typed("TypedFeatsGAT", METAGRAPH, monkeypatch)
    from gnn_codegen.verify.harness import generated_model, import_source

    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    hg = _user_graph()
    feats = {t: torch.randn(hg.num_nodes(t), 8) for t in hg.ntypes}
    expected = model(hg, dict(feats))
    actual = model.inference(hg, feats, 11, "cpu")
    assert set(actual) == set(expected)
    for t in expected:
        assert torch.allclose(actual[t], expected[t], atol=1e-5), t
    nodes = {"paper": torch.tensor([39, 0, 7, 7]), "term": torch.tensor([6])}
    some = model.inference(hg, feats, 11, "cpu", nodes=nodes)
    for t, ids in nodes.items():
        assert torch.allclose(some[t], expected[t][ids], atol=1e-5), t
    assert len(some["author"]) == 0
    other = dgl.heterograph({("a", "r", "b"): ([0, 1], [1, 0])})
    with pytest.raises(ValueError, match=r"generated for a heterograph of ntypes \[author, paper, term\]"):
        model.inference(other, {"a": torch.randn(2, 8), "b": torch.randn(2, 8)}, 11, "cpu")


def test_a_type_list_read_without_metagraph_asks_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.GraphUseError) as info:
        _typed("TypedFeatsGAT", "", monkeypatch)
    assert str(info.value).startswith(
        "tests/models/derived_graphs.py:316 (`for i, name in enumerate(hg.ntypes):`): forward loops over "
        "hg.ntypes (the graph's types) in Python")
    assert "which it then takes from --metagraph (give the graph's relations: --metagraph SRC:REL:DST,...)" \
        in str(info.value)


def test_widths_by_node_type_for_a_dict_made_one_tensor_ask_for_its_one_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.FeatDimsError) as info:
        generate_all(f"{MODEL}:TypedFeatsRGCN", GenerateOptions(feat_dims="author=8,paper=8,term=8"))
    assert str(info.value) == (
        "--feat-dims author=...: forward writes feats (a tensor per node type) on its heterograph and makes "
        "it homogeneous, which puts every type's rows in one tensor of one width: give that width by the "
        "parameter's name (--feat-dims feats=8).")


def test_state_a_layer_leaves_on_the_graph_for_the_next_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its check failed as "a bug in gnn-codegen" (exit 1); now the cause is named (exit 2)."""
    with pytest.raises(errors.UnsupportedModuleError) as info:
        _generate("ResidualAttentionNet", monkeypatch)
    assert str(info.value) == (
        "tests/models/derived_graphs.py:354 (`return self.layer2(g, F.relu(self.layer1(g, x)))`): self.layer1 "
        "(ResidualAttentionLayer) leaves g.edata['a'] on the graph forward gives it, and self.layer2 finds it "
        "there, on the same graph: state kept on forward's graph between layers, which layer-wise inference "
        "cannot carry (each layer runs on blocks of its own, which hold nothing an earlier layer left), so the "
        "generated code would give other numbers; nor does it follow a layer's per-edge result handed to the "
        "next as an argument. Evaluate this model with its full-graph forward, or use a variant whose layers "
        "write on their graph only inside `with g.local_scope():` (and so keep nothing between layers)."
    )


# --- g[relation]: the graph of one relation of a heterograph of one node type (relation_graphs.py)

# model -> (--metagraph, --feat-dims, lines the generated method must hold)
RELATIONS = {
    # `for etype in g.etypes: g[etype]`, the results summed; GraphConv's norm from each
    # relation graph's own out-degrees
    "RelationSumGCN": ("user:follows:user,user:likes:user,user:replies:user", None,
                       ['if g.etypes != ["follows", "likes", "replies"]:', 'g_likes = g[("user", "likes", "user")]',
                        "out_degrees_2 = g_likes.out_degrees()", 'if g.ntypes != ["user"]:']),
    # relations one after another, `g[srctype, etype, dsttype]`
    "RelationChainSAGE": ("user:follows:user,user:likes:user", "x=8",
                          ['g_follows = g[("user", "follows", "user")]',
                           "needed = batches_follows.needed(nodes, layers=[batches_follows, batches_likes])"]),
    # relations named in forward, no type list read: the node type is still checked
    "NamedRelationGAT": ("paper:cites:paper,paper:similar:paper", None,
                         ['g_similar = g[("paper", "similar", "paper")]', 'if g.ntypes != ["paper"]:']),
}


def _relations(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    metagraph, feat_dims, _ = RELATIONS[name]
    return generate_all(f"{MODEL}:{name}", GenerateOptions(metagraph=metagraph, feat_dims=feat_dims))


@pytest.mark.parametrize("name", sorted(RELATIONS))
def test_relation_graphs_are_made_once_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """check() runs all nodes, nodes= and storage= against forward."""
    generated = _relations(name, monkeypatch)
    method = generated.source.split("    @torch.no_grad()\n")[1].split("# --- gnn-codegen runtime")[0]
    for line in RELATIONS[name][2]:
        assert _flat(line) in _flat(method), line
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_relation_graphs_as_a_user_calls_inference_and_other_schemas_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _relations("RelationSumGCN", monkeypatch)
    from gnn_codegen.verify.harness import generated_model, import_source

    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    gen = torch.Generator().manual_seed(3)
    relations = {("user", e, "user"): (torch.randint(0, 60, (200,), generator=gen),
                                       torch.randint(0, 60, (200,), generator=gen))
                 for e in ("follows", "likes", "replies")}
    hg = dgl.heterograph(relations, num_nodes_dict={"user": 60})
    x = torch.randn(60, 8)
    expected = model(hg, x)
    assert torch.allclose(model.inference(hg, x, 7, "cpu"), expected, atol=1e-5)
    nodes = torch.tensor([59, 0, 31, 31])
    assert torch.allclose(model.inference(hg, x, 7, "cpu", nodes=nodes), expected[nodes], atol=1e-5)
    fewer = dgl.heterograph({k: v for k, v in relations.items() if k[1] != "likes"}, num_nodes_dict={"user": 60})
    with pytest.raises(ValueError, match=r"generated for a heterograph of etypes \[follows, likes, replies\]"):
        model.inference(fewer, x, 7, "cpu")


def test_a_relation_graph_of_a_graph_of_two_node_types_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.GraphUseError) as info:
        generate_all(f"{MODEL}:TwoTypeRelationConv", GenerateOptions(metagraph="author:writes:paper,paper:cites:paper"))
    assert str(info.value) == (
        "tests/models/derived_graphs.py:431 (`return self.conv(g[\"cites\"], x)`): forward takes the graph of "
        "the relation ('paper', 'cites', 'paper') of a heterograph of the node types ['author', 'paper']: "
        "gnn-codegen follows the relation graphs of a heterograph of one node type, whose nodes are forward's "
        "rows. Make the graph of that one type before calling the model (g = dgl.node_type_subgraph(hg, "
        "['paper']) keeps its relations) and call the model and its inference on it, or evaluate this model "
        "with its full-graph forward.")


def test_a_relation_graph_without_metagraph_asks_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.GraphUseError) as info:
        generate_all(f"{MODEL}:NamedRelationGAT", GenerateOptions())
    assert str(info.value).endswith(
        "forward takes the graph of one relation of its heterograph (g['cites']): gnn-codegen follows it "
        "where it knows the graph's relations; give them with --metagraph SRC:REL:DST,... (a graph of one "
        "node type and several relations within it).")

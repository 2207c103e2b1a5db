"""Heterogeneous models in the forms people write (issue 35, mechanisms 1, 2 and 8): each
generated and compared with forward on random heterographs (tests/test_hetero.py's checks)."""

from __future__ import annotations

import copy
import json

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import generated_model, import_source, max_difference
from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.test_hetero import GAME_RELATIONS, GAMES, _check_everywhere

MODELS = "tests/models/hetero_forms.py"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cases import REPO

    monkeypatch.chdir(REPO)


def test_features_defaulting_to_none_after_a_flag_are_an_input() -> None:
    """forward(self, graph, return_hidden=False, feats=None, **unused): traced at None, the
    HeteroGraphConv is given None; feats is the input its callers always give."""
    generated = generate_all(f"{MODELS}:OptionalFeaturesRGCN", GenerateOptions(
        init=json.dumps({"in_size": 5, "hid_size": 6, "out_size": 3, "rel_names": GAME_RELATIONS}),
        metagraph=GAMES))
    assert "def inference(\n        self,\n        graph,\n        feats,\n" in generated.source
    _check_everywhere(generated)


# --- features as a dict by node type over metapath graphs (dict_inputs.py, metapath_types.py) ---

def _acm_papers(paper: str = "paper", seed: int = 0):
    from tests.test_metapaths import _acm

    g = _acm(seed=seed)
    if paper == "paper":
        return g
    return dgl.heterograph({(paper if s == "paper" else s, e, paper if d == "paper" else d): g.edges(etype=(s, e, d))
                            for s, e, d in g.canonical_etypes},
                           num_nodes_dict={paper if t == "paper" else t: g.num_nodes(t) for t in g.ntypes})


VIEW_OPTIONS = GenerateOptions(init=json.dumps({"in_dims": {"paper": 5}, "hid_size": 4,
                                                "metapaths": {"pap": ["pa", "ap"], "pfp": ["pf", "fp"]}}),
                               feat_dims="paper=5")


def _written(name: str, options: GenerateOptions):
    generated = generate_all(f"{MODELS}:{name}", options)
    assert generated.verification is not None and generated.verification.ok
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 1)
    reference.eval()
    module = import_source(generated.source, generated.loaded.path.parent)
    return generated, reference, generated_model(generated, module, reference)


def test_a_dict_of_features_over_metapath_graphs_keyed_by_their_types_equals_forward() -> None:
    """`{t: f(x) for t, x in feats.items()}`, `h[mg.srctypes[0]]`, results under `mg.dsttypes[0]`:
    decided while tracing from the dict's types; inference takes the dict as forward does."""
    generated, reference, model = _written("MetapathViewEncoder", VIEW_OPTIONS)
    assert "def inference(\n        self,\n        g,\n        feats,\n" in generated.source
    g = _acm_papers()
    feats = {"paper": torch.randn(g.num_nodes("paper"), 5, generator=torch.Generator().manual_seed(2))}
    with torch.no_grad():
        expected = reference(g, feats)
    assert list(expected) == ["paper"]
    for batch_size in (1, 13, 1000):
        actual = model.inference(g, feats, batch_size, "cpu")
        assert list(actual) == ["paper"] and max_difference(actual["paper"], expected["paper"]) < 1e-5
    nodes = torch.tensor([5, 0, 77, 5])
    actual = model.inference(g, feats, 16, "cpu", nodes=nodes)
    assert max_difference(actual["paper"], expected["paper"][nodes]) < 1e-5


def test_inference_refuses_another_type_set_and_metapaths_of_another_type() -> None:
    _, _, model = _written("MetapathViewEncoder", VIEW_OPTIONS)
    g = _acm_papers()
    x = torch.randn(g.num_nodes("paper"), 5)
    with pytest.raises(ValueError, match=r"generated for feats with the keys \['paper'\].*\['author', 'paper'\]"):
        model.inference(g, {"paper": x, "author": torch.randn(80, 5)}, 16, "cpu")
    with pytest.raises(ValueError, match="generated for metapaths of the node type paper.*at article"):
        model.inference(_acm_papers("article"), {"paper": x}, 16, "cpu")


def test_a_metapath_graphs_types_without_a_dict_naming_them_are_refused() -> None:
    with pytest.raises(errors.GraphUseError) as refused:
        generate_all(f"{MODELS}:MetapathTypesOfATensor", GenerateOptions(init=json.dumps({"size": 4}),
                                                                         feat_dims="h=4"))
    message = " ".join(str(refused.value).split())
    assert message.startswith("tests/models/hetero_forms.py:")
    assert "(`return {mg.dsttypes[0]: self.conv(mg, h)}`): forward reads the dsttypes of a metapath graph" in message
    assert "--feat-dims paper=WIDTH" in message


# --- refusals whose way out leads somewhere (issue 35, item 8) ---

def test_squeeze_with_the_dim_it_drops_is_exact() -> None:
    """SqueezedHeads with `h.squeeze(-1)`; without a dim: tests/test_squeezed_rows.py."""
    _check_everywhere(generate_all(f"{MODELS}:SqueezedHeads", GenerateOptions(
        init=json.dumps({"size": 4, "rel_names": GAME_RELATIONS, "squeeze_dim": -1}), metagraph=GAMES)))


def test_layers_on_a_subgraph_of_some_relations_are_refused_naming_the_construct() -> None:
    """The plays tower's subgraph leaves out follows, between the two types with features: on
    the whole graph's blocks it would add follows' messages, so it is refused, naming it."""
    pairs = [[["user", "plays", "game"], ["game", "played_by", "user"]], [["user", "follows", "user"]]]
    with pytest.raises(errors.GraphUseError) as refused:
        generate_all(f"{MODELS}:PerRelationTowers", GenerateOptions(
            init=json.dumps({"size": 4, "pairs": pairs}), metagraph=GAMES))
    assert " ".join(str(refused.value).split()) == (
        "tests/models/hetero_forms.py:98 (`out.update(tower(dgl.edge_type_subgraph(g, pair), h_dict))`): forward "
        "runs a heterogeneous layer (a HeteroGraphConv, or one of yours) on a subgraph of some of its graph's "
        "types (dgl.edge_type_subgraph, dgl.node_type_subgraph) of the relations [('user', 'plays', 'game'), ('game', 'played_by', 'user')], "
        "where the graph also has ('user', 'follows', 'user') between types with features: gnn-codegen runs each "
        "such layer on blocks of forward's whole graph, where that relation's messages would be added (DGL's "
        "HeteroGraphConv runs every relation between types with features). Make that subgraph before calling "
        "the model (sub = dgl.edge_type_subgraph(g, [('user', 'plays', 'game'), ('game', 'played_by', 'user')])), "
        "and generate and call a model whose forward runs those layers on the graph it is given (one model per "
        "subgraph) with --metagraph user:plays:game,game:played_by:user, or evaluate this model with its "
        "full-graph forward.")


# --- type subgraphs made in forward (hetero/type_subgraphs.py) ------------------------------------

# a graph whose relations into user and game, other than plays and played_by, come from a type
# without features (review)
REVIEWS = "user:plays:game,game:played_by:user,user:writes:review,review:written_by:user"


@pytest.mark.parametrize("name", ["PurchaseSubgraphSAGE", "TypePairGCN"])
def test_layers_on_a_type_subgraph_that_drops_no_featured_relation_equal_forward(name: str) -> None:
    """`dgl.edge_type_subgraph(g, ["plays", "played_by"])`, `g.node_type_subgraph(["user",
    "game"])`: the layers run the same relations on the whole graph's blocks; all nodes,
    nodes=, storage= and a simulated GPU against forward."""
    _check_everywhere(generate_all(f"{MODELS}:{name}", GenerateOptions(metagraph=REVIEWS, feat_dims="game=4,user=4")))


@pytest.mark.parametrize("keys", ["feat=6", "feat=6,pe=3"])
def test_a_collated_dict_and_a_test_of_its_keys_on_a_homogeneous_graph(keys: str) -> None:
    """`"pe" in batch` decided by the keys --feat-dims names; inference refuses another key set."""
    from gnn_codegen.verify.harness import random_graph

    generated, reference, model = _written("CollatedBatchGCN", GenerateOptions(
        init=json.dumps({"in_size": 6, "pe_size": 3, "hid_size": 5, "out_size": 2}), feat_dims=keys))
    g = random_graph(90, seed=4)
    gen = torch.Generator().manual_seed(1)
    batch = {"feat": torch.randn(90, 6, generator=gen)}
    if "pe" in keys:
        batch["pe"] = torch.randn(90, 3, generator=gen)
    with torch.no_grad():
        expected = reference(g, batch)
    assert max_difference(model.inference(g, batch, 7, "cpu"), expected) < 1e-5
    other = {"feat": batch["feat"]} if "pe" in keys else {**batch, "pe": torch.randn(90, 3)}
    with pytest.raises(ValueError, match="generated for batch with the keys"):
        model.inference(g, other, 7, "cpu")


def test_a_parameter_is_taken_as_a_dict_only_where_forward_uses_it_so() -> None:
    """--feat-dims naming what is no parameter packs forward's open parameter into a dict only
    where forward reads it as one: a typo for a tensor keeps the message naming forward's inputs."""
    from gnn_codegen.trace.dict_inputs import used_as_dict

    def by_key(self, g, h_dict):
        return self.fc(h_dict[self.category])

    def by_loop_key(self, g, h):
        return {t: h[t] for t in self.types}

    def membership(self, g, batch):
        return batch.get("x") if "pe" in batch else None

    def tensor(self, g, x):
        return self.conv(g, x[:, 0]) + sum(x[i] for i in range(2))

    assert used_as_dict(by_key, "h_dict") and used_as_dict(by_loop_key, "h") and used_as_dict(membership, "batch")
    assert not used_as_dict(tensor, "x")


def test_a_stack_over_a_subgraphs_relations_in_another_order_is_refused() -> None:
    with pytest.raises(errors.GraphUseError) as refused:
        generate_all(f"{MODELS}:StackedOutOfOrder", GenerateOptions(metagraph=GAMES, feat_dims="game=4,user=4"))
    message = " ".join(str(refused.value).split())
    assert message.startswith("tests/models/hetero_forms.py:165 (`return {t: v.flatten(1) for t, v in "
                              "self.conv(sub, feats).items()}`): forward runs a heterogeneous layer whose results "
                              "across relations depend on their order")
    assert message.endswith("in the order [('user', 'follows', 'user'), ('game', 'played_by', 'user')]: "
                            "gnn-codegen runs it on blocks of forward's whole graph, where they come in the graph's "
                            "order [('game', 'played_by', 'user'), ('user', 'follows', 'user')]. List the relations "
                            "in the graph's order (g.canonical_etypes), or evaluate this model with its full-graph "
                            "forward.")


def test_a_feature_no_module_reads_needs_no_width() -> None:
    """The fields' features are given to a HeteroGraphConv whose graph (a subgraph forward makes)
    holds no relation of theirs: no module fixes their width and none needs to, so nothing asks
    for --feat-dims (it did: a random heterogeneous draw found it); the rest equals forward."""
    generated = generate_all(f"{MODELS}:CitationSubgraphGCN", GenerateOptions(
        metagraph="paper:cites:paper,author:writes:paper,paper:has_topic:field"))
    _check_everywhere(generated)

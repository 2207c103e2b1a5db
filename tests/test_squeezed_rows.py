"""Squeezes of size-1 axes (issue 35, item 1; gnn_codegen/render/squeezed_rows.py, tests/models/
squeezed_rows.py): `h.squeeze()` with no dim, `h.squeeze(0)` of rows, `.view(-1)` / `.flatten()`
of a score per node, on homogeneous and heterogeneous models. The generated inference equals
forward, and refuses a graph (or a node type) of one node, where forward's squeeze drops the
rows' axis too, with a ValueError naming forward's line, never a result of another shape."""

from __future__ import annotations

import copy
import json
import re

import dgl
import pytest
import torch

from gnn_codegen.verify.harness import generated_model, import_source
from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO
from tests.test_hetero import GAME_RELATIONS, GAMES, _check_everywhere

MODELS = "tests/models/squeezed_rows.py"
HETERO_FORMS = "tests/models/hetero_forms.py"
SURVEY = "tests/models/survey"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def _model(generated):
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 3)
    model.load_state_dict(reference.state_dict())
    return model.eval(), reference.eval()


def _one_node_refused(message_start: str, call) -> str:
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(message_start), str(refused.value)
    return str(refused.value)


# --- homogeneous ------------------------------------------------------------------------------

def test_squeeze_without_a_dim_squeezes_the_width_of_one_and_one_node_is_refused() -> None:
    """BinaryGAT: `h.mean(1).squeeze()` of (N, 1) is written `.squeeze(1)`; on one node forward
    returns a number (the rows' axis gone too): refused where inference starts."""
    generated = generate_all(f"{MODELS}:BinaryGAT", GenerateOptions(
        init=json.dumps({"in_feats": 5, "hidden": 4, "heads": 3})))
    assert generated.verification is not None and generated.verification.ok
    assert "return h.mean(1).squeeze(1)" in generated.source
    for seed in (1, 2):
        result = check(generated, num_nodes=61, seed=seed, batch_sizes=(1, 7, 61))
        assert result.ok, result.max_abs_diff
    model, reference = _model(generated)
    one = dgl.add_self_loop(dgl.graph(([], []), num_nodes=1))
    x = torch.randn(1, 5)
    assert reference(one, x).shape == ()  # forward: no rows' axis left
    _one_node_refused("g has one node: forward squeezes the rows axis away there, at "
                      "`return h.mean(1).squeeze()`, which a result per row cannot give",
                      lambda: model.inference(one, x, batch_size=4, device="cpu"))
    two = dgl.add_self_loop(dgl.graph(([0], [1]), num_nodes=2))
    x2 = torch.randn(2, 5)
    assert torch.allclose(model.inference(two, x2, batch_size=1, device="cpu"), reference(two, x2), atol=1e-5)


def test_a_score_per_node_viewed_or_flattened_to_one_number_per_row() -> None:
    """ScoredSAGE: `self.score(h).view(-1)` and `torch.sigmoid(...).flatten()` of (N, 1): a
    number per node, row by row (flatten() was refused as mixing rows). One node keeps its row."""
    generated = generate_all(f"{MODELS}:ScoredSAGE", GenerateOptions(init=json.dumps({"in_feats": 5, "hidden": 4})))
    assert generated.verification is not None and generated.verification.ok
    assert "return logits, torch.sigmoid(h).flatten()" in generated.source
    for seed in (1, 2):
        assert check(generated, num_nodes=61, seed=seed, batch_sizes=(7, 61)).ok
    model, reference = _model(generated)
    one, x = dgl.graph(([0], [0]), num_nodes=1), torch.randn(1, 5)
    for got, expected in zip(model.inference(one, x, batch_size=4, device="cpu"), reference(one, x)):
        assert got.shape == expected.shape == (1,) and torch.allclose(got, expected, atol=1e-6)


def test_torch_squeeze_as_a_function_and_a_squeeze_of_nothing() -> None:
    """SqueezedGCN: `F.relu(...).squeeze()` of (N, hidden) is written as nothing (a batch of one
    node keeps its row), `torch.squeeze(conv2(g, h))` of (N, 1) as torch.squeeze(..., 1)."""
    generated = generate_all(f"{MODELS}:SqueezedGCN", GenerateOptions(
        init=json.dumps({"in_feats": 5, "hidden": 4}), feat_dims="x=5"))
    assert generated.verification is not None and generated.verification.ok
    source = " ".join(generated.source.split("# Layer 1 of 2")[1].split("# --- gnn-codegen")[0].split())
    assert "h = F.relu(_graph_conv_aggregate(self.conv1, block, feat0), inplace=True) #" in source, source
    assert ".squeeze()" not in source
    assert "torch.squeeze(_graph_conv_aggregate(self.conv2, block, feat1), 1)" in source, source
    for seed in (1, 2):
        assert check(generated, num_nodes=61, seed=seed, batch_sizes=(1, 7)).ok
    model, _ = _model(generated)
    _one_node_refused("g has one node: forward squeezes the rows axis away there, at "
                      "`h = F.relu(self.conv1(g, x)).squeeze()`, which",
                      lambda: model.inference(dgl.graph(([0], [0])), torch.randn(1, 5), batch_size=4, device="cpu"))


def test_a_score_per_edge_squeezed_refuses_a_graph_of_one_edge() -> None:
    """EdgeScorer: `g.edata["s"].squeeze()` of (E, 1): a logit per edge, `.squeeze(1)`; one
    edge is refused."""
    generated = generate_all(f"{MODELS}:EdgeScorer", GenerateOptions(
        init=json.dumps({"in_feats": 5, "hidden": 4}), feat_dims="x=5"))
    assert generated.verification is not None and generated.verification.ok
    assert "return s.squeeze(1)" in generated.source
    assert check(generated, num_nodes=61, seed=1, batch_sizes=(7, 61)).ok
    model, reference = _model(generated)
    one, x = dgl.graph(([0], [1]), num_nodes=2), torch.randn(2, 5)
    assert reference(one, x).shape == ()
    _one_node_refused("g has one edge: forward squeezes the rows axis away there, at "
                      "`return g.edata[\"s\"].squeeze()`, which",
                      lambda: model.inference(one, x, batch_size=4, device="cpu"))


def test_ggd_squeeze_of_rows_refuses_one_node() -> None:
    """GGD's `feat = h_1.clone().squeeze(0)`: nothing on many rows, written as nothing; on one
    node forward squeezes the rows away and returns another shape: refused at entry."""
    init = {"in_feats": 8, "n_hidden": 8, "n_layers": 1, "num_hop": 10}
    generated = generate_all(f"{SURVEY}/ssl_style.py:GGD", GenerateOptions(init=json.dumps(init)))
    model, reference = _model(generated)
    one, x = dgl.graph(([0], [0]), num_nodes=1), torch.randn(1, 8)
    message = _one_node_refused("g has one node: forward squeezes the rows axis away there, at "
                                "`feat = h_1.clone().squeeze(0)`, which",
                                lambda: model.inference(one, x, batch_size=4, device="cpu"))
    assert message.endswith("call inference on more than one, or leave out forward's squeeze(0), which squeezes "
                            "nothing on more")


# --- heterogeneous ----------------------------------------------------------------------------

def test_hetero_squeeze_without_a_dim_per_type_is_exact_and_one_node_of_a_type_is_refused() -> None:
    """TypedScores: `{ntype: self.score(F.relu(x)).squeeze() for ...}`, a logit per node of
    each type; a type of one node is refused, naming the type."""
    generated = generate_all(f"{MODELS}:TypedScores", GenerateOptions(
        init=json.dumps({"size": 4, "rel_names": GAME_RELATIONS}), metagraph=GAMES))
    assert "return score.squeeze(tuple(range(1, score.dim())))" in generated.source
    _check_everywhere(generated)
    model, reference = _model(generated)
    g = dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 0]), ("user", "plays", "game"): ([0, 1], [0, 0]),
                         ("game", "played_by", "user"): ([0], [1])}, num_nodes_dict={"user": 2, "game": 1})
    feats = {"user": torch.randn(2, 4), "game": torch.randn(1, 4)}
    assert reference(g, feats)["game"].shape == ()
    _one_node_refused("g has one game node: forward squeezes the rows axis away there, at `return {ntype: "
                      "self.score(F.relu(x)).squeeze() for ntype, x in h.items()}`, which",
                      lambda: model.inference(g, feats, batch_size=4, device="cpu"))


def test_hetero_squeeze_of_rows_is_nothing_and_one_node_of_a_type_is_refused() -> None:
    """HeteroBatchOfOne: `F.elu(x).squeeze(0)` of each type's rows squeezes nothing on more than
    one node (it was refused as mixing rows); on one node forward drops the rows' axis."""
    generated = generate_all(f"{MODELS}:HeteroBatchOfOne", GenerateOptions(
        init=json.dumps({"size": 4, "rel_names": GAME_RELATIONS}), metagraph=GAMES))
    assert "squeeze = elu\n            return self.out(squeeze)" in generated.source
    _check_everywhere(generated)
    model, _ = _model(generated)
    g = dgl.heterograph({("user", "follows", "user"): ([0], [1]), ("user", "plays", "game"): ([0], [0]),
                         ("game", "played_by", "user"): ([0], [1])}, num_nodes_dict={"user": 2, "game": 1})
    message = _one_node_refused("g has one game node: forward squeezes the rows axis away there, at ",
                                lambda: model.inference(g, {"user": torch.randn(2, 4), "game": torch.randn(1, 4)},
                                                        batch_size=4, device="cpu"))
    assert message.endswith("or leave out forward's squeeze(0), which squeezes nothing on more")


def test_squeezed_heads_are_exact_where_they_were_refused() -> None:
    """SqueezedHeads: one head per relation, `h.squeeze()` drops the head axis (it asked for
    h.squeeze(-1) before)."""
    generated = generate_all(f"{HETERO_FORMS}:SqueezedHeads", GenerateOptions(
        init=json.dumps({"size": 4, "rel_names": GAME_RELATIONS}), metagraph=GAMES))
    _check_everywhere(generated)


def test_openhgnn_rgat_is_exact_and_refuses_one_node_of_a_type() -> None:
    """OpenHGNN's RGAT: flags and **kwargs after the inputs traced at their defaults, GATv2Conv
    per relation (HeteroGraphConv lets them take nodes without in-edges, as forward does: the
    check's graphs have such nodes), `h.squeeze()` after the heads are flattened or averaged."""
    from tests.models.survey.cases import ACM, ACM_ETYPES

    init = {"in_dim": 6, "out_dim": 3, "h_dim": 4, "etypes": ACM_ETYPES, "num_heads": 2}
    generated = generate_all(f"{SURVEY}/openhgnn_style.py:RGAT", GenerateOptions(
        init=json.dumps(init), metagraph=ACM, feat_dims="author=6,paper=6,subject=6"))
    assert generated.verification is not None and generated.verification.ok
    assert generated.verification.zero_in_degree_nodes > 0
    assert re.search(r"def inference\(\s*self,\s*hg,\s*h_dict,\s*batch_size", generated.source)
    _check_everywhere(generated)
    model, reference = _model(generated)
    rels = [("paper", "pa", "author"), ("author", "ap", "paper"), ("paper", "ps", "subject"), ("subject", "sp", "paper")]
    g = dgl.heterograph({rel: ([0], [0]) for rel in rels}, num_nodes_dict={"paper": 2, "author": 2, "subject": 1})
    h = {t: torch.randn(g.num_nodes(t), 6) for t in g.ntypes}
    _one_node_refused("hg has one subject node: forward squeezes the rows axis away there, at "
                      "`out_put[n_type] = h.squeeze()`, which",
                      lambda: model.inference(hg=g, h_dict=h, batch_size=4, device="cpu"))
    g = dgl.heterograph({rel: ([0, 1], [1, 1]) for rel in rels}, num_nodes_dict={"paper": 2, "author": 2, "subject": 2})
    h = {t: torch.randn(2, 6) for t in g.ntypes}
    got, expected = model.inference(g, h, batch_size=1, device="cpu"), reference(g, h)
    assert all(torch.allclose(got[t], expected[t], atol=1e-5) for t in expected)

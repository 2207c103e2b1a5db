"""A generated inference runs on the model as it was built when it was generated, and refuses,
with a ValueError, one built with other constructor arguments: the trace unrolled the model's
loops and read its settings (a ModuleList's length, APPNP's k) as they were, so another build
would get another function than its forward, without a word (a review found citation_gcn,
generated with n_layers=2, returning (50, 8) rows on a model built with n_layers=3, whose
forward returns (50, 4)). Other weights, and another number of nodes for a heterogeneous
model's embeddings, are the same build."""

from __future__ import annotations

import json

import dgl
import pytest
import torch

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph
from gnn_codegen.render.built import built_digest
from gnn_codegen.verify.harness import import_source
from tests.cases import CASES_BY_NAME, generate_case

REFUSED = "built differently from the model inference was generated for .* regenerate it with this model's constructor"


def _module(name: str):
    """The generated module of an example (generated with its case.json's --init), imported."""
    generated = generate_case(CASES_BY_NAME[name])
    return import_source(generated.source, CASES_BY_NAME[name].folder, f"built_{name}")


def _graph(num_nodes: int = 50) -> dgl.DGLGraph:
    return dgl.add_self_loop(dgl.rand_graph(num_nodes, 4 * num_nodes))


def test_another_layer_count_is_refused() -> None:
    """citation_gcn was generated from GCN(..., n_layers=2): three layers unrolled."""
    gcn = _module("citation_gcn")
    g = _graph()
    model = gcn.GCN(g, 16, 8, 4, n_layers=3).eval()
    x = torch.randn(50, 16)
    assert model(x).shape == (50, 4)
    with pytest.raises(ValueError, match=REFUSED):
        model.inference(g, x, batch_size=16, device="cpu")


@pytest.mark.parametrize("settings", [{"k": 5}, {"alpha": 0.2}, {"hiddens": [32, 32]}],
                         ids=["k", "alpha", "layers"])
def test_another_propagation_is_refused(settings: dict) -> None:
    """appnp was generated from APPNP(..., k=10, alpha=0.1): k steps, each with that alpha."""
    appnp = _module("appnp")
    g = _graph()
    model = appnp.APPNP(g, **{"in_feats": 16, "hiddens": [32], "n_classes": 4, **settings}).eval()
    with pytest.raises(ValueError, match=REFUSED):
        model.inference(g, torch.randn(50, 16), batch_size=16, device="cpu")


def test_the_same_build_with_other_weights_runs() -> None:
    gcn = _module("citation_gcn")
    g = _graph()
    model = gcn.GCN(g, 16, 8, 4, n_layers=2)
    perturb(model, 3)
    model.eval()
    x = torch.randn(50, 16)
    with torch.no_grad():
        expected = model(x)
    assert torch.allclose(model.inference(g, x, batch_size=16, device="cpu"), expected, atol=1e-5)


def test_a_heterogeneous_model_with_other_node_counts_runs() -> None:
    """entity_classify's embeddings have a row per node of each type: a graph with other
    counts builds the model with other tables, the same build."""
    case = CASES_BY_NAME["entity_classify"]
    module = _module("entity_classify")
    init = json.loads(case.options.init)
    counts = {t: n + 17 for t, n in init["num_nodes"].items()}
    model = module.EntityClassify(**{**init, "num_nodes": counts})
    perturb(model, 4)
    model.eval()
    g = random_heterograph(parse_metagraph(case.options.metagraph), counts, seed=4)
    with torch.no_grad():
        expected = model(g)
    actual = model.inference(g, batch_size=16, device="cpu")
    assert actual.keys() == expected.keys()
    for ntype in expected:
        assert torch.allclose(actual[ntype], expected[ntype], atol=1e-5)


def test_a_heterogeneous_model_with_another_width_is_refused() -> None:
    case = CASES_BY_NAME["rgcn_hetero"]
    module = _module("rgcn_hetero")
    model = module.RGCN(**{**json.loads(case.options.init), "hid_feats": 24}).eval()
    schema = parse_metagraph(case.options.metagraph)
    counts = {t: 30 for t in schema.ntypes}
    g = random_heterograph(schema, counts, seed=1)
    x = {t: torch.randn(n, 12) for t, n in counts.items()}
    with pytest.raises(ValueError, match=REFUSED):
        model.inference(g, x, batch_size=16, device="cpu")


def test_the_digest_covers_settings_not_weights_nor_caches() -> None:
    """What built() counts (templates/built.py.j2's docstring), on modules as users build them."""

    class Net(torch.nn.Module):
        def __init__(self, width: int = 8, act=torch.relu, p: float = 0.5, rows: int = 10) -> None:
            super().__init__()
            self.width, self.act, self.cache, self.device = width, act, None, "cpu"
            self.embed = torch.nn.Embedding(rows, width)
            self.lin = torch.nn.Linear(width, width)
            self.drop = torch.nn.Dropout(p)

    base = built_digest(Net())
    assert built_digest(Net()) == base  # other weights
    assert built_digest(Net(rows=99)) == base  # an embedding's row per node
    assert built_digest(Net().double()) == base
    cached = Net()
    cached.cache = torch.ones(3)  # a cache filled by a first forward
    cached.device = "cuda"
    assert built_digest(cached) == base
    reordered = Net()
    reordered.__dict__ = dict(reversed(vars(reordered).items()))  # the order set in is no setting
    assert built_digest(reordered) == base
    assert built_digest(Net(width=9)) != base
    assert built_digest(Net(act=torch.tanh)) != base
    assert built_digest(Net(p=0.25)) != base
    assert built_digest(Net(p=0.5 + 1e-12)) != base  # floats exactly

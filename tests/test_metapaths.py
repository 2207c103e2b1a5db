"""Models over a heterogeneous graph's metapaths (gnn_codegen/trace/metapaths.py; generated_examples/han):
the schema the check infers from the metapaths alone, the generated HAN on a graph of another
schema that has the same metapaths (ACM's papers, authors and subjects), and the refusal of
metapaths that do not start and end at one node type."""

from __future__ import annotations

import copy

import dgl
import pytest
import torch

from gnn_codegen.verify.harness import full_graph_forward, generated_model, import_source, max_difference
from gnn_codegen.trace.metapaths import metapath_schema, metapaths, random_metapath_graph
from gnn_codegen.analysis.perturb import perturb
from tests.cases import CASES_BY_NAME, generate_case


def test_the_schema_joins_only_what_the_metapaths_join() -> None:
    assert metapath_schema((("pa", "ap"), ("pf", "fp"))) == (
        ("type1", "ap", "node"), ("type2", "fp", "node"), ("node", "pa", "type1"), ("node", "pf", "type2"),
    )
    # a relation walked twice: one type between its two uses
    assert metapath_schema((("pa", "ap", "pa", "ap"),)) == (("type1", "ap", "node"), ("node", "pa", "type1"))
    # a relation from the type to itself
    assert metapath_schema((("cites",),)) == (("node", "cites", "node"),)


@pytest.mark.parametrize("zero_in_degree", [True, False])
def test_every_metapath_graph_has_the_rows_of_one_type(zero_in_degree: bool) -> None:
    paths = (("pa", "ap"), ("pf", "fp"))
    g = random_metapath_graph(paths, 50, seed=3, zero_in_degree=zero_in_degree)
    for path in paths:
        graph = dgl.metapath_reachable_graph(g, path)
        assert graph.ntypes == ["node"] and graph.num_nodes() == 50
        in_degrees = graph.in_degrees()
        assert bool((in_degrees == 0).any()) == zero_in_degree
        assert zero_in_degree or bool(graph.has_edges_between(torch.arange(50), torch.arange(50)).all())


def _acm(num_papers: int = 120, seed: int = 0) -> dgl.DGLHeteroGraph:
    """Papers written by authors and about subjects, each relation with its reverse, some
    papers without authors: the shape of DGL's ACM graph for HAN."""
    gen = torch.Generator().manual_seed(seed)
    num_authors, num_subjects = 80, 7
    writes = (torch.randint(0, num_papers, (300,), generator=gen), torch.randint(0, num_authors, (300,), generator=gen))
    keep = writes[0] % 9 != 4  # papers without authors: no in-edges in the paper-author-paper graph
    pa = (writes[0][keep], writes[1][keep])
    subjects = (torch.arange(num_papers), torch.randint(0, num_subjects, (num_papers,), generator=gen))
    return dgl.heterograph({
        ("paper", "pa", "author"): pa, ("author", "ap", "paper"): (pa[1], pa[0]),
        ("paper", "pf", "field"): subjects, ("field", "fp", "paper"): (subjects[1], subjects[0]),
    }, num_nodes_dict={"paper": num_papers, "author": num_authors, "field": num_subjects})


def _han():
    generated = generate_case(CASES_BY_NAME["han"])
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 1)
    reference.eval()
    module = import_source(generated.source, generated.loaded.path.parent)
    return generated, reference, generated_model(generated, module, reference)


def test_han_equals_forward_on_an_acm_shaped_graph() -> None:
    generated, reference, model = _han()
    assert metapaths(generated.program) == (("pa", "ap"), ("pf", "fp"))
    g = _acm()
    h = torch.randn(g.num_nodes("paper"), 12, generator=torch.Generator().manual_seed(5))
    expected = full_graph_forward(reference, generated, g, [h])
    for batch_size in (1, 13, 120):
        actual = model.inference(g, h, batch_size, "cpu")
        assert max_difference(actual, expected) < 1e-5
    nodes = torch.tensor([5, 0, 77, 5])
    assert max_difference(model.inference(g, h, 16, "cpu", nodes=nodes), expected[nodes]) < 1e-5


def test_metapaths_of_another_type_are_refused() -> None:
    """`ap` leading back to subjects, not papers: the paper-author-? graph has two node types,
    whose nodes are not forward's rows."""
    _, _, model = _han()
    g = _acm()
    edges = {rel: g.edges(etype=rel) for rel in g.canonical_etypes}
    edges[("author", "ap", "field")] = tuple(t % 7 if i else t for i, t in enumerate(edges.pop(("author", "ap", "paper"))))
    wrong = dgl.heterograph(edges, num_nodes_dict={t: g.num_nodes(t) for t in g.ntypes})
    with pytest.raises(ValueError, match="the metapaths must start and end at one node type"):
        model.inference(wrong, torch.randn(120, 12), 16, "cpu")

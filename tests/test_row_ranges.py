"""forward's results that are the rows of a fixed range of nodes (issue 35, item 1;
tests/models/row_ranges.py, gnn_codegen/lower/row_ranges.py): `h[: self.num_users]`,
`torch.split(h, [n_users, n_items])`, `h.narrow(0, 0, n)`, `h[-k:, :]`. The generated inference
computes the whole result and returns those rows, equal to forward for all nodes, for nodes=
(each part: the requested nodes in its range) and out of core; a graph too small for the range
is refused where inference starts."""

from __future__ import annotations

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import generated_model, import_source
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/row_ranges.py"

# model -> what the generated method returns (spaces collapsed)
RETURNS = {
    "SplitUsersItems": ["batches.result_rows(lightgcn_all_embeddings,0,30,nodes=nodes,name=\"result_0\")",
                        "batches.result_rows(lightgcn_all_embeddings,30,50,nodes=nodes,name=\"result_1\")",
                        "ifg.num_nodes()!=50:"],
    "TargetsFirstSAGE": ["returnbatches.result_rows(out,0,40,nodes=nodes,name=\"result_0\")", "ifg.num_nodes()<40:"],
    "EmbeddingsAndLastRows": ["\"last\":batches.result_rows(h,-10,None,nodes=nodes,name=\"result_1\")",
                              "\"all\":batches.result(h,nodes=nodes,name=\"result_0\")"],
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions())


def _flat(text: str) -> str:
    return "".join(text.split()).replace(",)", ")")


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_a_range_of_rows_returned_is_generated_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    method = generated.source.split("    @torch.no_grad()\n")[1].split("# --- gnn-codegen runtime")[0]
    for line in RETURNS[name]:
        assert _flat(line) in _flat(method), line
    # all nodes, nodes= and storage= (verify.check's runs), batches that do and do not divide
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_nodes_gives_each_part_the_requested_nodes_in_its_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """nodes= are node IDs of the graph: the users' part holds the requested users, the items'
    part the requested items (their rows in forward's part: ID - 30), each in the order asked."""
    generated = _generate("SplitUsersItems", monkeypatch)
    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    g = dgl.rand_graph(50, 200)
    users, items = model(g)
    nodes = torch.tensor([45, 3, 30, 3, 29])
    got_users, got_items = model.inference(g, batch_size=7, device="cpu", nodes=nodes)
    assert torch.allclose(got_users, users[torch.tensor([3, 3, 29])], atol=1e-5)
    assert torch.allclose(got_items, items[torch.tensor([15, 0])], atol=1e-5)


@pytest.mark.parametrize("name, nodes, message", [
    ("TargetsFirstSAGE", 30, r"^forward returns rows \[0:40\] of a result at row_ranges.py:46: g must have at least "
                             r"40 nodes, not 30$"),
    ("SplitUsersItems", 60, r"^forward splits its rows into parts of 50 nodes in all at row_ranges.py:30: g must "
                            r"have 50 nodes, not 60$"),
])
def test_a_graph_the_range_does_not_fit_is_refused_at_entry(name: str, nodes: int, message: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """forward on 30 nodes returns 30 rows where it was written for 40: never a shorter part."""
    generated = _generate(name, monkeypatch)
    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    g = dgl.rand_graph(nodes, 4 * nodes)
    args = (g, torch.randn(nodes, 5)) if name == "TargetsFirstSAGE" else (g,)
    with pytest.raises(ValueError, match=message):
        model.inference(*args, batch_size=8, device="cpu")


def test_rows_of_a_range_read_by_another_op_stay_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """`users @ items.T`: a score per pair of nodes, no row per node; refused naming the line."""
    with pytest.raises(errors.UnsupportedOperationError) as info:
        _generate("UserItemScores", monkeypatch)
    assert str(info.value).startswith(
        "tests/models/row_ranges.py:72 (`users, items = h[: self.n_users], h[self.n_users:]`): operator.getitem(...) "
        "mixes the rows of different nodes")

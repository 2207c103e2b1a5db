"""`g.apply_edges(...)` written inline in forward (issue 35, item 5; gnn_codegen/trace/edge_functions.py,
tests/models/edge_functions.py): a Python edge function reading `edges.src`, `edges.dst` and
`edges.data`, or a built-in, becomes ops on each block's edges; the generated inference equals
forward (all nodes, nodes=, storage=). An edge function that reads anything else is refused,
naming the line."""

from __future__ import annotations

import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/edge_functions.py"

# model -> lines the generated method must hold (spaces collapsed)
READS = {
    "AttentionWeightedGCN": ["z=proj[block.edges()[0]]#eachedge'ssourcerow",
                             "z_2=proj_dst[block.edges()[1]]#eachedge'sdestinationrow"],
    "DotScoreThenMean": ['block.apply_edges(fn.u_dot_v("h","h","score"))', 'score=block.edata["score"]'],
    # refused before (tests/test_refusals.py): the scores per edge are forward's result
    "tests/models/refused.py:InlineApplyEdges": ['block.apply_edges(dgl.function.u_dot_v("h","h","s"))',
                                                 'raiseValueError("nodes=isnottaken:itselectsnodes,andforwardalsoreturnsvalues"'],
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(name if ":" in name else f"{MODEL}:{name}", GenerateOptions())


@pytest.mark.parametrize("name", sorted(READS))
def test_an_inline_apply_edges_is_followed_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    method = "".join(generated.source.split("    @torch.no_grad()\n")[1].split("# --- gnn-codegen runtime")[0].split())
    for line in READS[name]:
        assert line in method, line
    for seed in (1, 2):
        result = check(generated, num_nodes=97, seed=seed, batch_sizes=(1, 13, 97))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_an_edge_function_reading_more_than_rows_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.GraphUseError) as info:
        _generate("EdgeCountingFunction", monkeypatch)
    assert str(info.value) == (
        "tests/models/edge_functions.py:60 (`g.apply_edges(lambda edges: {\"w\": edges.src[\"x\"][:, 0] / "
        "edges.batch_size()})`): forward calls g.apply_edges(...) with a Python edge function that reads "
        "edges.batch_size: gnn-codegen follows an edge function that reads only edges.src[key], "
        "edges.dst[key] and edges.data[key] and returns a dict of fields. Compute the rest outside the "
        "edge function, or evaluate this model with its full-graph forward."
    )

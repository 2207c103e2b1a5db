"""A forward without message passing (issue 35; tests/models/no_message_passing.py and the
survey's CCA-SSG MLP backbone): an MLP next to GNN siblings gets the same
`inference(g, x, batch_size, device, nodes=, storage=)`, its row-wise work done over batches of
nodes with no layer at all, exact. A forward whose result has no row per node is refused."""

from __future__ import annotations

import json
import sys

import dgl
import pytest
import torch

from gnn_codegen.verify.harness import generated_model, import_source
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import survey_check  # noqa: E402

MODEL = "tests/models/no_message_passing.py"
NAMES = ["OGBStyleMLP", "SampledBlocksMLP", "NodeCountBias"]


def _generate(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", GenerateOptions())


@pytest.mark.parametrize("name", NAMES)
def test_generated_over_batches_of_nodes_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    assert generated.verification is not None and generated.verification.ok
    assert generated.plan.num_layers == 0
    method = generated.source.split("def inference")[1].split("# --- gnn-codegen runtime")[0]
    assert "batches.needed(nodes, layers=0)" in method and "batches.map_nodes(prologue" in method
    assert "# Once per node:" in method and "def layer_" not in method
    for seed in (1, 2):  # all nodes, nodes=, storage=, batches of 7 and of all
        result = check(generated, num_nodes=61, seed=seed, batch_sizes=(7, 61))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_nodes_and_storage_as_a_user_calls_them(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    generated = _generate("SampledBlocksMLP", monkeypatch)
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = dgl.rand_graph(50, 150)
    x = torch.randn(50, 8)
    z, logits = model([g], x)
    nodes = torch.tensor([49, 0, 7, 7, 23])
    got_z, got_logits = model.inference(g, x, batch_size=6, device="cpu", nodes=nodes)
    assert torch.allclose(got_z, z[nodes], atol=1e-6) and torch.allclose(got_logits, logits[nodes], atol=1e-6)
    stored_z, stored_logits = model.inference(g, x, batch_size=6, device="cpu", storage=tmp_path)
    assert torch.allclose(torch.as_tensor(stored_logits), logits, atol=1e-6)
    assert torch.allclose(torch.as_tensor(stored_z), z, atol=1e-6)


def test_the_survey_mlp_backbone_is_exact(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """CCA-SSG's MLP backbone: `forward(self, _, x)`, the graph taken and not read. Refused
    until now ("nothing to run layer-wise")."""
    monkeypatch.chdir(REPO)
    case = survey_check.by_name()["CCASSGMLP"]
    generated = generate_all(case.target, GenerateOptions(init=json.dumps(case.init)))
    assert generated.verification is not None and generated.verification.ok
    out = tmp_path / "CCASSGMLP_inference.py"
    out.write_text(generated.source)
    assert survey_check.check("CCASSGMLP", out)["outcome"] == "exact"

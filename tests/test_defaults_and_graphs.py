"""forward's defaults and flags (issue 35, item 2) and forward over several graphs (item 4),
on models written as third-party code writes them (tests/models/defaults_and_graphs.py): the
generated inference equals forward on random graphs, and takes its inputs as forward does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gnn_codegen import errors
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO
from tests.test_packaging import cli_env

MODEL = "tests/models/defaults_and_graphs.py"

EXACT = {
    # `forward(self, graph, inference=False, feat=None)` called as model(g, feat=x): feat is an input
    "FlagBeforeFeatures": GenerateOptions(),
    # `forward(self, g, return_hidden=False, *, x)`: was a signature Python rejects
    "KeywordOnlyFeatures": GenerateOptions(),
    # `if h is None: h = self.node_emb.weight`: was exit 3 (the table lifted after a default)
    "OwnEmbeddingWhenNone": GenerateOptions(),
    # callable defaults, applied as Python applies them
    "PostStepClamp": GenerateOptions(),
    "ActivationParameter": GenerateOptions(),
    # several graphs side by side: a list (HAN with semantic attention over all nodes; zipped
    # relation graphs), and two graph parameters
    "HANOverGraphList": GenerateOptions(),
    "RelationGraphsZipped": GenerateOptions(),
    "CitesAndCoauthor": GenerateOptions(),
    "TwoViewsEncoder": GenerateOptions(),
    "ViewsThenTested": GenerateOptions(),
}


def _method(source: str) -> str:
    return source.split("def inference(")[1].split("# --- gnn")[0]


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:{name}", EXACT[name])
    result = check(generated, num_nodes=211, batch_sizes=(1, 13, 211))
    assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_a_none_default_fed_as_features_is_taken_as_forward_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:FlagBeforeFeatures")
    method = _method(generated.source)
    assert method.split(")")[0].split() == ["self,", "g,", "feat,", "batch_size,", "device,", "max_memory=2**30,",
                                             "progress=False,", "nodes=None,", "storage=None,", "changed=None,",
                                             "keep_layers=False,"]
    assert "self.forward(g, feat=feat)" in method


def test_callable_defaults_are_followed_into(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert ".clamp(0.0, 1.0)" in _method(generate_all(f"{MODEL}:PostStepClamp").source)
    assert "F.elu(" in _method(generate_all(f"{MODEL}:ActivationParameter").source)


def test_a_callable_default_that_decides_on_values_is_refused_at_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.DataDependentControlFlowError) as info:
        generate_all(f"{MODEL}:PostStepOnValues")
    assert str(info.value) == (
        "tests/models/defaults_and_graphs.py:94 (`def forward(self, g, x, post_step=lambda y: y if y.sum() > 0 "
        "else -y):`): forward branches or loops on a tensor's value, which depends on the data and so cannot "
        "become one fixed layer-wise loop. Compute the condition outside the model (a constructor argument or "
        "a flag), or mark the module that holds it as a leaf with --leaf NAME if it only mixes features of the "
        "same node."
    )


@pytest.mark.parametrize("name", ["FlagBeforeFeatures", "KeywordOnlyFeatures", "OwnEmbeddingWhenNone"])
def test_a_flag_before_a_parameter_is_never_exit_3(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "inference.py"
    run = subprocess.run([sys.executable, "-m", "gnn_codegen", f"{MODEL}:{name}", "-o", str(out)], cwd=REPO,
                         env=cli_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    compile(out.read_text(), str(out), "exec")  # a signature Python accepts


@pytest.mark.parametrize("name, signature", [
    ("HANOverGraphList", "def inference(self, gs, h, batch_size"),
    ("RelationGraphsZipped", "def inference(self, rel_graphs, x, batch_size"),
    ("CitesAndCoauthor", "def inference(self, g_cites, g_coauthor, x, batch_size"),
    ("SAGEOnBlocks", "def inference(self, g, x, batch_size"),  # a chain of blocks: over one graph
    # in forward's order, graphs and features interleaved: called as forward is
    ("TwoViewsEncoder", "def inference(self, graph1, feat1, graph2, feat2, batch_size"),
])
def test_inference_takes_the_graphs_as_forward_does(name: str, signature: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:{name}")
    assert " ".join(generated.source.split()).replace("( ", "(").replace(", )", ")").count(signature) == 1


def test_the_refused_pair_of_graphs_is_exact_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """forward(self, g1, g2, x), layer 1 on g1 and layer 2 on g2: each graph its own batches."""
    monkeypatch.chdir(REPO)
    generated = generate_all("tests/models/refused.py:TwoGraphs")
    assert check(generated, num_nodes=211, batch_sizes=(1, 13, 211)).ok


def test_graphs_side_by_side_must_have_the_same_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    import dgl
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source

    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:CitesAndCoauthor")
    module = import_source(generated.source, REPO / "tests" / "models")
    model = generated_model(generated, module)
    x = torch.randn(30, 8)
    with pytest.raises(ValueError, match=r"the graphs side by side must have the same nodes: \[30, 20\] nodes"):
        model.inference(dgl.rand_graph(30, 90), dgl.rand_graph(20, 60), x, 8, "cpu")
    generated = generate_all(f"{MODEL}:HANOverGraphList")
    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    with pytest.raises(ValueError, match="generated for forward over 2 graphs side by side; gs holds 3"):
        model.inference([dgl.rand_graph(30, 90)] * 3, x, 8, "cpu")


def test_an_optional_parameter_for_the_models_own_table_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """`forward(self, g, h=None)`, `if h is None: h = self.node_emb.weight`: inference takes
    h=None too, the table when None, and equals forward either way."""
    import dgl
    import torch

    from gnn_codegen.verify.harness import generated_model, import_source

    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODEL}:OwnEmbeddingWhenNone")
    method = _method(generated.source)
    assert "keep_layers=False, h=None," in " ".join(method.split())
    assert "node_emb = self.node_emb.weight if h is None else h" in method
    model = generated_model(generated, import_source(generated.source, REPO / "tests" / "models"))
    g = dgl.rand_graph(211, 900)
    h = torch.randn(211, 8)
    with torch.no_grad():
        assert torch.allclose(model.inference(g, 13, "cpu"), model(g), atol=1e-5)
        assert torch.allclose(model.inference(g, 13, "cpu", h=h), model(g, h=h), atol=1e-5)
    # the fallback computed from the table is not the table: no such parameter
    other = generate_all(f"{MODEL}:ProjectedEmbeddingWhenNone")
    assert "h=None" not in _method(other.source)
    assert check(other, num_nodes=211, batch_sizes=(13,)).ok

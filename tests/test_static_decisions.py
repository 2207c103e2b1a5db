"""Python decisions on what a value is (issue 35, item 1; tests/models/static_decisions.py):
`if x.size(1) != self.hidden:`, `if h.shape == h_in.shape:`, `if feat.dtype == torch.long:`,
`if h.dim() == 3:`, `len(h.shape)`, `int(h.shape[1])` are decided while tracing, the generated inference equals forward, and it
refuses inputs of another width, number of dimensions or dtype with a ValueError instead of
computing the other branch with this one's code. Tests of values stay refused."""

from __future__ import annotations

import os
import subprocess
import sys

import dgl
import pytest
import torch

from gnn_codegen import errors
from gnn_codegen.verify.harness import generated_model, import_source
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODEL = "tests/models/static_decisions.py"

CASES = {
    "SAGEWithInputProjection": GenerateOptions(feat_dims="x=16"),
    "ResidualGCN": GenerateOptions(),
    "NormalisedThenTested": GenerateOptions(),
    "AtomOrFeatureEncoder": GenerateOptions(),
    "GATFlattenHeads": GenerateOptions(),
    "ClassifierOnFloats": GenerateOptions(),
    "GCNOnGraphFeatures": GenerateOptions(feat_dims="feat=16"),
    "EntityEmbeddingGCN": GenerateOptions(),
    "WeightedRelationGCN": GenerateOptions(),
    "FlattenWhateverTheHeads": GenerateOptions(),
    "NormalisedThenPropagated": GenerateOptions(),
}

# the entry check each generated method must start with (as black writes it, spaces collapsed)
CHECKS = {
    "SAGEWithInputProjection": 'if x.shape[1:] != (16,): raise ValueError( "x: generated for width 16, as forward '
                               'decides at `if x.size(1) != self.hidden:`; " f"got rows of shape {tuple(x.shape[1:])}: '
                               'regenerate with --feat-dims x=WIDTH" )',
    "ResidualGCN": "if h.shape[1:] != (6,):",
    # the width followed through `x * norm` to the first convolution's
    "NormalisedThenTested": "if x.shape[1:] != (4,):",
    # ... and back from a multi-hop module traced into (SGConv's Linear)
    "NormalisedThenPropagated": "if x.shape[1:] != (4,):",
    "AtomOrFeatureEncoder": 'if feat.dtype != torch.float32: raise ValueError( "feat: generated for torch.float32, " '
                            '"as forward decides at `if feat.dtype == torch.long:`; " f"got {feat.dtype}" )',
    "GATFlattenHeads": "if x.shape[1:] != (5,):",
    "ClassifierOnFloats": "if x.dtype != torch.float32:",
    "GCNOnGraphFeatures": 'feat = g.ndata["feat"] # as forward reads it # forward decides in Python on what its '
                          "inputs are: generated for inputs like these if feat.shape[1:] != (16,):",
    # the table is the model's own: nothing to check; edge weights and types change no shape
    "EntityEmbeddingGCN": "emb = self.emb.weight # a row per node of g, as forward reads it batches.check_rows(",
    "WeightedRelationGCN": 'if x.shape[1:] != (5,): raise ValueError( "x: generated for width 5, as forward '
                           'decides at `if h2.shape == h.shape:`; "',
    # len(h.shape), a loop over it and int() of each: worked out while tracing, the width written
    "FlattenWhateverTheHeads": "h = h.reshape(-1, 8)",
}

NOTES = {
    "SAGEWithInputProjection": "forward's `if x.size(1) != self.hidden:` at static_decisions.py:22 is decided while "
                               "tracing: generated for x of width 16; the generated method checks that its inputs agree",
    "ResidualGCN": "forward's `if self.residual and h.shape == h_in.shape:` at static_decisions.py:47 is decided "
                   "while tracing: generated for h of width 6 (what it tests follows from that and the model's "
                   "weights); the generated method checks that its inputs agree",
}


def _generate(name: str, monkeypatch: pytest.MonkeyPatch, options: GenerateOptions | None = None):
    monkeypatch.chdir(REPO)
    return generate_all(f"{MODEL}:{name}", CASES[name] if options is None else options)


def _model(generated):
    return generated_model(generated, import_source(generated.source, generated.loaded.path.parent))


@pytest.mark.parametrize("name", sorted(CASES))
def test_decided_while_tracing_and_exact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generate(name, monkeypatch)
    assert generated.program.static_decisions
    assert generated.verification is not None and generated.verification.ok
    assert CHECKS[name] in " ".join(generated.source.split())
    if name in NOTES:
        assert NOTES[name] in generated.notes
    for seed in (1, 2):
        result = check(generated, num_nodes=61, seed=seed, batch_sizes=(7, 61))
        assert result.ok, f"{name}: max |difference| {result.max_abs_diff}"


def test_only_the_inputs_a_shape_follows_from_are_assumed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table of the model, edge weights and the edge types that pick a subgraph make no
    assumption: the shapes tested follow from x's width and the weights alone."""
    assert [d.assumptions for d in _generate("EntityEmbeddingGCN", monkeypatch).program.static_decisions] == [()]
    decisions = _generate("WeightedRelationGCN", monkeypatch).program.static_decisions
    assert [(a.input, a.what, a.value) for d in decisions for a in d.assumptions] == [("x", "shape", (5,))]


def test_the_branch_taken_is_the_one_forward_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A residual where the layer keeps its width (6 -> 6, 10 -> 10), none where it does not."""
    generated = _generate("ResidualGCN", monkeypatch)
    assert [d.taken for d in generated.program.static_decisions] == [True, False, True]
    method = generated.source.split("def inference")[1].split("# --- gnn-codegen runtime")[0]
    assert [line.strip() for line in method.splitlines() if " + " in line and "=" in line or "return h2 +" in line] \
        == ["h = h + h_2", "return h2 + h"]  # after layers 1 and 3, none after layer 2
    model = _model(generated)
    g = dgl.add_self_loop(dgl.rand_graph(25, 80))
    h = torch.randn(25, 6)
    assert torch.allclose(model.inference(g, h, batch_size=6, device="cpu"), model(g, h), atol=1e-5)


def test_another_width_is_refused_where_forward_would_take_the_other_branch(monkeypatch: pytest.MonkeyPatch) -> None:
    """x of width 8 (the hidden width) skips the projection in forward: the module, generated
    for width 16, must not run its projection on it (nor fail somewhere inside)."""
    model = _model(_generate("SAGEWithInputProjection", monkeypatch))
    g = dgl.rand_graph(20, 60)
    with pytest.raises(ValueError, match=r"^x: generated for width 16, as forward decides at "
                                         r"`if x.size\(1\) != self.hidden:`; got rows of shape \(8,\): regenerate with "
                                         r"--feat-dims x=WIDTH$"):
        model.inference(g, torch.randn(20, 8), batch_size=8, device="cpu")


def test_another_dtype_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node IDs (int64) take the embedding in forward; the module was generated for floats."""
    model = _model(_generate("AtomOrFeatureEncoder", monkeypatch))
    g = dgl.rand_graph(20, 60)
    with pytest.raises(ValueError, match=r"^feat: generated for torch.float32, as forward decides at "
                                         r"`if feat.dtype == torch.long:`; got torch.int64$"):
        model.inference(g, torch.randint(0, 50, (20,)), batch_size=8, device="cpu")


def test_another_number_of_dimensions_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(_generate("GATFlattenHeads", monkeypatch))
    g = dgl.rand_graph(20, 60)
    with pytest.raises(ValueError, match=r"^x: generated for width 5,.*got rows of shape \(2, 5\)"):
        model.inference(g, torch.randn(20, 2, 5), batch_size=8, device="cpu")


def test_graph_data_of_another_width_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(_generate("GCNOnGraphFeatures", monkeypatch))
    g = dgl.rand_graph(20, 60)
    g.ndata["feat"] = torch.randn(20, 8)
    with pytest.raises(ValueError, match=r"^feat: generated for width 16,.*--feat-dims feat=WIDTH$"):
        model.inference(g, batch_size=8, device="cpu")


@pytest.mark.parametrize("name, key", [("SAGEWithInputProjection", "x"), ("GCNOnGraphFeatures", "feat")])
def test_a_test_of_a_width_nothing_tells_asks_for_it_and_the_answer_works(
        name: str, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.FeatDimsError) as caught:
        _generate(name, monkeypatch, GenerateOptions())
    message = str(caught.value)
    spelled = "x" if key == "x" else "g.ndata['feat']"
    line = 22 if key == "x" else 142
    source = "if x.size(1) != self.hidden:" if key == "x" else "if h.shape[-1] != self.hidden:"
    assert message == (
        f"{MODEL}:{line} (`{source}`): forward tests the shape of its input {spelled} (or of what it computes "
        f"from it) before any module of the model says how wide it is. Give its width with --feat-dims "
        f"{key}=WIDTH (e.g. --feat-dims {key}=128), and the module is generated for that width."
    )
    # the advice, followed, leads to a module
    generated = _generate(name, monkeypatch, GenerateOptions(feat_dims=f"{key}=16"))
    assert check(generated, num_nodes=40, seed=0, batch_sizes=(9,)).ok


REFUSED = {
    "SkipIfPositive": "tests/models/static_decisions.py:111 (`if (h > 0).any():`)",
    "BranchOnRowCount": "tests/models/static_decisions.py:125 (`if h.shape[0] > 10:`)",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_test_of_values_or_of_the_graph_stays_refused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test of values, or of a row count (the graph's size: another on every block), is no
    decision on metadata: refused with the message of before, naming the line."""
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.DataDependentControlFlowError) as caught:
        generate_all(f"{MODEL}:{name}")
    assert str(caught.value) == (
        f"{REFUSED[name]}: forward branches or loops on a tensor's value, which depends on the data and so "
        "cannot become one fixed layer-wise loop. Compute the condition outside the model (a constructor "
        "argument or a flag), or mark the module that holds it as a leaf with --leaf NAME if it only mixes "
        "features of the same node."
    )


def test_cli_asks_for_the_width_in_one_paragraph_and_writes_nothing(tmp_path) -> None:
    out = tmp_path / "out.py"
    result = subprocess.run(
        [sys.executable, "-m", "gnn_codegen", f"{MODEL}:SAGEWithInputProjection", "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, env={**os.environ, "DGLBACKEND": "pytorch"},
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "--feat-dims x=WIDTH" in result.stderr
    assert not out.exists()


# --- the width of an edge field a module of the user's reads inside (issue 35, GCNHA) -----------


def test_an_edge_field_read_inside_a_module_takes_the_width_its_refusal_asks_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`g.update_all(fn.u_mul_e("ft", "coef", "m"), ...)` then `range(h.shape[1])`: the count
    follows from the edge field's shape, which only the user knows. The refusal asked for
    --feat-dims coef=WIDTH, and the option was then refused as naming no input of forward (the
    field becomes one only once the module is traced into): a circle. Now it is followed."""
    monkeypatch.chdir(REPO)
    target = f"{MODEL}:EdgeGatedHeads"
    with pytest.raises(errors.FeatDimsError) as caught:
        generate_all(target)
    assert "forward tests the shape of its input g.edata['coef']" in str(caught.value)
    assert "--feat-dims coef=1, or coef=2x1 for rows of shape (2, 1)" in str(caught.value)
    generated = generate_all(target, GenerateOptions(feat_dims="coef=2x1"))
    assert generated.verification is not None and generated.verification.ok
    assert check(generated, num_nodes=40, seed=1, batch_sizes=(7,)).ok
    model = _model(generated)
    g = dgl.rand_graph(20, 60)
    g.edata["coef"] = torch.rand(60, 3, 1)  # three heads' weights: another count of heads
    with pytest.raises(ValueError, match=r"^coef: generated for rows of shape \(2, 1\),"):
        model.inference(g, torch.randn(20, 5), batch_size=8, device="cpu")


def test_a_width_for_a_name_nothing_reads_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(errors.FeatDimsError, match=r"^--feat-dims coeff=\.\.\.: EdgeGatedHeads.forward has no "
                                                   r"tensor input named coeff"):
        generate_all(f"{MODEL}:EdgeGatedHeads", GenerateOptions(feat_dims="coef=2x1,coeff=2"))

"""--runtime-module NAME: the runtime written once as NAME.py beside the generated modules, which
import it; one file for homogeneous and heterogeneous models alike; reused by the next model
generated there, never replaced by another version's; the pair computes forward's rows, and the
check before writing imported it the same way; a generated module refuses, when imported,
another runtime than the one it was generated against."""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Iterator

import dgl
import pytest
import torch

from gnn_codegen.cli import main
from gnn_codegen.verify.harness import (
    allclose,
    full_graph_forward,
    generated_model,
    make_inputs,
    random_graph_for,
    run_inference,
)
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph
from gnn_codegen.render.runtime_module import runtime_module_source
from gnn_codegen.render.runtime_section import banner_hash, content_hash, sections, split
from tests.cases import CASES_BY_NAME, REPO


def _spec(case: str) -> dict:
    return json.loads((REPO / "generated_examples" / case / "case.json").read_text())


def _command(case: str, output: Path, *extra: str) -> list[str]:
    spec = _spec(case)
    metagraph = ["--metagraph", spec["metagraph"]] if "metagraph" in spec else []
    return [f"generated_examples/{case}/{spec['target']}", "-o", str(output), "--init", json.dumps(spec["init"]),
            *metagraph, *extra]


@contextlib.contextmanager
def importable(folder: Path, *names: str) -> Iterator[None]:
    """`folder` on sys.path, as a user's project folder is; its modules forgotten after."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for loaded in names:
            sys.modules.pop(loaded, None)


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def test_two_models_share_one_runtime_module(tmp_path: Path, in_repo: None, capsys) -> None:
    assert main(_command("sage", tmp_path / "sage_inference.py", "--runtime-module", "gnn_runtime")) == 0
    runtime = (tmp_path / "gnn_runtime.py").read_text()
    assert main(_command("gcn", tmp_path / "gcn_inference.py", "--runtime-module", "gnn_runtime")) == 0
    assert "reused" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gcn_inference.py", "gnn_runtime.py", "sage_inference.py"]
    assert (tmp_path / "gnn_runtime.py").read_text() == runtime
    # the runtime module holds each variant's runtime section as a single-file module of that
    # variant carries it, under a banner with the same hash
    (_, homogeneous), (_, heterogeneous) = sections(runtime)
    for section, case in ((homogeneous, "sage"), (heterogeneous, "rgcn_hetero")):
        golden = CASES_BY_NAME[case].golden.read_text()
        assert section == split(golden)[2], case
        assert content_hash(section) == banner_hash(golden) and f"sha256 {content_hash(section)} " in runtime
    assert banner_hash(runtime) == content_hash(homogeneous)
    # and the table a generated module reads when imported says the same
    assert (f'SHA256 = {{"_FullNeighbourBatches": "{content_hash(homogeneous)}", '
            f'"_HeteroBatches": "{content_hash(heterogeneous)}"}}\n') in runtime
    for name in ("sage_inference.py", "gcn_inference.py"):
        source = (tmp_path / name).read_text()
        assert "from gnn_runtime import _FullNeighbourBatches\n" in source
        assert "class _FullNeighbourBatches" not in source and "import numpy" not in source
        assert f"sha256 {banner_hash(runtime)})" in source  # the header names the runtime it needs
        # its helpers under their banner, hashed to the end of the module; its docstring points
        # at the runtime's in the module it imports
        (top, helpers), = sections(source)
        assert top.startswith("# --- gnn-codegen convolution helpers ") and "to the end of the module" in top
        assert f"sha256 {content_hash(helpers)} " in top and "\ndef _" in helpers
        assert "docstring (in gnn_runtime.py, which this module imports it from)" in " ".join(source.split())


def test_a_homogeneous_and_a_heterogeneous_model_share_one_runtime_module(tmp_path: Path, in_repo: None,
                                                                          capsys) -> None:
    """One NAME.py for a project's models of both kinds: each module imports its variant's
    class from it, and as the user imports them, each equals its model's forward."""
    assert main(_command("rgcn_hetero", tmp_path / "rgcn_inference.py", "--runtime-module", "gnn_runtime")) == 0
    assert main(_command("sage", tmp_path / "sage_inference.py", "--runtime-module", "gnn_runtime")) == 0
    assert "reused" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gnn_runtime.py", "rgcn_inference.py", "sage_inference.py"]
    rgcn_source = (tmp_path / "rgcn_inference.py").read_text()
    assert "from gnn_runtime import _HeteroBatches\n" in rgcn_source and "class _HeteroBatches" not in rgcn_source
    torch.manual_seed(0)
    with importable(tmp_path, "rgcn_inference", "sage_inference", "gnn_runtime"):
        rgcn_module = importlib.import_module("rgcn_inference")
        sage_module = importlib.import_module("sage_inference")
        assert rgcn_module._HeteroBatches.__module__ == sage_module._FullNeighbourBatches.__module__ == "gnn_runtime"

        # the heterogeneous model: a user's RGCN and its weights, a graph of the relations
        spec = _spec("rgcn_hetero")
        trained = _user_class("rgcn_hetero", "RGCN")(**spec["init"]).eval()
        model = rgcn_module.RGCN(**spec["init"])
        model.load_state_dict(trained.state_dict())
        schema = parse_metagraph(spec["metagraph"])
        g = random_heterograph(schema, {t: 40 + 7 * i for i, t in enumerate(schema.ntypes)}, seed=1)
        x = {t: torch.randn(g.num_nodes(t), spec["init"]["in_feats"]) for t in g.ntypes}
        with torch.no_grad():
            expected = trained(g, x)
        for batch_size in (1, 16, 500):
            actual = model.inference(g, x, batch_size=batch_size, device="cpu")
            assert actual.keys() == expected.keys()
            for ntype in expected:
                assert allclose(actual[ntype], expected[ntype], atol=1e-4, rtol=1e-4), (batch_size, ntype)

        # the homogeneous one
        init = _spec("sage")["init"]
        trained = _user_class("sage", "SAGE")(**init).eval()
        model = sage_module.SAGE(**init)
        model.load_state_dict(trained.state_dict())
        graph = dgl.rand_graph(150, 900)
        features = torch.randn(150, init["in_size"])
        with torch.no_grad():
            expected = trained([graph] * 3, features)
        for batch_size in (1, 16, 500):
            assert allclose(model.inference(graph, features, batch_size=batch_size, device="cpu"), expected,
                            atol=1e-4, rtol=1e-4), batch_size


def _user_class(case: str, name: str) -> type:
    """The class in generated_examples/<case>/model.py: the model the user trained."""
    spec = importlib.util.spec_from_file_location(f"_user_{case}", REPO / "generated_examples" / case / "model.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, name)


def _other_version(runtime: str) -> str:
    """`runtime` (a runtime module's text) as another version of gnn-codegen might write it: a
    line of each variant's runtime changed, its banners and table hashing what is there."""
    changed = runtime.replace("\n    def __init__(", "\n    # another version's\n    def __init__(")
    for top, section in sections(changed):
        old = re.search(r"sha256 ([0-9a-f]{12})", top).group(1)  # type: ignore[union-attr]
        changed = changed.replace(old, content_hash(section))
    return changed.replace("0.1.0", "0.0.9")


@pytest.mark.parametrize("case, cls", [("sage", "_FullNeighbourBatches"), ("rgcn_hetero", "_HeteroBatches")])
def test_a_generated_module_refuses_another_runtime_when_imported(case: str, cls: str, tmp_path: Path,
                                                                  in_repo: None) -> None:
    """A user who replaced gnn_runtime.py by another version's gets an ImportError that names
    both hashes and the way out, not silently another runtime's results."""
    assert main(_command(case, tmp_path / "model_inference.py", "--runtime-module", "gnn_runtime")) == 0
    ours = (tmp_path / "gnn_runtime.py").read_text()
    theirs = _other_version(ours)
    (ours_hash,) = [content_hash(s) for t, s in sections(ours) if f"runtime: {cls}," in t]
    (their_hash,) = [content_hash(s) for t, s in sections(theirs) if f"runtime: {cls}," in t]
    assert ours_hash != their_hash
    (tmp_path / "gnn_runtime.py").write_text(theirs)
    with importable(tmp_path, "model_inference", "gnn_runtime"), pytest.raises(ImportError) as refused:
        importlib.import_module("model_inference")
    message = str(refused.value)
    assert f"sha256 {their_hash} for {cls}" in message and f"generated against sha256 {ours_hash}" in message
    assert "Regenerate this module" in message and "restore gnn_runtime.py" in message
    # a module of the user's own of that name, not a runtime module at all
    (tmp_path / "gnn_runtime.py").write_text(f"class {cls}:\n    pass\n")
    with importable(tmp_path, "model_inference", "gnn_runtime"), pytest.raises(ImportError, match="sha256 None"):
        importlib.import_module("model_inference")
    # the runtime it was generated against, restored: imported
    (tmp_path / "gnn_runtime.py").write_text(ours)
    with importable(tmp_path, "model_inference", "gnn_runtime"):
        assert getattr(importlib.import_module("model_inference"), cls).__module__ == "gnn_runtime"


_STALE = "# --- gnn-codegen runtime 0.0.9, sha256 0123456789ab " + "-" * 43 + "\n# old\n# " + "-" * 94 + "\n\nX = 1\n"


@pytest.mark.parametrize("case", ["sage", "rgcn_hetero"])
@pytest.mark.parametrize("stale", ["made up", "another version's", "this version's runtime, another's table"])
def test_another_versions_runtime_module_is_refused(case: str, stale: str, tmp_path: Path, in_repo: None,
                                                    capsys) -> None:
    ours = runtime_module_source("0.1.0")
    text = {"made up": _STALE, "another version's": _other_version(ours),
            "this version's runtime, another's table": re.sub(r'(SHA256 = \{"_FullNeighbourBatches": ")\w+',
                                                              r"\g<1>0123456789ab", ours)}[stale]
    (tmp_path / "gnn_runtime.py").write_text(text)
    code = main(_command(case, tmp_path / "model_inference.py", "--runtime-module", "gnn_runtime"))
    err = " ".join(capsys.readouterr().err.split())  # as one paragraph, unwrapped
    assert code == 2 and "Traceback" not in err
    assert str(tmp_path / "gnn_runtime.py") in err and "never replaces it" in err
    assert (tmp_path / "gnn_runtime.py").read_text() == text  # untouched
    assert not (tmp_path / "model_inference.py").exists()  # nothing written


@pytest.mark.parametrize("name", ["numpy", "os", "not-a-name", "class"])
def test_a_runtime_module_name_must_be_a_module_of_its_own(name: str, tmp_path: Path, in_repo: None,
                                                           capsys) -> None:
    assert main(_command("sage", tmp_path / "out.py", "--runtime-module", name)) == 2
    assert "--runtime-module" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_written_pair_equals_forward(tmp_path: Path, in_repo: None) -> None:
    """The check before writing ran it with its runtime module (else generate_all would have
    refused); here the pair as written, imported the way a user does, against forward."""
    case = CASES_BY_NAME["gat"]
    options = GenerateOptions(init=case.options.init, output=str(tmp_path / "gat_inference.py"),
                              runtime_module="gnn_runtime")
    generated = generate_all(case.target, options)
    assert generated.verification is not None and generated.verification.ok
    name, text = generated.runtime_module  # type: ignore[misc]
    (tmp_path / f"{name}.py").write_text(text)
    (tmp_path / "gat_inference.py").write_text(generated.source)
    with importable(tmp_path, "gat_inference", "gnn_runtime"):
        module = importlib.import_module("gat_inference")
        assert module._FullNeighbourBatches.__module__ == "gnn_runtime"
        reference = generated.loaded.model.eval()
        model = generated_model(generated, module, reference)
        g = random_graph_for(generated, 211, seed=2, zero_in_degree=False)
        inputs = make_inputs(generated, 211, 2, g.num_edges())
        expected = full_graph_forward(reference, generated, g, inputs)
        for batch_size in (1, 16, 500):
            actual = run_inference(model, generated, g, inputs, batch_size=batch_size, device="cpu")
            assert allclose(actual, expected, atol=1e-4, rtol=1e-4), batch_size
    assert torch.is_grad_enabled()

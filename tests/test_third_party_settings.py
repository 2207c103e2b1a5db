"""Settings and norms between layers as other people's code writes them (issue 37's setting
branches and round loops, tried on models this repository did not design): benchmarking-gnns'
GCNLayer with `if self.batch_norm:` and `if self.residual:` flags, PairNorms held one per layer
in a ModuleList and zipped with the convolutions, and a norm picked by name from a ModuleDict.
Each generated module equals its forward; what the build fixed is shown where its code is
written, and another build is refused."""

from __future__ import annotations

import pytest

from gnn_codegen.verify.harness import import_source, make_inputs, random_graph_for
from tests.cases import REPO
from tests.generated_text import generated_and_checked, inference_method
from tests.subset_runs import assert_nodes_and_changed_rows

MODELS = "tests/models/third_party_settings.py"


def _generated(name: str, monkeypatch: pytest.MonkeyPatch, init: str = "{}"):
    return generated_and_checked(MODELS, name, init, monkeypatch)


def test_a_users_layer_flags_show_where_its_code_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's own layer's `if self.batch_norm:` is kept as its test; `if self.residual:`,
    whose statement the test cannot wrap (forward's `h` is the input there), is named. The
    model's file named by its absolute path, as a user may name it: its lines are then the
    user's own, not library lines (a relative path made them differ from the frames' absolute
    ones, and the tests saw the branches where a user with an absolute path did not)."""
    method = inference_method(generated_and_checked(str(REPO / MODELS), "GCNNet", "{}", monkeypatch).source)
    assert "if self.layers[i].batch_norm:  # as the module's forward tests it" in method, method
    assert "GCNLayer.forward's `if self.residual:` branch, the one this" in method, method


def test_a_users_layer_built_with_other_flags_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generated("GCNNet", monkeypatch)
    module = import_source(generated.source, REPO / "tests" / "models", "third_party_settings_generated")
    g = random_graph_for(generated, 40, seed=0)
    x = make_inputs(generated, 40, 0, g.num_edges())[0]
    for settings in ({"residual": False}, {"batch_norm": False}):
        model = module.GCNNet(**settings)
        with pytest.raises(ValueError, match="built differently"):
            model.inference(g, x, batch_size=8, device="cpu")


def test_norms_zipped_with_the_convolutions_are_one_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The round loop reads the round's norm, `self.norms[i].scale` (1, an int: an operand of
    arithmetic, so no dimension), and says nodes= once per round's means."""
    method = inference_method(_generated("ZippedNormsGCN", monkeypatch).source)
    assert method.count("for i in range(len(self.convs) - 1):") == 1, method
    assert "self.norms[i].scale * x" in method and "1 * x" not in method, method
    assert "since each round's x.mean(0) and" in method and "x2.mean(0)" not in method, method
    assert 'PairNorm.forward\'s `if self.mode == "PN":` branch' in method, method


def test_the_zipped_loop_gives_forwards_rows_for_nodes_and_changed(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path) -> None:
    generated = _generated("ZippedNormsGCN", monkeypatch)
    assert_nodes_and_changed_rows(generated, tmp_path)


@pytest.mark.parametrize("norm", ["pair", "pair_si", "none"])
def test_a_norm_picked_by_name_is_exact(monkeypatch: pytest.MonkeyPatch, norm: str) -> None:
    """Each name the constructor takes gives its own exact module (checked in _generated)."""
    _generated("NamedNormGCN", monkeypatch, f'{{"norm": "{norm}"}}')


def test_the_model_file_named_relatively_or_absolutely_gives_one_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """lower/spelling.locations: the user's lines are the user's however the file is named (a
    relative name made them read as library lines: Op.library_line set for GCNLayer's
    `h = self.batchnorm_h(h)`, and what reads library lines differed by how the path was typed)."""
    relative = generated_and_checked(MODELS, "GCNNet", "{}", monkeypatch)
    absolute = generated_and_checked(str(REPO / MODELS), "GCNNet", "{}", monkeypatch)
    for generated in (relative, absolute):
        users = [op for op in generated.program.ops if "third_party_settings.py" in op.library_line]
        assert not users, [(op.name, op.library_line) for op in users]
    body = slice(relative.source.index('"""'), None)  # below the header, which names the file as given
    assert relative.source[body] == absolute.source[absolute.source.index('"""'):]

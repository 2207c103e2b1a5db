"""--method-name against what the user's class already has: the generated method replaces a user
method of the default name (with a warning naming the user's line), and every other clash is
refused with an OptionsError."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from gnn_codegen.errors import OptionsError
from gnn_codegen.load.model import LoadedModel, load
from gnn_codegen.load.method_name import check_method_name

MODELS = dedent('''\
    import torch.nn as nn


    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(2, 2)

        def forward(self, g, x):
            return self.head(x)


    class OwnInference(nn.Module):
        def forward(self, g, x):
            return x

        def inference(self, g, device, batch_size):
            return None


    class CallsItsInference(nn.Module):
        def forward(self, g, x):
            return self.inference(g, x)

        def inference(self, g, x):
            return x


    class AttributeInference(nn.Module):
        inference = None

        def forward(self, g, x):
            return x


    class Inherits(OwnInference):
        pass
''')


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("method_name") / "models.py"
    path.write_text(MODELS)
    return path


def loaded(models: Path, name: str) -> LoadedModel:
    return load(f"{models}:{name}")


def test_no_clash_no_warning(models: Path) -> None:
    assert check_method_name(loaded(models, "Plain"), "inference") == ()
    assert check_method_name(loaded(models, "OwnInference"), "layerwise_inference") == ()


def test_the_users_method_of_the_default_name_is_replaced_with_a_warning(models: Path) -> None:
    assert check_method_name(loaded(models, "OwnInference"), "inference") == (
        f"{models}:17: OwnInference already defines inference(self, g, device, batch_size); the generated "
        "module replaces it with the generated one (keep yours with --method-name NAME, which names the "
        "generated method NAME instead).",
    )


def test_an_inherited_method_of_the_default_name_is_overridden_with_a_warning(models: Path) -> None:
    (warning,) = check_method_name(loaded(models, "Inherits"), "inference")
    assert warning.startswith("Inherits inherits inference from OwnInference; the generated inference overrides it")


@pytest.mark.parametrize(
    ("name", "method_name", "expected"),
    [
        ("Plain", "1x", "--method-name '1x' is not a Python identifier"),
        ("Plain", "class", "--method-name 'class' is not a Python identifier"),
        ("Plain", "eval", "every torch.nn.Module has `eval`"),
        ("Plain", "forward", "every torch.nn.Module has `forward`"),
        ("Plain", "head", "--method-name head: Plain instances have an attribute `head` (assigned to `self.head`)"),
        ("OwnInference", "forward", "every torch.nn.Module has `forward`"),
        ("CallsItsInference", "inference", ":23 calls it (`self.inference`), so the generated method cannot"),
        ("AttributeInference", "inference", ":30: AttributeInference assigns `inference` in its class body"),
        ("Inherits", "inference_", None),
    ],
)
def test_clashes_are_refused(models: Path, name: str, method_name: str, expected: str | None) -> None:
    if expected is None:
        assert check_method_name(loaded(models, name), method_name) == ()
        return
    with pytest.raises(OptionsError) as info:
        check_method_name(loaded(models, name), method_name)
    assert expected in str(info.value)
    assert "--method-name" in str(info.value)  # every refusal says how to name the method


def test_an_explicit_name_that_a_method_has_is_refused(models: Path) -> None:
    with pytest.raises(OptionsError, match=r"--method-name extra_name: .*extra.py:17: OwnInference already defines"):
        check_method_name(_with_extra_method(models), "extra_name")


def _with_extra_method(models: Path) -> LoadedModel:
    path = models.parent / "extra.py"
    path.write_text(MODELS.replace("    def inference(self, g, device", "    def extra_name(self, g, device", 1))
    return load(f"{path}:OwnInference")

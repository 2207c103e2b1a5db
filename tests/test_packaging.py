"""What a user gets outside this checkout: the wheel's contents, the installed `gnn-codegen`
command, a generated module that runs without gnn_codegen, and the command's error contract
(one paragraph on stderr, exit 2, no traceback, no output file).

The wheel tests build a wheel (with build isolation when hatchling is not installed, which needs
PyPI or a local index) and install it into a throw-away virtual environment. Set
GNN_CODEGEN_SKIP_WHEEL_TESTS=1 to skip those two; CI runs them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

# pytest -m long (CI runs it after the README's quick command): builds the wheel and installs it
# in a fresh virtual environment
pytestmark = pytest.mark.long

REPO = Path(__file__).resolve().parents[1]
SAGE = REPO / "generated_examples" / "sage" / "model.py"
SAGE_INIT = {"in_size": 16, "hid_size": 12, "out_size": 5}
BIN = "Scripts" if os.name == "nt" else "bin"

skip_wheel = pytest.mark.skipif(
    os.environ.get("GNN_CODEGEN_SKIP_WHEEL_TESTS", "") not in ("", "0"),
    reason="GNN_CODEGEN_SKIP_WHEEL_TESTS is set",
)


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without anything that would put this checkout on sys.path, with
    DGL's backend chosen (so that a first import of dgl prints nothing), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.setdefault("DGLBACKEND", "pytorch")
    env.update(extra)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout)


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


# --- the wheel ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", str(out)]
    if importlib.util.find_spec("hatchling") is not None:
        cmd.append("--no-isolation")  # the backend is already here: no download needed
    proc = run([*cmd, str(REPO)], cwd=out)
    assert proc.returncode == 0, describe(proc)
    wheels = list(out.glob("gnn_codegen-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@skip_wheel
def test_wheel_ships_templates_and_py_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (
        "gnn_codegen/templates/inference.py.j2",
        "gnn_codegen/templates/helpers.py.j2",
        "gnn_codegen/templates/header.py.j2",
        "gnn_codegen/py.typed",
        "gnn_codegen/__main__.py",
    ):
        assert name in names, f"{name} missing from {wheel.name}: {sorted(names)}"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "gnn-codegen = gnn_codegen.cli:console_main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def _outer_site_dirs() -> list[str]:
    """Where this interpreter finds torch, dgl, jinja2, black and libcst."""
    dirs = [*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    return list(dict.fromkeys(d for d in dirs if Path(d).is_dir()))


@skip_wheel
def test_installed_wheel_generates_and_checks_sage(wheel: Path, tmp_path: Path) -> None:
    # A fresh venv with only the wheel (no dependencies) in its own site-packages; torch, dgl and
    # the rest come from this interpreter's site-packages, listed in a .pth file. A path line in
    # a .pth file only appends the folder to sys.path (after the venv's own site-packages) and
    # does not run the .pth files inside it, so this checkout's editable install stays inactive.
    # (--system-site-packages would not do: when this interpreter is itself a venv, it exposes
    # the base interpreter's site-packages, which need not have torch.)
    venv_dir = tmp_path / "venv"
    proc = run([sys.executable, "-m", "venv", str(venv_dir)], cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    python = venv_dir / BIN / ("python.exe" if os.name == "nt" else "python")
    proc = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    venv_site = Path(proc.stdout.strip())
    (venv_site / "_outer_site_packages.pth").write_text("\n".join(_outer_site_dirs()) + "\n")
    proc = run(
        [str(python), "-m", "pip", "install", "--no-deps", "--force-reinstall", "--no-index",
         "--disable-pip-version-check", str(wheel)],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, describe(proc)

    work = tmp_path / "work"
    work.mkdir()
    proc = run([str(python), "-c", "import gnn_codegen; print(gnn_codegen.__file__)"], cwd=work)
    assert proc.returncode == 0, describe(proc)
    package = Path(proc.stdout.strip()).resolve().parent
    assert package.is_relative_to(venv_dir.resolve()), f"gnn_codegen imported from {package}, not from the wheel"
    assert (package / "templates" / "inference.py.j2").is_file()

    out = work / "sage_inference.py"
    proc = run(
        [str(venv_dir / BIN / "gnn-codegen"), f"{SAGE}:SAGE", "-o", str(out), "--init",
         json.dumps(SAGE_INIT), "--check", "--check-nodes", "300"],
        cwd=work,
    )
    assert proc.returncode == 0, describe(proc)
    assert out.is_file()
    assert "check: OK" in proc.stderr, describe(proc)
    signature = " ".join(out.read_text().split("    def inference(")[1].split("):")[0].split())
    assert signature == ("self, g, x, batch_size, device, max_memory=2**30, progress=False, nodes=None, storage=None, "
                         "changed=None, keep_layers=False,")


# --- the generated module needs only torch and dgl ---------------------------------------------

STANDALONE_SCRIPT = r"""
import importlib.abc, importlib.util, json, sys

class BlockGnnCodegen(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "gnn_codegen" or name.startswith("gnn_codegen."):
            raise ImportError(f"{name} is blocked: the generated module must not need it")
        return None

sys.meta_path.insert(0, BlockGnnCodegen())
try:
    import gnn_codegen
except ImportError:
    pass
else:
    raise AssertionError("the import blocker does not work")

sys.path.insert(0, ".")  # -I leaves the working directory off sys.path
import dgl
import torch

import sage_inference

model_path, init_json = sys.argv[1], sys.argv[2]
init = json.loads(init_json)
spec = importlib.util.spec_from_file_location("original_sage_model", model_path)
original_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(original_module)

state = torch.load("state.pt")
generated = sage_inference.SAGE(**init)
generated.load_state_dict(state)
original = original_module.SAGE(**init)
original.load_state_dict(state)
original.eval()

torch.manual_seed(0)
g = dgl.rand_graph(200, 1000)
x = torch.randn(200, init["in_size"])
with torch.no_grad():
    expected = original([g] * 3, x)
got = generated.inference(g, x, batch_size=37, device="cpu")
assert got.shape == expected.shape, (got.shape, expected.shape)
torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
loaded = sorted(n for n in sys.modules if n == "gnn_codegen" or n.startswith("gnn_codegen."))
assert not loaded, loaded
print("standalone OK", float((got - expected).abs().max()))
"""


def test_generated_module_runs_without_gnn_codegen(tmp_path: Path) -> None:
    import torch

    from gnn_codegen import GenerateOptions, generate

    out = tmp_path / "sage_inference.py"
    out.write_text(generate(f"{SAGE}:SAGE", GenerateOptions(init=json.dumps(SAGE_INIT), output=str(out))))

    spec = importlib.util.spec_from_file_location("original_sage_model_for_state", SAGE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(1)
    model = module.SAGE(**SAGE_INIT)
    with torch.no_grad():  # biases start at zero: move them so that they matter
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    torch.save(model.state_dict(), tmp_path / "state.pt")

    proc = run([sys.executable, "-I", "-B", "-c", STANDALONE_SCRIPT, str(SAGE), json.dumps(SAGE_INIT)], cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert "standalone OK" in proc.stdout


# --- the command's error contract --------------------------------------------------------------


def cli_env(env: dict[str, str] | None = None) -> dict[str, str]:
    # PYTHONPATH points at this checkout so that `-m gnn_codegen` works even where the package
    # is not installed; the wheel tests above are the ones about the installed package.
    env = dict(env or clean_env())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "gnn_codegen", *args], cwd=cwd, env=cli_env(env))


ERROR_CASES = {
    "nonexistent-file": (["{tmp}/no_such_model.py:SAGE"], "does not exist"),
    "not-file-colon-name": ([str(SAGE)], "FILE:NAME"),
    "empty-name": ([f"{SAGE}:"], "FILE:NAME"),
    "name-not-in-file": ([f"{SAGE}:NoSuchModel", "--init", json.dumps(SAGE_INIT)], "NoSuchModel"),
    "init-not-json": ([f"{SAGE}:SAGE", "--init", "{in_size: 16}"], "JSON"),
    "init-not-object": ([f"{SAGE}:SAGE", "--init", "[16, 12, 5]"], "JSON object"),
    "constructor-type-error": ([f"{SAGE}:SAGE", "--init", '{"in_size": 16, "hidden": 12, "out_size": 5}'], "hidden"),
    "constructor-missing-argument": ([f"{SAGE}:SAGE", "--init", '{"in_size": 16}'], "hid_size"),
}


@pytest.fixture(scope="module")
def cli_error_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """Every case of ERROR_CASES run at once (each start imports torch and dgl, which is most of
    its time): case -> (the -o path it was given, the finished process)."""
    base = tmp_path_factory.mktemp("cli_errors")
    started = {}
    for case, (args, _) in ERROR_CASES.items():
        cwd = base / case
        cwd.mkdir()
        out = cwd / "out" / "inference.py"
        cmd = [sys.executable, "-m", "gnn_codegen", *(a.replace("{tmp}", str(cwd)) for a in args), "-o", str(out)]
        proc = subprocess.Popen(cmd, cwd=cwd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started[case] = (out, cmd, proc)
    runs = {}
    for case, (out, cmd, proc) in started.items():
        stdout, stderr = proc.communicate(timeout=300)
        runs[case] = (out, subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr))
    return runs


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_cli_user_error_is_one_paragraph(
    case: str, cli_error_runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    out, proc = cli_error_runs[case]
    assert proc.returncode == 2, describe(proc)
    assert "Traceback" not in proc.stderr, describe(proc)
    message = proc.stderr.strip()
    assert message.startswith("error:"), describe(proc)
    assert "\n\n" not in message and message.count("error:") == 1, describe(proc)
    assert ERROR_CASES[case][1] in " ".join(message.split()), describe(proc)
    assert proc.stdout == "", describe(proc)
    assert not out.exists()
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_cli_help(tmp_path: Path) -> None:
    proc = cli(["--help"], cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith("usage: gnn-codegen"), describe(proc)
    for option in ("FILE:NAME", "--init", "--check", "--check-nodes", "--feat-dims", "--leaf", "--mp-module"):
        assert option in proc.stdout


def test_stdout_output_is_only_the_module_on_first_dgl_import(tmp_path: Path) -> None:
    # With no DGLBACKEND and no ~/.dgl/config.json, importing dgl prints a notice to stderr and
    # another to stdout, which `-o -` would write ahead of the generated module.
    env = clean_env(DGLDEFAULTDIR=str(tmp_path / "fresh_dgl_dir"))
    del env["DGLBACKEND"]
    proc = cli([f"{SAGE}:SAGE", "--init", json.dumps(SAGE_INIT), "-o", "-"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith("# Generated by gnn-codegen"), describe(proc)
    assert "DGL backend" not in proc.stderr, describe(proc)
    compile(proc.stdout, "<stdout>", "exec")

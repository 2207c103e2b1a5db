"""The `gnn-codegen` command around the pipeline: stdout carries only the module, output files
get the usual permissions and are never written where they should not be, options that name
nothing in the model are refused, and a model file that runs a script when imported is named
in a warning. Refusals exit 2 with one paragraph and no traceback, and leave no output."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path
from textwrap import dedent

import pytest

from gnn_codegen.cli import check_output_path, write_atomically
from gnn_codegen.errors import OutputError
from gnn_codegen.load import import_guard
from gnn_codegen.load.model import import_time_work, load
from gnn_codegen.pipeline import GenerateOptions, generate_all
from tests.cases import REPO
from tests.test_packaging import SAGE, SAGE_INIT, cli_env, describe

# --- work at import time (load.import_time_work) ----------------------------------------------

WORK = {
    "a call of the file's function": ("def main():\n    pass\n\n\nmain()\n", 5, "main()"),
    "training with arguments": ("def train(m, g):\n    pass\n\n\ntrain(model, g)\n", 5, "train(model, g)"),
    "a data set": ("from dgl.data import CoraGraphDataset\n\ndata = CoraGraphDataset()\n", 3,
                   "data = CoraGraphDataset()"),
    "the command line": ("import argparse\np = argparse.ArgumentParser()\nargs = p.parse_args()\n", 3,
                         "args = p.parse_args()"),
    "a loop of calls": ("for epoch in range(10):\n    opt.step()\n", 1, "for epoch in range(10):"),
    "inside an if": ("import torch\n\n\ndef main():\n    pass\n\n\nif torch.cuda.is_available():\n    main()\n", 9,
                     "main()"),
    "inside a with": ("def main():\n    pass\n\n\nwith open('x') as f:\n    main()\n", 6, "main()"),
}

NOT_WORK = {
    "main guard": 'def main():\n    pass\n\n\nif __name__ == "__main__":\n    main()\n',
    "main guard reversed": "def main():\n    pass\n\n\nif '__main__' == __name__:\n    main()\n",
    "decorators": "import functools\n\n\n@functools.lru_cache()\ndef f():\n    pass\n",
    "logger": "import logging\n\nlogger = logging.getLogger(__name__)\n",
    "device": 'import torch\n\nDEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
    "type variable": 'from typing import TypeVar\n\nT = TypeVar("T")\n',
    "environment": 'import os\n\nos.environ["DGLBACKEND"] = "pytorch"\nos.environ.setdefault("A", "1")\n',
    "seeds and warnings": "import torch, warnings\n\ntorch.manual_seed(0)\nwarnings.filterwarnings('ignore')\n",
    "a table filled by a loop": "import torch.nn.functional as F\n\nACTS = {}\nfor n in ('relu', 'elu'):\n"
                                "    ACTS[n] = getattr(F, n)\n",
    "a config object of the file's class": "class Config:\n    pass\n\n\nCONFIG = Config()\n",
    "a function that is not called": "def main():\n    pass\n\n\nrun = lambda: main()\n",
    "try import": "try:\n    import tqdm\nexcept ImportError:\n    tqdm = None\n",
    "constants and docstring": '"""Doc."""\nHIDDEN = 16\nSIZES = [HIDDEN, 2 * HIDDEN]\n',
}


@pytest.mark.parametrize("case", list(WORK))
def test_import_time_work_is_named(case: str) -> None:
    source, line, text = WORK[case]
    warning = import_time_work(source, Path("model.py"))
    assert warning == (
        f"model.py:{line} runs `{text}` when the file is imported; gnn-codegen imports the file to "
        'build the model, so that work runs too: put scripts under `if __name__ == "__main__":`.'
    )


@pytest.mark.parametrize("case", list(NOT_WORK))
def test_configuration_at_import_time_is_not_work(case: str) -> None:
    assert import_time_work(NOT_WORK[case], Path("model.py")) is None


def test_only_the_first_work_is_named() -> None:
    source = "def main():\n    pass\n\n\nmain()\nmain()\nfor i in range(3):\n    main()\n"
    warning = import_time_work(source, Path("model.py"))
    assert warning is not None and warning.startswith("model.py:5 runs `main()`")


def test_a_slow_import_is_announced_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # a file that sleeps (or loads data) at import: one line after SLOW_IMPORT_SECONDS, not silence
    model = tmp_path / "slow.py"
    model.write_text(EXITS.replace("import os", "import time").replace("os._exit(0)", "time.sleep(0.8)"))
    monkeypatch.setattr(import_guard, "SLOW_IMPORT_SECONDS", 0.2)
    load(f"{model}:Net")
    assert capsys.readouterr().err == (
        f"gnn-codegen: still importing {model} after 0.2 s, at {model}:16 (`time.sleep(0.8)`). gnn-codegen "
        "imports the file to build the model, so all of its top-level code runs; keep script work (loading "
        'data, training) under `if __name__ == "__main__":`.\n'
    )
    fast = tmp_path / "fast.py"
    fast.write_text(EXITS.replace("os._exit(0)\n", ""))
    monkeypatch.setattr(import_guard, "SLOW_IMPORT_SECONDS", 2.0)
    load(f"{fast}:Net")
    time.sleep(2.2)  # past the threshold: the notice was cancelled when the import returned
    assert capsys.readouterr().err == ""


# A script whose top level builds a graph, zeros and the model, and whose forward prints,
# counts its calls in a global and keeps its input on self: the generated module leaves the
# script out, keeps the data set the class reads, and says both; inference does none of
# forward's effects, and says so (issue 34, items 6 and 7).
EFFECTS = dedent('''\
    import dgl
    import dgl.nn as dglnn
    import torch
    import torch.nn as nn


    class TinyDataset:
        num_feats = 6


    data = TinyDataset()
    g = dgl.rand_graph(10, 30)
    x = torch.zeros(10, 6)
    calls = 0


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = dglnn.SAGEConv(data.num_feats, 3, "mean")

        def forward(self, g, x):
            global calls
            calls += 1
            print("forward", x.shape)
            self.last = x
            return self.conv(g, x)


    model = Net()
''')


def test_what_the_module_leaves_out_or_keeps_of_the_script_and_of_forward_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("effects.py").write_text(EFFECTS)
    generated = generate_all("effects.py:Net", GenerateOptions(verify=False))
    assert generated.warnings[1:] == (
        "the generated module keeps effects.py:11 (`data = TinyDataset()`) from effects.py, which Net needs; it "
        "does a script's work (loading data, reading the command line), so it runs wherever the generated module "
        "is imported: move what the class needs from it into the class, or into a function the class calls",
        "Net.forward does more than compute its result: effects.py:24 (`calls += 1`), effects.py:25 "
        "(`print(\"forward\", x.shape)`), effects.py:26 (`self.last = x`). The generated inference computes "
        "forward's result and does not repeat these (they ran once while gnn-codegen traced forward); do them "
        "around the call to inference if you need them",
    )
    assert generated.notes[0] == (
        "left out of the generated module: effects.py:12 (`g = dgl.rand_graph(10, 30)`), effects.py:13 (`x = "
        "torch.zeros(10, 6)`), effects.py:30 (`model = Net()`), which run code when effects.py is imported and "
        "which Net does not need"
    )
    assert "rand_graph" not in generated.source and "data = TinyDataset()" in generated.source


# --- writing the output (cli.write_atomically, cli.check_output_path) -------------------------


@pytest.fixture
def umask_027():
    previous = os.umask(0o027)
    yield
    os.umask(previous)


def test_a_new_output_gets_the_mode_open_would_give(tmp_path: Path, umask_027: None) -> None:
    out = tmp_path / "new" / "out.py"
    write_atomically(out, "x = 1\n")
    assert out.read_text() == "x = 1\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # 0o666 & ~0o027, not mkstemp's 0o600
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.py"]


def test_a_replaced_output_keeps_its_mode(tmp_path: Path, umask_027: None) -> None:
    out = tmp_path / "out.py"
    out.write_text("old\n")
    out.chmod(0o664)
    write_atomically(out, "new\n")
    assert out.read_text() == "new\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o664


def test_an_unwritable_place_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"^--dot /proc/x\.dot: cannot write there \(No such file or directory\)"):
        write_atomically(Path("/proc/x.dot"), "digraph {}\n", "--dot")
    (tmp_path / "a_file").write_text("")
    with pytest.raises(OutputError, match="a_file is a file, not a folder"):
        check_output_path("-o", tmp_path / "a_file" / "out.py")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in folders without write permission")
def test_a_folder_without_write_permission_is_refused_before_any_work(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="you cannot write in the folder"):
            check_output_path("-o", folder / "out.py")
    finally:
        folder.chmod(0o755)


# --- the command ------------------------------------------------------------------------------

# A training script with its model, as people write them: it prints when imported, built and
# run, runs work at import time, has its own `inference`, and imports torch below the class.
SCRIPT = dedent('''\
    """Net and the script that trains it."""
    import dgl.nn as dglnn
    import torch.nn as nn

    print("importing the script")


    def announce():
        print("announce() ran")


    announce()


    class Net(nn.Module):
        def __init__(self, in_size=6, out_size=3):
            super().__init__()
            print("building Net")
            self.conv = dglnn.SAGEConv(in_size, out_size, "mean")

        def forward(self, g, x):
            print("running forward")
            return F.relu(self.conv(g, x))

        def inference(self, g, device, batch_size):
            return None


    import torch
    import torch.nn.functional as F
''')

# A model file that ends the process when imported, and one whose forward exits: each run must
# exit non-zero and say so, not end with status 0 and nothing written.
EXITS = dedent('''\
    import os

    import dgl.nn as dglnn
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = dglnn.SAGEConv(6, 3, "mean")

        def forward(self, g, x):
            return self.conv(g, x)


    os._exit(0)
''')
EXITS_IN_FORWARD = EXITS.replace("os._exit(0)\n", "").replace(
    "return self.conv(g, x)", "import sys\n        sys.exit(0)"
)
FILES = {"script.py": SCRIPT, "exits.py": EXITS, "exits_in_forward.py": EXITS_IN_FORWARD}
GNN_FILM = REPO / "generated_examples" / "gnn_film" / "model.py"
_FILM_CASE = json.loads((GNN_FILM.parent / "case.json").read_text())
GNN_FILM_OPTIONS = ["--init", json.dumps(_FILM_CASE["init"]), "--metagraph", _FILM_CASE["metagraph"]]

SAGE_TARGET = f"{SAGE}:SAGE"
SAGE_ARGS = [SAGE_TARGET, "--init", json.dumps(SAGE_INIT)]

# case -> (arguments, with {tmp} for the case's folder; what the one-paragraph error says)
REFUSED = {
    "read-only output": ([*SAGE_ARGS, "-o", "{tmp}/readonly.py"],
                         "-o {tmp}/readonly.py exists and is read-only, so gnn-codegen does not replace it"),
    "output is a folder": ([*SAGE_ARGS, "-o", "{tmp}"], "-o {tmp} is a folder; give a file name"),
    "output in /proc": ([*SAGE_ARGS, "-o", "/proc/x.py"], "-o /proc/x.py: cannot write there"),
    "dot in /proc": ([*SAGE_ARGS, "--explain", "--dot", "/proc/x.dot"], "--dot /proc/x.dot: cannot write there"),
    "explain and module on stdout": ([*SAGE_ARGS, "--explain", "--dot", "{tmp}/plan.dot", "-o", "-"],
                                     "--explain prints the plan on stdout"),
    "check nodes 0": ([*SAGE_ARGS, "--check", "--check-nodes", "0", "-o", "{tmp}/out.py"],
                      "--check-nodes 0: the check runs on a random graph of that many nodes and needs at least 2"),
    "check nodes negative": ([*SAGE_ARGS, "--check-nodes", "-5", "-o", "{tmp}/out.py"], "--check-nodes -5"),
    "feat dims of no input": ([*SAGE_ARGS, "--feat-dims", "y=3", "-o", "{tmp}/out.py"],
                              "--feat-dims y=...: SAGE.forward has no tensor input named y (its tensor inputs: x; "
                              "its graph: blocks)"),
    "leaf of no class": ([*SAGE_ARGS, "--leaf", "Foo", "-o", "{tmp}/out.py"],
                         "--leaf Foo: no module of SAGE is of a class named Foo. Its modules' classes are Dropout, "
                         "Linear, ModuleList, SAGE, SAGEConv"),
    "mp-module of no class": ([*SAGE_ARGS, "--mp-module", "Bar", "-o", "{tmp}/out.py"],
                              "--mp-module Bar: no module of SAGE is of a class named Bar"),
    "method name forward": ([*SAGE_ARGS, "--method-name", "forward", "-o", "{tmp}/out.py"],
                            "--method-name forward: every torch.nn.Module has `forward`"),
    "method name not an identifier": ([*SAGE_ARGS, "--method-name", "my inference", "-o", "{tmp}/out.py"],
                                      "--method-name 'my inference' is not a Python identifier"),
    # refused before the model's file is imported (it was exit 3 with a traceback for a
    # heterogeneous model, whose header repeats the option)
    "forward args not JSON": ([f"{GNN_FILM}:GNNFiLM", *GNN_FILM_OPTIONS, "--forward-args", "{out_key: paper}",
                               "-o", "{tmp}/out.py"],
                              "--forward-args is not valid JSON (Expecting property name enclosed in double quotes "
                              "at character 1): '{out_key: paper}'. Give values for forward's parameters as a JSON "
                              "object, with keys and strings in double quotes, e.g. --forward-args "
                              "'{\"out_key\": \"paper\"}'."),
    "init not JSON": ([SAGE_TARGET, "--init", "{in_size: 16}", "-o", "{tmp}/out.py"],
                      "--init is not valid JSON (Expecting property name enclosed in double quotes at character 1)"),
    "exits when imported": (["exits.py:Net", "-o", "{tmp}/out.py"],
                            "importing 'exits.py' called os._exit(0) (exits.py:16 (`os._exit(0)`)), which would end "
                            "gnn-codegen before it writes anything. Put the training script under "
                            '`if __name__ == "__main__":`'),
    "exits in forward": (["exits_in_forward.py:Net", "-o", "{tmp}/out.py"],
                         "the model's code called sys.exit(0) while gnn-codegen ran it, which would end gnn-codegen "
                         "before it writes anything; nothing was written."),
}


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gnn_codegen", *args], cwd=cwd, env=cli_env(), umask=0o022,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """Every command of this file at once (each start imports torch and dgl, most of its time):
    case -> (its folder, the finished process)."""
    base = tmp_path_factory.mktemp("cli")
    commands: dict[str, list[str]] = {}
    for case, (args, _) in REFUSED.items():
        commands[case] = args
    commands["script to stdout"] = ["script.py:Net", "-o", "-", "--check", "--check-nodes", "50"]
    commands["script, own method kept"] = ["script.py:Net", "-o", "{tmp}/out.py", "--method-name", "layerwise"]
    started = {}
    for number, (case, args) in enumerate(commands.items()):
        cwd = base / f"case{number}"
        cwd.mkdir()
        for name, text in FILES.items():
            (cwd / name).write_text(text)
        (cwd / "readonly.py").write_text("# mine\n")
        (cwd / "readonly.py").chmod(0o444)
        args = [a.replace("{tmp}", str(cwd)) for a in args]
        started[case] = (cwd, args, _start(args, cwd))
    finished = {}
    for case, (cwd, args, proc) in started.items():
        stdout, stderr = proc.communicate(timeout=600)
        finished[case] = (cwd, subprocess.CompletedProcess(args, proc.returncode, stdout, stderr))
    return finished


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_with_one_paragraph_and_no_output(
    case: str, runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    cwd, proc = runs[case]
    assert proc.returncode == 2, describe(proc)
    assert "Traceback" not in proc.stderr, describe(proc)
    message = " ".join(proc.stderr.split())
    assert message.startswith("error: ") and message.count("error:") == 1, describe(proc)
    assert REFUSED[case][1].replace("{tmp}", str(cwd)) in message, describe(proc)
    assert proc.stdout == "", describe(proc)
    assert sorted(p.name for p in cwd.iterdir()) == sorted(["readonly.py", *FILES])
    assert (cwd / "readonly.py").read_text() == "# mine\n"


def test_stdout_is_only_the_module_and_the_script_is_warned_about(
    runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    cwd, proc = runs["script to stdout"]
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith("# Generated by gnn-codegen"), describe(proc)
    for printed in ("importing the script", "announce() ran", "building Net", "running forward"):
        assert printed not in proc.stdout.splitlines() and printed in proc.stderr.splitlines(), describe(proc)
    assert "check: OK" in proc.stderr, describe(proc)
    stderr = " ".join(proc.stderr.split())
    assert ("warning: script.py:12 runs `announce()` when the file is imported; gnn-codegen imports the file "
            "to build the model, so that work runs too") in stderr, describe(proc)
    assert ("warning: script.py:25: Net already defines inference(self, g, device, batch_size); the generated "
            "module replaces it with the generated one (keep yours with --method-name NAME") in stderr, describe(proc)
    source = proc.stdout
    assert source.count("def inference(") == 1 and "def inference(self, g, x, batch_size, device" in _one_line(source)
    # the imports below the class come before it: `@torch.no_grad()` needs torch when Net is defined
    assert source.index("import torch\n") < source.index("class Net")
    assert "announce" not in source and "print(" in source  # forward's print is the user's code
    assert sorted(p.name for p in cwd.iterdir()) == sorted(["readonly.py", *FILES])
    namespace: dict[str, object] = {}
    exec(compile(source, "<stdout>", "exec"), namespace)


def test_method_name_keeps_the_users_method(runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]) -> None:
    cwd, proc = runs["script, own method kept"]
    assert proc.returncode == 0, describe(proc)
    assert "already defines inference" not in proc.stderr, describe(proc)
    out = cwd / "out.py"
    source = out.read_text()
    assert f"script.py:Net -o {out} --method-name layerwise\n" in source  # the header's command
    assert source.count("def inference(self, g, device, batch_size):") == 1
    assert _one_line(source).count("def layerwise(self, g, x, batch_size, device") == 1
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # umask 022


def _one_line(source: str) -> str:
    """source with the lines black splits joined: `def inference(self, g, x, ...`."""
    return re.sub(r"\(\s+", "(", re.sub(r",\s+", ", ", source))

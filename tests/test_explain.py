"""--explain (text, JSON, DOT), the cut options on the command line, and the optimal cut on the
example cases: never costlier than the simple rule, and both placements exact."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from gnn_codegen.explain.plan_text import SCHEMA, explain_data, explain_dot, explain_text
from gnn_codegen.pipeline import generate_all
from gnn_codegen.verify.check import check
from tests.cases import CASES_BY_NAME, REPO, all_cases, generate_case

WIDENING = CASES_BY_NAME["widening"]
REGRESSIONS = REPO / "tests" / "models" / "regressions.py"


def cli(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gnn_codegen", *args], cwd=cwd, capture_output=True, text=True)


def widening_args() -> list[str]:
    return [WIDENING.target, "--init", WIDENING.options.init]


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.name)
def test_optimal_cut_never_costs_more_than_the_simple_rule(case) -> None:
    cut = generate_case(case).plan.cut
    assert cut.placement.optimal
    assert cut.cost.total <= cut.simple_cost.total


@pytest.mark.parametrize("name", ["widening", "encoder", "narrowing", "edge_features"])
def test_simple_and_optimal_placements_are_both_exact(name: str) -> None:
    case = CASES_BY_NAME[name]
    for optimize in (True, False):
        generated = generate_case(replace(case, options=replace(case.options, optimize=optimize)))
        result = check(generated, num_nodes=211, batch_sizes=(1, 50, 211))
        assert result.ok, (name, optimize, result.max_abs_diff)


def test_explain_data_for_the_widening_case() -> None:
    """GAT 32 -> 16, a 16 -> 256 MLP, GraphConv 256 -> 8: the 256-wide tensor is never stored,
    as GraphConv's weight (it narrows) runs at the end of layer 1, once per node (write_out.py),
    and so does the GAT's fc, in the prologue."""
    data = explain_data(generate_case(WIDENING), nodes=1000)
    assert data["schema"] == SCHEMA and data["nodes"] == 1000 and data["optimal"]
    tensors = {t["tensor"]: t for t in data["tensors"]}
    feat1 = tensors["feat1"]
    assert feat1["shape"] == [8] and feat1["bytes_per_row"] == 32 and feat1["stored_bytes"] == 32_000
    assert feat1["read_in"] == [{"stage": 2, "rows": "src"}]
    assert feat1["reloaded_bytes"] == 32_000  # read in place by GraphConv's aggregation: once per row
    assert tensors["x"]["input"] and tensors["x"]["stored_bytes"] == 0
    assert max(t["bytes_per_row"] for t in data["tensors"]) < 256 * 4
    layer1 = data["stages"][1]
    what = [op["what"] for op in layer1["ops"]]
    assert "self.expand (Linear)" in what and "F.relu" in what
    assert {op["rows"] for op in layer1["ops"]} == {"dst"}
    assert data["cost"]["total_bytes"] == sum(t["stored_bytes"] + t["reloaded_bytes"] for t in data["tensors"])
    text = explain_text(data)
    assert "Layer 2 of 2" in text and "feat1" in text and "Simple rule" in text


def test_a_widening_linear_before_a_narrowing_sage_conv_is_not_stored() -> None:
    """Issue 34: SAGEConv(32, 16) -> ReLU -> Linear(16, 256) -> SAGEConv(256, 8) stores the
    16-wide rows and runs the Linear and fc_neigh on layer 2's batches (the 256-wide rows of
    every node cost 1 GB per million nodes to store), and --explain says how much less that
    moves than the simple rule, which stores them."""
    generated = generate_all(f"{REGRESSIONS}:WideningLinearBeforeSAGEConv")
    data = explain_data(generated, nodes=1_000_000)
    assert max(t["bytes_per_row"] for t in data["tensors"]) == 4 * 32  # x; nothing 256 wide
    assert sum(t["stored_bytes"] for t in data["tensors"]) == (16 + 16 + 8) * 4 * 1_000_000
    layer2 = [s for s in data["stages"] if s["name"] == "layer 2"][0]
    assert {op["what"]: op["rows"] for op in layer2["ops"]}["self.lin (Linear)"] == "src"
    assert data["saving"] > 0.5
    text = explain_text(data)
    assert "the same plan" not in text and "fewer bytes" in text
    assert "def before_layer_2" not in generated.source


def test_dot_has_one_cluster_per_stage_and_marks_stored_tensors() -> None:
    generated = generate_case(CASES_BY_NAME["encoder"])
    dot = explain_dot(generated, explain_data(generated))
    assert dot.startswith("digraph plan {") and dot.rstrip().endswith("}")
    for cluster in ("cluster_0", "cluster_1", "cluster_2"):
        assert cluster in dot
    assert "stored: h0" in dot and "peripheries=2" in dot


def test_cli_explain_json_writes_no_module(tmp_path) -> None:
    result = cli(*widening_args(), "--explain", "--json", "--nodes", "500", "--dot", str(tmp_path / "plan.dot"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["nodes"] == 500 and data["stages"][0]["kind"] == "prologue"
    assert (tmp_path / "plan.dot").read_text().startswith("digraph")
    if shutil.which("dot"):
        assert (tmp_path / "plan.svg").is_file() and (tmp_path / "plan.png").is_file()


def test_cli_fanout_changes_the_regenerate_command(tmp_path) -> None:
    out = tmp_path / "widening.py"
    result = cli(*widening_args(), "-o", str(out), "--fanout", "3")
    assert result.returncode == 0, result.stderr
    assert "--fanout 3" in out.read_text()


@pytest.mark.parametrize("args, message", [
    ([], "no output file"),
    (["-o", "x.py", "--json"], "add --explain"),
    (["-o", "-", "--explain"], "-o - would also write"),
    (["-o", "x.py", "--fanout", "0.5"], "--fanout 0.5"),
    (["--explain", "--nodes", "0"], "--nodes 0"),
])
def test_cli_rejects_contradictory_options(tmp_path, args: list[str], message: str) -> None:
    result = cli(*widening_args(), *args, cwd=REPO)
    assert result.returncode == 2 and result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (REPO / "x.py").exists()


def test_explain_a_heterogeneous_model(tmp_path) -> None:
    """--explain for a HeteroGraphConv model: each layer per destination type, its stored rows
    and the relations' rows made once per node, measured by running the generated code; --json
    the same; --dot refused (it draws a homogeneous plan)."""
    from gnn_codegen.explain.hetero import SCHEMA as HETERO_SCHEMA
    from gnn_codegen.explain.hetero import explain_hetero

    case = CASES_BY_NAME["rgat"]
    data = explain_hetero(generate_case(case), 1000)
    assert data["schema"] == HETERO_SCHEMA and [s["index"] for s in data["stages"]] == [1, 2, 3]
    last = data["stages"][-1]["types"]
    assert [t["ntype"] for t in last] == ["paper"]  # the last layer runs for papers alone
    (store,) = last[0]["stores"]
    # the result: the Linear after the last layer runs in its batches, 5 classes
    assert store["tensor"] == 'h3["paper"]' and store["shape"] == [5] and store["bytes"] == 20 * 1000
    # GATConv's fc'd rows (4 heads x 4) and attention term (4 heads x 1), per relation into papers
    relations = {tuple(r["relation"]): r for r in last[0]["relation_rows"]}
    assert relations[("author", "writes", "paper")]["bytes_per_row"] == (4 * 4 + 4) * 4
    assert data["stored_bytes"] == sum(s["bytes"] for stage in data["stages"] for t in stage["types"]
                                       for s in t["stores"])
    args = [case.target, "--init", case.options.init, "--metagraph", case.options.metagraph, "--explain"]
    result = cli(*args, "--nodes", "1000")
    assert result.returncode == 0, result.stderr
    assert 'store  h3["paper"]' in result.stdout and "first  writes, once per author node" in result.stdout
    assert json.loads(cli(*args, "--json").stdout)["nodes_per_type"] == 1_000_000
    result = cli(*args, "--dot", str(tmp_path / "plan.dot"))
    assert result.returncode == 2 and "--dot draws the traced graph" in result.stderr

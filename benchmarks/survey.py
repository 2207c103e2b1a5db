"""Issue 35's survey: run the gnn-codegen command, as a new user would, on every model class of
tests/models/survey/ (third-party DGL styles, table in tests/models/survey/cases.py), one at a
time, and classify each:

- exact:    exit 0, and our own check (benchmarks/survey_check.py: the written module loaded, its
            `inference` against the user's `forward` on our own seeded graph, two batch sizes)
            finds no difference beyond 1e-4 relative;
- WRONG:    exit 0, and our check finds a difference (or another structure or shape);
- refused:  exit 2 (the first line of the message is kept);
- check-failed: exit 1 (the tool's own check before writing found a difference, or forward failed
            on its graph; nothing written);
- crash:    exit 3 or anything else, a timeout, or a written `inference` that raises on our graph
            (`inference-error`, counted with the crashes).

    python benchmarks/survey.py                       # every case, this tree
    python benchmarks/survey.py --only 'HAN*'         # fnmatch on the class name (or a substring)
    python benchmarks/survey.py --tree /work/main     # the command of another tree (PYTHONPATH)

Writes OUT/survey.md and OUT/survey.json (default benchmarks/results); with --only, the rows of
the other cases already in survey.json are kept.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.models.survey.cases import CASES, MECHANISMS, SurveyCase  # noqa: E402

TIMEOUT_S = 300


def command(case: SurveyCase, out: Path) -> list[str]:
    # the model file of this tree, by absolute path: another --tree runs its command on the same models
    cmd = [sys.executable, "-m", "gnn_codegen", str(REPO / case.target), "-o", str(out)]
    if case.init is not None:
        cmd += ["--init", json.dumps(case.init)]
    if case.feat_dims:
        cmd += ["--feat-dims", case.feat_dims]
    if case.metagraph:
        cmd += ["--metagraph", case.metagraph]
    if case.blocks is not None:
        cmd += ["--blocks", str(case.blocks)]
    return cmd


def _env(pythonpath: Path) -> dict[str, str]:
    # no __pycache__ written into another tree
    env = dict(os.environ, DGLBACKEND="pytorch", PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CI", None)
    return env


def _first_line(stderr: str, rc: int) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if rc == 2:
        for line in lines:
            if line.startswith("error:"):
                return line
    if rc != 0:
        # an internal error: its last traceback line says what broke
        for line in reversed(lines):
            if not line.startswith(("internal error", "warning", "note")):
                return line
    return next((line for line in lines if line.startswith("warning:")), "")


def _message(stderr: str) -> str:
    """The refusal's whole paragraph (from `error:` to the first blank line), on one line."""
    text = stderr.split("error:", 1)
    if len(text) < 2:
        return ""
    return " ".join(("error:" + text[1]).split("\n\n")[0].split())


def run_case(case: SurveyCase, tree: Path) -> dict:
    row = {"name": case.name, "family": case.family, "source": case.source, "target": case.target,
           "mechanisms": list(case.mechanisms), "possible": case.possible, "why_not": case.why_not,
           "heterogeneous": case.heterogeneous, "blocks_style": case.blocks_style,
           "command": " ".join(command(case, Path("OUT.py"))[1:]).replace(str(REPO) + "/", "")}
    with tempfile.TemporaryDirectory(prefix="survey-") as tmp:
        out = Path(tmp) / f"{case.name.lower()}_inference.py"
        start = time.perf_counter()
        try:
            proc = subprocess.run(command(case, out), cwd=tree, env=_env(tree), capture_output=True, text=True,
                                  timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            row.update(outcome="crash", rc=None, seconds=TIMEOUT_S, reason=f"timeout after {TIMEOUT_S} s")
            return row
        row["seconds"] = round(time.perf_counter() - start, 1)
        row["rc"] = proc.returncode
        row["reason"] = _first_line(proc.stderr, proc.returncode).replace(str(REPO) + "/", "")
        row["message"] = _message(proc.stderr).replace(str(REPO) + "/", "")
        if proc.returncode == 2:
            row["outcome"] = "refused"
        elif proc.returncode == 1:
            # the tool's own check before writing failed (or forward failed on its graph): nothing
            # written, and not an internal error; counted apart from the crashes
            row["outcome"] = "check-failed"
        elif proc.returncode != 0:
            row["outcome"] = "crash"
        elif not out.is_file():
            row.update(outcome="crash", reason="exit 0 without an output file")
        else:
            row.update(_independent_check(case, out))
    return row


def _independent_check(case: SurveyCase, module: Path) -> dict:
    """In a child of its own (the written module is imported there), with this tree's tests on
    the path, never the tool's."""
    try:
        proc = subprocess.run([sys.executable, str(HERE / "survey_check.py"), case.name, str(module)],
                              cwd=REPO, env=_env(REPO), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"outcome": "inference-error", "check": f"our check timed out after {TIMEOUT_S} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"outcome": "inference-error", "check": f"loading the written module failed: {tail[:200]}"}
    result = json.loads(lines[-1])
    outcome = result.pop("outcome")
    detail = result.pop("detail", "")
    return {"outcome": outcome, "check": detail, **result}


# what a refusal's message says is the cause, by a phrase of the tool's own messages (first match)
CAUSES = (
    ("called with NoneType inputs", "a forward default of None traced as an input"),
    ("tracing forward with torch.fx failed", "torch.fx could not trace Python on traced values"),
    ("branches or loops on a tensor's value", "a static decision taken for data"),
    ("--metagraph gives", "--metagraph refused: no HeteroGraphConv (to_homogeneous, relation subgraphs)"),
    ("no tensor input named", "--feat-dims by node type refused"),
    ("fails on a 1-hop block", "a user module that does not run on a block (ndata, Python UDF, rounds)"),
    ("gives other results on 1-hop blocks", "a user module not exact on blocks (rounds, source statistics)"),
    ("cannot tell the width", "an input the probe cannot size"),
    ("small probe graph", "forward fails on the probe graph (its fields or sizes)"),
    ("takes 2 graphs", "several graphs"),
    ("combines rows of node types", "rows of several node types combined"),
    ("mixes the rows", "rows on another axis"),
    ("no message-passing module", "no message passing at all"),
    ("apply_edges", "inline apply_edges with a Python function"),
    ("does not follow yet", "graph use not followed (type subgraphs, schema reads)"),
    ("on a random graph of", "forward fails on the check's graph (a table sized for the user's graph)"),
    ("inspects the graph", "library code on the graph (readout)"),
)


def cause(row: dict) -> str:
    if row["outcome"] == "exact":
        return ""
    if row["outcome"] in ("WRONG", "inference-error"):
        return row.get("check", "")[:120]
    text = row.get("message") or row.get("reason") or ""
    for phrase, label in CAUSES:
        if phrase in text:
            return label
    return row.get("reason", "")[:120]


def _bucket(outcome: str) -> str:
    return "crash" if outcome in ("crash", "inference-error") else outcome


def summary(rows: list[dict]) -> dict:
    counts = Counter(_bucket(r["outcome"]) for r in rows)
    possible = [r for r in rows if r["possible"]]
    counts_possible = Counter(_bucket(r["outcome"]) for r in possible)
    exact_possible = counts_possible.get("exact", 0)
    return {
        "cases": len(rows),
        "counts": dict(counts),
        "possible": len(possible),
        "counts_possible": dict(counts_possible),
        "share_exact_among_possible": round(exact_possible / len(possible), 3) if possible else None,
        "heterogeneous": sum(r["heterogeneous"] for r in rows),
        "blocks_style": sum(r["blocks_style"] for r in rows),
        "seconds_median": sorted(r.get("seconds") or 0 for r in rows)[len(rows) // 2] if rows else None,
    }


def _md_cell(text: str) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def write_markdown(rows: list[dict], info: dict, path: Path) -> None:
    s = info["summary"]
    lines = [
        "# Survey of issue 35: third-party model styles through the command",
        "",
        f"Run: {info['when']}, tree `{info['tree']}` at `{info['commit']}`, {s['cases']} model classes "
        f"({s['heterogeneous']} heterogeneous, {s['blocks_style']} written for blocks). "
        "Produced by `python benchmarks/survey.py`; the models are in `tests/models/survey/`, the table "
        "of options and of what is possible in `tests/models/survey/cases.py`.",
        "",
        f"- all: {s['counts']}",
        f"- where exact inference is possible ({s['possible']}): {s['counts_possible']}; "
        f"**exact: {s['counts_possible'].get('exact', 0)} of {s['possible']} "
        f"({100 * (s['share_exact_among_possible'] or 0):.0f}%)**",
        f"- median time of the command: {s['seconds_median']} s (2 shared cores; one run)",
        "",
        "`exact` is exit 0 and our own check (`benchmarks/survey_check.py`) found the written `inference` "
        "equal to `forward` on our graph for batch sizes 7 and 64 (1e-4 relative); `WRONG` is exit 0 and a "
        "difference; `check-failed` is exit 1 (the tool's check before writing failed, nothing written); "
        "`crash` is exit 3, another exit, a timeout, or a written `inference` that raised on our graph "
        "(`inference-error`).",
        "",
        "Mechanisms (issue 35): " + "; ".join(f"{k} {v}" for k, v in MECHANISMS.items()) + ".",
        "",
        "| model | source followed | mechanisms | possible? | outcome | s | reason / first line |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        reason = (r.get("message") or r.get("reason", "")) if r["outcome"] != "exact" else ""
        if r["outcome"] == "crash":
            reason = f"exit {r.get('rc')}: {r.get('reason', '')}"
        if r["outcome"] in ("WRONG", "inference-error"):
            reason = f"{r.get('check', '')} (max rel diff {r.get('max_rel_diff', '-')})" if r["outcome"] == "WRONG" \
                else r.get("check", "")
        possible = "yes" if r["possible"] else f"no: {r['why_not']}"
        lines.append(
            f"| `{r['name']}` | {_md_cell(r['source'])} | {','.join(map(str, r['mechanisms'])) or 'none'} | "
            f"{possible} | **{r['outcome']}** | {r.get('seconds', '')} | {_md_cell(reason)[:300]} |"
        )
    by_mechanism: dict[int, list[str]] = {}
    for r in rows:
        if r["possible"] and r["outcome"] != "exact":
            for m in r["mechanisms"] or [0]:
                by_mechanism.setdefault(m, []).append(r["name"])
    lines += ["", "## Not exact though possible, by cause (from the tool's message)", ""]
    by_cause: dict[str, list[str]] = {}
    for r in rows:
        if r["possible"] and r["outcome"] != "exact":
            by_cause.setdefault(f"{r['outcome']}: {cause(r)}", []).append(r["name"])
    for label, names in sorted(by_cause.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"- {len(names)} × {_md_cell(label)}: {', '.join(names)}")
    lines += ["", "## Not exact though possible, by mechanism", ""]
    for m in sorted(by_mechanism):
        label = MECHANISMS.get(m, "none of the issue's mechanisms")
        lines.append(f"- {m} ({label}): {', '.join(by_mechanism[m])}")
    path.write_text("\n".join(lines) + "\n")


def _commit(tree: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _selected(pattern: str | None) -> list[SurveyCase]:
    if not pattern:
        return list(CASES)
    return [c for c in CASES if fnmatch.fnmatch(c.name, pattern) or pattern in c.name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="fnmatch pattern (or substring) of the class names to run")
    parser.add_argument("--tree", type=Path, default=REPO, help="the tree whose gnn_codegen runs (default: this one)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    tree = args.tree.resolve()
    cases = _selected(args.only)
    if not cases:
        parser.error(f"no case matches {args.only!r}")
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "survey.json"
    previous = {}
    if args.only and json_path.is_file():
        previous = {r["name"]: r for r in json.loads(json_path.read_text())["rows"]}
    for case in cases:
        row = run_case(case, tree)
        row["cause"] = cause(row)
        previous[case.name] = row
        print(f"{case.name:22s} {row['outcome']:15s} {row.get('seconds', '')!s:>6s}  "
              f"{(row.get('check') or row.get('message') or row.get('reason') or '')[:110]}", flush=True)
    order = [c.name for c in CASES]
    rows = [previous[name] for name in order if name in previous]
    info = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tree": str(tree), "commit": _commit(tree),
            "summary": summary(rows)}
    json_path.write_text(json.dumps({**info, "rows": rows}, indent=1) + "\n")
    write_markdown(rows, info, args.out / "survey.md")
    print(json.dumps(info["summary"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: this checkout's generated inference against modules another gnn-codegen wrote, one
run of each in turn, so that a neighbour's load falls on both alike (run.py runs all of one
method's runs, then the other's: on a shared machine minutes apart).

    python benchmarks/alternating.py --baseline-modules DIR --models gat --rounds 5

DIR holds generated_<model>.py as run.py's --baseline-modules. Each round runs the baseline
and then this checkout's module, each in its own process (run.py's child, one timed run); the
result is each round's ratio (generated / baseline) and their median, and the two results'
largest difference. Results: OUT/alternating.json and OUT/alternating.md (one run: never
compare rows of different runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (the children, graphs and weights of the main benchmark)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline-modules", type=Path, required=True)
    p.add_argument("--nodes", type=int, default=200_000)
    p.add_argument("--edges", type=int, default=2_000_000)
    p.add_argument("--models", default="gat")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=65536)
    p.add_argument("--threads", type=int, default=1, help="torch threads in each child")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    models = args.models.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="gnn_codegen_alternating_") as folder:
        work = Path(folder)
        run.prepare_work(models, work, args.nodes, args.edges)
        for model in models:
            for round_ in range(args.rounds):
                times = {}
                for method in ("baseline", "generated"):
                    spec = {"model": model, "method": method, "graph": "uniform", "work": str(work), "runs": 1,
                            "batch_size": args.batch_size, "threads": args.threads,
                            "baseline": str(args.baseline_modules), "output": str(work / f"out_{method}.pt")}
                    result = run.run_child(spec, timeout=3600)
                    times[method] = result.get("median_s")
                error = run.max_error(work / "out_generated.pt", work / "out_baseline.pt")
                rows.append({"model": model, "round": round_, **times, "max_error": error,
                             "load": run.load_average()})
                print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/alternating.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "nodes": args.nodes, "edges": args.edges, "batch_size": args.batch_size, "threads": args.threads,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (args.out / "alternating.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (args.out / "alternating.md").write_text(_table(meta, rows))
    print((args.out / "alternating.md").read_text())
    return 0


def _table(meta: dict, rows: list[dict]) -> str:
    lines = [f"`{meta['command']}`: {meta['nodes']} nodes, {meta['edges']} edges (+ self-loops), batch "
             f"{meta['batch_size']}, {meta['threads']} torch thread(s), {meta['date']}.", "",
             "| model | rounds | baseline s (median) | generated s (median) | ratio per round | median ratio "
             "| max difference |", "|---|---:|---:|---:|---|---:|---:|"]
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model and r["baseline"] and r["generated"]]
        if not mine:
            lines.append(f"| {model} | 0 | | | failed | | |")
            continue
        ratios = [r["generated"] / r["baseline"] for r in mine]
        errors = [r["max_error"] for r in mine if r["max_error"] is not None]
        worst = f"{max(errors):.1e}" if errors else ""
        lines.append(f"| {model} | {len(mine)} | {statistics.median(r['baseline'] for r in mine):.2f} | "
                     f"{statistics.median(r['generated'] for r in mine):.2f} | "
                     f"{', '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f}x | {worst} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())

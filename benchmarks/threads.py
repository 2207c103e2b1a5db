"""Benchmark: the generated inference's speed with a core free and with a core busy, against the
full-graph forward, with torch's threads as the runtime chooses them per batch (`generated`)
and with the user's count kept for every batch, as before (`fixed`).

    python benchmarks/threads.py                        # 500k nodes, 5M edges, sage and gcn
    python benchmarks/threads.py --nodes 100000 --runs 1

Each model x method x thread count x condition runs in its own process (run.py's child), and
each condition is set up around it:

- quiet: nothing else runs (as far as this script can tell: the 1-minute load is reported).
- busy:  one other process spins on a core (`while True: pass`) for the child's whole life.
- torch: another torch job with 2 threads (a loop of 1024x1024 matrix products) beside it.

Results: OUT/threads.json and OUT/threads.md, ratios against the forward of the same row
condition and thread count (one run: never compare rows of different runs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (the children, graphs and weights of the main benchmark)

CONDITIONS = {
    "quiet": None,
    "busy": [sys.executable, "-c", "while True: pass"],
    "torch": [sys.executable, "-c", "import torch\ntorch.set_num_threads(2)\na = torch.randn(1024, 1024)\n"
              "while True: a = torch.tanh(a @ a)"],
}
METHODS = ("full", "generated", "fixed")


def _spec(args, work: Path, model: str, method: str, threads: int, out: Path) -> dict:
    return {"model": model, "method": "generated" if method == "fixed" else method, "graph": "uniform",
            "work": str(work), "runs": args.runs, "batch_size": args.batch_size, "threads": threads,
            "output": str(out), "fixed_threads": method == "fixed"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=500_000)
    p.add_argument("--edges", type=int, default=5_000_000)
    p.add_argument("--models", default="sage,gcn")
    p.add_argument("--threads", default="1,2", help="torch threads in the child, comma-separated")
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--runs", type=int, default=3, help="median of")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    models, threads = args.models.split(","), [int(t) for t in args.threads.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gnn_codegen_threads_") as folder:
        work = Path(folder)
        run.prepare_work(models, work, args.nodes, args.edges)
        for condition in args.conditions.split(","):
            for model in models:
                for count in threads:
                    for method in METHODS:
                        spec = _spec(args, work, model, method, count, work / f"out_{model}_{method}.pt")
                        other = CONDITIONS[condition]
                        neighbour = subprocess.Popen(other) if other else None
                        try:
                            time.sleep(1 if neighbour else 0)
                            result = run.run_child(spec, timeout=3600)
                        finally:
                            if neighbour:
                                neighbour.kill()
                                neighbour.wait()
                        result.update(condition=condition, model=model, method=method, threads=count)
                        if method != "full" and "error" not in result:
                            result["max_error"] = run.max_error(work / f"out_{model}_{method}.pt",
                                                                work / f"out_{model}_full.pt")
                        rows.append(result)
                        print(json.dumps({k: result.get(k) for k in
                                          ("condition", "model", "method", "threads", "median_s", "error")}),
                              flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/threads.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "nodes": args.nodes, "edges": args.edges, "batch_size": args.batch_size, "runs": args.runs,
            "date": time.strftime("%Y-%m-%d")}
    (args.out / "threads.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (args.out / "threads.md").write_text(_table(meta, rows))
    print((args.out / "threads.md").read_text())
    return 0


def _table(meta: dict, rows: list[dict]) -> str:
    full = {(r["condition"], r["model"], r["threads"]): r.get("median_s") for r in rows if r["method"] == "full"}
    lines = [f"`{meta['command']}`: {meta['nodes']} nodes, {meta['edges']} edges (+ self-loops), batch "
             f"{meta['batch_size']}, median of {meta['runs']} runs, {meta['date']}.", "",
             "| condition | model | torch threads | forward s | generated s (vs forward) "
             "| fixed threads s (vs forward) | max error |", "|---|---|---:|---:|---:|---:|---:|"]
    keys = dict.fromkeys((r["condition"], r["model"], r["threads"]) for r in rows)
    for key in keys:
        cells = []
        for method in ("generated", "fixed"):
            r = next((r for r in rows if (r["condition"], r["model"], r["threads"]) == key
                      and r["method"] == method), {})
            seconds, base = r.get("median_s"), full.get(key)
            cells.append(r.get("error", "") if seconds is None else
                         f"{seconds:.2f} ({seconds / base:.2f}x)" if base else f"{seconds:.2f}")
        errors = [r.get("max_error") for r in rows if (r["condition"], r["model"], r["threads"]) == key
                  and r.get("max_error") is not None]
        worst = f"{max(errors):.1e}" if errors else ""
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {run.fmt(full.get(key), '.2f')} | "
                     + " | ".join(cells) + f" | {worst} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())

"""Two heterogeneous models that run through the homogeneous pipeline (issue 19): HAN over an
ACM-shaped graph's metapaths (generated_examples/han, dgl.metapath_reachable_graph in forward)
and HGT with DGL's HGTConv on an ogbn-mag-shaped graph made homogeneous by dgl.to_homogeneous
(generated_examples/hgt). The generated `inference` against the model's full-graph forward:
times and peak RssAnon rises, as ratios in the same run, each method in its own process, and
the largest difference of their results.

    python benchmarks/metapaths.py --papers 100000 --json benchmarks/results/metapaths.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from beyond_memory import peak_anon_during  # noqa: E402
from hetero import mag_like  # noqa: E402
from run import load_module  # noqa: E402

HIDDEN, FEATURES, CLASSES = 64, 128, 8
# ACM (DGL's han example): 4,019 papers, 7,167 authors, 60 subjects, 13,407 paper-author links,
# each paper one subject; the subjects grow with the papers here so that paper-subject-paper
# stays a graph of about 100 in-edges per paper
AUTHORS_PER_PAPER, LINKS_PER_PAPER, PAPERS_PER_SUBJECT = 1.78, 3.34, 100


def acm_like(papers: int, seed: int = 0):
    import dgl
    import torch

    gen = torch.Generator().manual_seed(seed)
    authors, subjects = int(papers * AUTHORS_PER_PAPER), max(1, papers // PAPERS_PER_SUBJECT)
    links = int(papers * LINKS_PER_PAPER)
    pa = (torch.randint(0, papers, (links,), generator=gen), torch.randint(0, authors, (links,), generator=gen))
    ps = (torch.arange(papers), torch.randint(0, subjects, (papers,), generator=gen))
    g = dgl.heterograph({
        ("paper", "pa", "author"): pa, ("author", "ap", "paper"): (pa[1], pa[0]),
        ("paper", "pf", "field"): ps, ("field", "fp", "paper"): (ps[1], ps[0]),
    }, num_nodes_dict={"paper": papers, "author": authors, "field": subjects})
    return g, torch.randn(papers, FEATURES, generator=gen)


def inputs(name: str, papers: int):
    """The model, its graph and forward's features."""
    import dgl
    import torch

    module = load_module(HERE.parent / "generated_examples" / name / "model.py", f"bench_{name}")
    torch.manual_seed(0)
    if name == "han":
        g, h = acm_like(papers)
        model = module.HAN([["pa", "ap"], ["pf", "fp"]], FEATURES, HIDDEN // 8, CLASSES, [8, 8])
        return model, g, h
    hg, x, counts = mag_like(papers)
    gen = torch.Generator().manual_seed(1)
    for ntype in hg.ntypes:  # every type gets features here: HGT adapts each with its own weights
        hg.nodes[ntype].data["feat"] = x["paper"] if ntype == "paper" else torch.randn(
            counts[ntype], FEATURES, generator=gen)
    g = dgl.to_homogeneous(hg, ndata=["feat"])
    model = module.HGT(FEATURES, HIDDEN, CLASSES, len(hg.ntypes), len(hg.canonical_etypes))
    return model, g, g.ndata.pop("feat")


def generated_model(name: str, model, work: Path):
    from gnn_codegen.pipeline import GenerateOptions, generate

    case = json.loads((HERE.parent / "generated_examples" / name / "case.json").read_text())
    source = generate(str(HERE.parent / "generated_examples" / name / case["target"]),
                      GenerateOptions(init=json.dumps(case["init"]), verify=False))
    path = work / f"{name}_generated.py"
    path.write_text(source)
    generated = load_module(path, f"bench_{name}_generated")
    twin = getattr(generated, type(model).__name__).__new__(getattr(generated, type(model).__name__))
    twin.__dict__.update(model.__dict__)  # the same modules and weights, the generated class
    return twin


def one(name: str, method: str, args, folder: Path) -> dict:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    model, g, h = inputs(name, args.papers)
    model.eval()
    if method == "generated":
        model = generated_model(name, model, folder)
        run = lambda: model.inference(g, h, args.batch_size, "cpu")  # noqa: E731
    else:
        def run():
            with torch.no_grad():
                return model(g, h)
    seconds, peak, out = peak_anon_during(run)
    torch.save(out, folder / f"{name}_{method}.pt")
    row = {"model": name, "method": method, "seconds": seconds, "peak_anon_bytes": peak,
           "nodes": int(h.shape[0]), "edges": int(g.num_edges())}
    if name == "han":  # the graphs the layers run on
        import dgl

        row["metapath_edges"] = [int(dgl.metapath_reachable_graph(g, m).num_edges()) for m in (["pa", "ap"], ["pf", "fp"])]
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--models", default="han,hgt")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # MODEL:METHOD:FOLDER, run by main itself
    args = parser.parse_args(argv)
    if args.one:
        name, method, folder = args.one.split(":")
        print(json.dumps(one(name, method, args, Path(folder))))
        return 0
    import torch

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models.split(","):
            for method in ("full", "generated"):
                command = [sys.executable, __file__, "--papers", str(args.papers), "--batch-size",
                           str(args.batch_size), "--threads", str(args.threads), "--one", f"{name}:{method}:{folder}"]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
                row = rows[-1]
                print(f"{name:4s} {method:10s} {row['seconds']:8.2f} s  peak +{row['peak_anon_bytes'] / 2**20:8.0f} MiB",
                      flush=True)
            full = torch.load(Path(folder) / f"{name}_full.pt")
            for row in rows[-2:]:
                out = torch.load(Path(folder) / f"{name}_{row['method']}.pt")
                row["max_abs_error"] = float((out - full).abs().max())
                row["time_vs_full"] = row["seconds"] / rows[-2]["seconds"]
                row["peak_vs_full"] = row["peak_anon_bytes"] / max(1, rows[-2]["peak_anon_bytes"])
            row = rows[-1]
            print(f"{name:4s} generated: {row['time_vs_full']:.2f}x forward's time, {row['peak_vs_full']:.2f}x its "
                  f"peak, max |error| {row['max_abs_error']:.3g}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"papers": args.papers, "batch_size": args.batch_size,
                                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DGLBACKEND", "pytorch")
    raise SystemExit(main())

"""Heterogeneous inference on a synthetic graph shaped like ogbn-mag (issue 19): the
generated `inference` against the model's full-graph forward and against the layer-wise loop
DGL's rgcn-hetero example writes by hand (a DataLoader of MultiLayerFullNeighborSampler(1)
over every type's nodes, the layer called on each block), for RGCN, RGAT and DGL's example
forms (hetero_models.py): rgcn-hetero's EntityClassify (entity, from learnt embeddings alone; its
result compared on papers), the rgat example's HeteroGAT on blocks (heterogat), and the rgcn
example's RelGraphConv on the homogeneous graph of edge types (relgraph: dgl.to_homogeneous of the
same heterograph, a norm per edge, compared on every node). Times and peak RssAnon rises, as ratios against forward in the same run.

    python benchmarks/hetero.py --papers 200000 --json benchmarks/results/hetero.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from beyond_memory import peak_anon_during  # noqa: E402
from run import load_module  # noqa: E402

# ogbn-mag's relations, per paper (its counts: 736k papers, 1.13M authors, 8.7k institutions,
# 60k fields; 7.1M writes, 5.4M cites, 7.5M has_topic, 1.0M affiliated_with) and their reverses
RELATIONS = [
    ("author", "writes", "paper"), ("paper", "cites", "paper"),
    ("paper", "has_topic", "field"), ("author", "affiliated_with", "institution"),
]
NODES_PER_PAPER = {"paper": 1.0, "author": 1.53, "institution": 0.0118, "field": 0.081}
EDGES_PER_PAPER = {"writes": 9.6, "cites": 7.3, "has_topic": 10.2, "affiliated_with": 1.4}
# --graph sparse: the graph issue 40 measured DGL's rgcn-hetero example on (400k papers, 250k
# authors, 20k fields, 3.2M edges with the reverses): 8 edges per paper, not ogbn-mag's 57
SHAPES = {
    "mag": (RELATIONS, NODES_PER_PAPER, EDGES_PER_PAPER),
    "sparse": (RELATIONS[:3], {"paper": 1.0, "author": 0.625, "field": 0.05},
               {"writes": 1.5, "cites": 1.0, "has_topic": 1.5}),
}


def mag_like(papers: int, seed: int = 0, shape: str = "mag"):
    import dgl
    import torch

    relations, nodes_per_paper, edges_per_paper = SHAPES[shape]
    gen = torch.Generator().manual_seed(seed)
    counts = {t: max(1, int(papers * share)) for t, share in nodes_per_paper.items()}
    data = {}
    for src_type, rel, dst_type in relations:
        n = int(papers * edges_per_paper[rel])
        src = torch.randint(0, counts[src_type], (n,), generator=gen)
        dst = torch.randint(0, counts[dst_type], (n,), generator=gen)
        data[(src_type, rel, dst_type)] = (src, dst)
        data[(dst_type, f"rev_{rel}", src_type)] = (dst, src)
    g = dgl.heterograph(data, num_nodes_dict=counts)
    g.create_formats_()
    x = {"paper": torch.randn(counts["paper"], 128, generator=gen)}
    return g, x, counts


def handwritten(model, name, g, x, batch_size):
    """DGL's rgcn-hetero `inference`, for these models: per layer, a DataLoader of one-hop
    blocks over every type's nodes, the layer on each block, the rows written per type."""
    import dgl
    import torch
    import torch.nn.functional as F

    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    if name == "relgraph":
        return handwritten_relgraph(model, g, batch_size)
    h = dict(x)
    h.update({t: e for t, e in model.embeds.items()})
    layers = [model.conv1, model.conv2] if name == "rgcn" else list(model.layers)
    # the entity classifier's layers apply their own activations and return every type
    last_types = g.ntypes if name == "entity" else ["paper"]
    with torch.no_grad():
        for i, layer in enumerate(layers):
            last = i == len(layers) - 1
            targets = {t: torch.arange(g.num_nodes(t)) for t in (last_types if last else g.ntypes)}
            loader = dgl.dataloading.DataLoader(g, targets, sampler, batch_size=batch_size, shuffle=False)
            y = {}
            for input_nodes, output_nodes, blocks in loader:
                block = blocks[0]
                out = layer(block, {t: h[t][input_nodes[t]] for t in input_nodes if len(input_nodes[t])})
                for t, rows in out.items():
                    if t not in output_nodes or not len(output_nodes[t]):
                        continue
                    if name == "rgcn":
                        rows = rows if last else F.relu(rows)
                    elif name == "rgat":
                        rows = F.elu(rows.flatten(1))
                    elif name == "heterogat":
                        rows = rows.view(rows.shape[0], -1)
                        rows = rows if last else F.relu(rows)
                    if t not in y:
                        y[t] = torch.empty(g.num_nodes(t), *rows.shape[1:])
                    y[t][output_nodes[t]] = rows
            h = y
        if name == "entity":
            return h
        return h["paper"] if name == "rgcn" else model.linear(h["paper"])


def handwritten_relgraph(model, g, batch_size):
    """The rgcn example's model, layer by layer as DGL's examples write it on a homogeneous
    graph: one-hop blocks over all nodes, each edge's type and norm looked up by its ID."""
    import dgl
    import torch
    import torch.nn.functional as F

    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    loader = dgl.dataloading.DataLoader(g, torch.arange(g.num_nodes()), sampler, batch_size=batch_size,
                                        shuffle=False)
    etype, norm = g.edata[dgl.ETYPE], g.edata["norm"]
    h = model.emb.weight
    with torch.no_grad():
        for i, conv in enumerate([model.conv1, model.conv2]):
            y = None
            for input_nodes, output_nodes, blocks in loader:
                block = blocks[0]
                eids = block.edata[dgl.EID]
                rows = conv(block, h[input_nodes], etype[eids], norm[eids])
                if y is None:
                    y = torch.empty(g.num_nodes(), rows.shape[1])
                y[output_nodes] = F.relu(rows) if i == 0 else rows
            h = y
    return h


def homogeneous_of(g):
    """What the rgcn example does to its heterograph: a norm per edge (1 / the destination's
    in-degree in the edge's relation), then one graph with dgl.ETYPE per edge."""
    import dgl

    for etype in g.canonical_etypes:
        g.edges[etype].data["norm"] = dgl.norm_by_dst(g, etype).unsqueeze(1)
    homogeneous = dgl.to_homogeneous(g, edata=["norm"])
    homogeneous.create_formats_()
    return homogeneous


# each model's constructor argument for its output width (its default: ogbn-mag's 349 classes)
OUT_WIDTH = {"rgcn": "out_size", "rgat": "out_size", "heterogat": "out_size", "entity": "out_dim",
             "relgraph": "out_dim"}


def generated(name, counts, work: Path, shape: str = "mag", out_dim: int | None = None):
    """The model's generated module, and its constructor's arguments; out_dim: its output
    width where not the model's default."""
    from gnn_codegen import GenerateOptions, generate

    relations = SHAPES[shape][0]
    out = {} if out_dim is None else {OUT_WIDTH[name]: out_dim}
    if name == "relgraph":
        init = {"num_nodes": sum(counts.values()), "num_rels": 2 * len(relations), **out}
        source = generate(f"{HERE / 'hetero_models.py'}:RELGRAPH", GenerateOptions(init=json.dumps(init)))
        (work / f"generated_{name}.py").write_text(source)
        module = load_module(work / f"generated_{name}.py", f"generated_hetero_{name}")
        return module.RELGRAPH, init
    metagraph = ",".join(f"{s}:{r}:{d},{d}:rev_{r}:{s}" for s, r, d in relations)
    entity = name == "entity"  # every type from an embedding: no features
    init = {"num_nodes": {t: n for t, n in counts.items() if entity or t != "paper"},
            "rel_names": [r for _, r, _ in relations] + [f"rev_{r}" for _, r, _ in relations], **out}
    source = generate(f"{HERE / 'hetero_models.py'}:{name.upper()}",
                      GenerateOptions(init=json.dumps(init), metagraph=metagraph,
                                      feat_dims=None if entity else "paper=128"))
    (work / f"generated_{name}.py").write_text(source)
    module = load_module(work / f"generated_{name}.py", f"generated_hetero_{name}")
    return getattr(module, name.upper()), init


def one(name: str, method: str, args, folder: Path) -> dict:
    """One method on a fresh graph in this process (main runs each in its own, so that no
    method's peak hides in memory an earlier one freed): its time, peak rise, result saved."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    g, x, counts = mag_like(args.papers, shape=args.graph)
    cls, init = generated(name, counts, folder, args.graph, args.out_dim)
    torch.manual_seed(0)
    model = cls(**init).eval()
    with torch.no_grad():  # weights off their initial values, biases off zero
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    if name == "relgraph":
        g = homogeneous_of(g)
    if name in ("entity", "relgraph"):  # forward(g) and inference(g, ...): the inputs are embeddings
        inputs: tuple = ()
    else:
        inputs = (x,)
    runs = {
        "full": lambda: model([g] * 3 if name == "heterogat" else g, *inputs),
        "handwritten": lambda: handwritten(model, name, g, x, args.batch_size),
        "generated": lambda: model.inference(g, *inputs, batch_size=args.batch_size, device="cpu"),
        # every layer's results in memory-mapped files (page cache, not anonymous memory)
        "generated_storage": lambda: model.inference(g, *inputs, batch_size=args.batch_size, device="cpu",
                                                     storage=folder / f"storage_{name}"),
        # batches sized per layer and type to the default max_memory (1 GiB)
        "generated_auto": lambda: model.inference(g, *inputs, batch_size="auto", device="cpu"),
    }
    cpu = {}

    def measured():  # CPU seconds too: on a shared machine, wall time is mostly others' load
        thread, process = time.thread_time(), time.process_time()
        try:
            return runs[method]()
        finally:
            cpu["thread"], cpu["process"] = time.thread_time() - thread, time.process_time() - process

    with torch.no_grad():
        seconds, peak, out = peak_anon_during(measured)
    if isinstance(out, dict):  # the entity classifier's every type: papers compared
        out = out["paper"]
    torch.save(out, folder / f"{name}_{method}.pt")
    # main_thread_cpu_seconds: the calling thread's alone (not DGL's OpenMP workers' nor the peak
    # sampler's); process_cpu_seconds: every thread's, the sampler's included
    return {"model": name, "method": method, "seconds": seconds, "peak_anon_bytes": peak,
            "main_thread_cpu_seconds": cpu["thread"], "process_cpu_seconds": cpu["process"],
            "nodes": g.num_nodes(), "edges": g.num_edges(), "threads": torch.get_num_threads()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=200_000)
    parser.add_argument("--models", default="rgcn,rgat,entity,heterogat,relgraph")
    parser.add_argument("--methods", default="full,handwritten,generated",
                        help="of full, handwritten, generated, generated_storage (storage=), generated_auto "
                        "(batch_size='auto'); without full, errors are not measured")
    parser.add_argument("--graph", choices=sorted(SHAPES), default="mag",
                        help="mag: ogbn-mag's shape; sparse: issue 40's graph, 8 edges per paper")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--neighbour", choices=["quiet", "busy", "torch"], default="quiet",
                        help="what else runs beside each method's process (threads.py's conditions): nothing, a "
                        "Python spin loop on a core, a 2-thread torch job")
    parser.add_argument("--out-dim", type=int, help="every model's output width (default: each model's, "
                        "349: ogbn-mag's classes; issue 40's forward was 2.4 s, for a narrower one)")
    parser.add_argument("--json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # MODEL:METHOD:FOLDER, run by main itself
    args = parser.parse_args(argv)
    if args.one:
        name, method, folder = args.one.split(":", 2)
        print(json.dumps(one(name, method, args, Path(folder))))
        return 0
    import subprocess

    import torch

    rows = []
    methods = args.methods.split(",")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models.split(","):
            for method in methods:
                command = [sys.executable, __file__, "--papers", str(args.papers), "--graph", args.graph, "--batch-size",
                           str(args.batch_size), "--threads", str(args.threads), "--one", f"{name}:{method}:{folder}"]
                command += [] if args.out_dim is None else ["--out-dim", str(args.out_dim)]
                from threads import CONDITIONS

                other = CONDITIONS[args.neighbour]
                neighbour = subprocess.Popen(other) if other else None
                try:
                    done = subprocess.run(command, capture_output=True, text=True, check=True)
                finally:
                    if neighbour is not None:
                        neighbour.kill()
                        neighbour.wait()
                row = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(f"{name:5s} {method:12s} {row['seconds']:8.2f} s ({row['main_thread_cpu_seconds']:.2f} s of CPU)  "
                      f"peak +{row['peak_anon_bytes'] / 2**20:8.0f} MiB",
                      flush=True)
            ours = rows[-len(methods):]
            by_method = {row["method"]: row for row in ours}
            hand = by_method.get("handwritten")
            for row in ours:
                if row["method"].startswith("generated") and hand is not None:
                    row["time_vs_handwritten"] = row["seconds"] / hand["seconds"]
                    row["peak_vs_handwritten"] = row["peak_anon_bytes"] / max(1, hand["peak_anon_bytes"])
                    print(f"{name:5s} {row['method']:12s} {row['time_vs_handwritten']:.2f}x the hand-written loop's "
                          f"time, {row['peak_vs_handwritten']:.2f}x its peak", flush=True)
            if "full" not in by_method:
                if "generated" in by_method:  # the other ways of running it against it
                    base = torch.load(Path(folder) / f"{name}_generated.pt")
                    for row in ours:
                        out = torch.load(Path(folder) / f"{name}_{row['method']}.pt")
                        row["max_abs_difference_vs_generated"] = float((out - base).abs().max())
                continue
            full = torch.load(Path(folder) / f"{name}_full.pt")
            for row in ours:
                out = torch.load(Path(folder) / f"{name}_{row['method']}.pt")
                row["max_abs_error"] = float((out - full).abs().max())
                row["time_vs_full"] = row["seconds"] / by_method["full"]["seconds"]
                row["peak_vs_full"] = row["peak_anon_bytes"] / max(1, by_method["full"]["peak_anon_bytes"])
                print(f"{name:5s} {row['method']:12s} {row['time_vs_full']:.2f}x forward's time, "
                      f"{row['peak_vs_full']:.2f}x its peak, max |error| {row['max_abs_error']:.3g}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"papers": args.papers, "graph": args.graph, "batch_size": args.batch_size,
                                               "out_dim": args.out_dim,
                                               "threads": args.threads, "neighbour": args.neighbour,
                                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DGLBACKEND", "pytorch")
    import warnings

    warnings.filterwarnings("ignore", message="Dataloader CPU affinity")
    raise SystemExit(main())

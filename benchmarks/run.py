"""Benchmark: full-neighbour inference of the models in benchmarks/models.py, four ways.

    python benchmarks/run.py                                  # 1M nodes, 10M edges, everything
    python benchmarks/run.py --nodes 100000 --edges 1000000 --runs 1   # a quick look

Methods (each graph x model x method runs in its own process, so that its peak RSS is its own):

- full:        the model's own forward on the whole graph (`model([g] * 3, x)` / `model(g, x)`).
- handwritten: the layer-wise loop DGL's examples write by hand (examples/pytorch/graphsage
               `inference`): MultiLayerFullNeighborSampler(1) + DataLoader over all nodes, one
               loop per layer. Written below, per model, as a user would.
- nodewise:    node-wise mini-batch inference: MultiLayerFullNeighborSampler(3) + DataLoader,
               the model's forward on each batch's 3-hop blocks. Slow, so it runs on its own
               smaller graphs (--nodewise-nodes / --nodewise-edges), where every other method
               runs too, for the ratios.
- generated:   the `inference` method gnn-codegen writes for the model.
- baseline:    (only with --baseline-modules DIR) the `inference` of DIR/generated_<model>.py,
               written by another version of gnn-codegen: before/after ratios from one run.

handwritten and generated run once per --batch-size (several may be given: the trade-off between
time and memory is the batch size). Each child process loads the graph and features, resets its
peak-RSS counter, runs the method --runs times and reports the median time, its peak RSS and the
peak over what graph, features and model took before it started. The parent compares every
output with the full-graph forward's.
The results go to OUT/results.json, OUT/results.md and OUT/chart.png (with matplotlib: pip
install -e '.[bench]'); graphs, weights, generated modules and outputs to OUT/work/.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS_FILE = HERE / "models.py"
IN_SIZE, HID_SIZE, OUT_SIZE, NUM_LAYERS = 128, 128, 47, 3
MODELS = {  # name -> (class in models.py, constructor arguments, forward takes blocks)
    "sage": ("SAGE", {"in_size": IN_SIZE, "hid_size": HID_SIZE, "out_size": OUT_SIZE}, True),
    "gcn": ("GCN", {"in_size": IN_SIZE, "hid_size": HID_SIZE, "out_size": OUT_SIZE}, True),
    "gat": ("GAT", {"in_size": IN_SIZE, "hid_size": HID_SIZE, "out_size": OUT_SIZE, "heads": 4}, True),
    "jknet": ("JKNet", {"in_size": IN_SIZE, "hid_size": HID_SIZE, "out_size": OUT_SIZE}, False),
    "appnp": ("APPNP", {"in_size": IN_SIZE, "hid_size": HID_SIZE, "out_size": OUT_SIZE, "k": 10}, False),
    "sgc": ("SGC", {"in_size": IN_SIZE, "out_size": OUT_SIZE, "k": 2}, False),
}
# models whose hops run inside one module call: the hand-written loop propagates them a hop at a time
PROPAGATION_MODELS = ("appnp", "sgc")
METHODS = ("full", "handwritten", "nodewise", "generated")
ZIPF_EXPONENT = 0.8  # power-law graphs: P(destination has in-degree rank r) ~ r ** -0.8
LOCAL_FRACTION, LOCAL_WINDOW = 0.9, 0.005  # local graphs: 90% of sources within 0.5% of N of the destination


# --- measuring memory -----------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mib() -> float:
    kib = _status_kib("VmRSS")
    return kib / 1024 if kib is not None else float("nan")


def reset_peak_rss() -> bool:
    """Make VmHWM restart from the current RSS (Linux >= 4.0), so that loading the graph does
    not count in the method's peak. False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float:
    kib = _status_kib("VmHWM")
    if kib is None:  # not Linux: ru_maxrss (KiB on Linux, bytes on macOS), includes loading
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kib = kib / 1024 if sys.platform == "darwin" else kib
    return kib / 1024


# --- inputs ---------------------------------------------------------------------------------


def make_graph(kind: str, num_nodes: int, num_edges: int, seed: int, in_size: int = IN_SIZE):
    """Random edges (num_edges of them) plus a self-loop on every node. uniform: both ends
    uniform. powerlaw: sources uniform, destinations Zipf-distributed over a random permutation
    of the nodes, so in-degrees are heavily skewed and the hubs are spread over the node IDs.
    local (not in the default run): destinations uniform, most sources close to their
    destination's ID, like a real graph whose nodes are numbered by community."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    if kind == "uniform":
        dst = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    elif kind == "local":
        dst = torch.randint(0, num_nodes, (num_edges,), generator=gen)
        window = max(1, int(num_nodes * LOCAL_WINDOW))
        near = (dst + torch.randint(-window, window + 1, (num_edges,), generator=gen)) % num_nodes
        src = torch.where(torch.rand(num_edges, generator=gen) < LOCAL_FRACTION, near, src)
    elif kind == "powerlaw":
        weights = torch.arange(1, num_nodes + 1, dtype=torch.float64) ** -ZIPF_EXPONENT
        cdf = torch.cumsum(weights, 0)
        cdf /= cdf[-1].clone()
        rank = torch.searchsorted(cdf, torch.rand(num_edges, generator=gen, dtype=torch.float64))
        rank.clamp_(max=num_nodes - 1)
        dst = torch.randperm(num_nodes, generator=gen)[rank]
        del rank, cdf, weights
    else:
        raise SystemExit(f"unknown graph kind {kind!r}: use uniform, powerlaw or local")
    loops = torch.arange(num_nodes)
    src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    features = torch.randn(num_nodes, in_size, generator=gen) if in_size else None  # 0: none
    return src, dst, features


def load_inputs(graph_file: Path):
    import dgl
    import torch

    data = torch.load(graph_file)
    g = dgl.graph((data["src"], data["dst"]), num_nodes=data["num_nodes"])
    g.create_formats_()  # every method then starts from the same graph, with all its formats
    features = data["features"]
    del data
    return g, features


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --- the methods ------------------------------------------------------------------------------


def run_full(model, name, g, x, batch_size):
    import torch

    blocks_style = MODELS[name][2]
    with torch.no_grad():
        return model([g] * NUM_LAYERS, x) if blocks_style else model(g, x)


def run_handwritten(model, name, g, x, batch_size):
    """DGL's documented layer-wise inference (examples/pytorch/graphsage/node_classification.py),
    written for each model as its user would: every layer over all nodes, one-hop blocks."""
    import dgl
    import torch
    import torch.nn.functional as F

    if name in PROPAGATION_MODELS:
        return run_handwritten_propagation(model, name, g, x, batch_size)
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    dataloader = dgl.dataloading.DataLoader(
        g, torch.arange(g.num_nodes()), sampler, batch_size=batch_size, shuffle=False, drop_last=False,
        num_workers=0,
    )
    model.eval()
    with torch.no_grad():
        feat = x
        outputs = []
        for l, layer in enumerate(model.layers):
            last = l == len(model.layers) - 1
            width = OUT_SIZE if last and name != "jknet" else HID_SIZE
            y = torch.empty(g.num_nodes(), width)
            for input_nodes, output_nodes, blocks in dataloader:
                h = layer(blocks[0], feat[input_nodes])
                if name == "gat":
                    h = h.mean(1) if last else F.elu(h.flatten(1))
                elif name == "jknet" or not last:
                    h = F.relu(h)
                y[output_nodes] = h
            outputs.append(y)
            feat = y
        if name != "jknet":
            return feat
        out = torch.empty(g.num_nodes(), OUT_SIZE)
        for start in range(0, g.num_nodes(), batch_size):
            rows = slice(start, start + batch_size)
            out[rows] = model.classify(torch.cat([h[rows] for h in outputs], dim=1))
        return out


def run_handwritten_propagation(model, name, g, x, batch_size):
    """APPNP and SGC the way a user writes their hops layer-wise by hand: the degree norms of the
    whole graph, then per hop a loop over one-hop blocks of all nodes (the DataLoader of DGL's
    documented inference), `update_all` on each block."""
    import dgl
    import dgl.function as fn
    import torch
    import torch.nn.functional as F

    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    dataloader = dgl.dataloading.DataLoader(
        g, torch.arange(g.num_nodes()), sampler, batch_size=batch_size, shuffle=False, drop_last=False,
        num_workers=0,
    )
    model.eval()
    with torch.no_grad():
        if name == "appnp":
            h0 = model.layers[1](F.relu(model.layers[0](x)))
            k, alpha = model.propagate._k, model.propagate._alpha
            src_norm = g.out_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
        else:
            h0, k, alpha = x, model.conv._k, 0.0
            src_norm = g.in_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
        dst_norm = g.in_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
        feat = h0
        for _ in range(k):
            y = torch.empty_like(feat)
            for input_nodes, output_nodes, blocks in dataloader:
                block = blocks[0]
                block.srcdata["h"] = feat[input_nodes] * src_norm[input_nodes]
                block.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                h = block.dstdata["h"] * dst_norm[output_nodes]
                y[output_nodes] = (1 - alpha) * h + alpha * h0[output_nodes] if alpha else h
            feat = y
        return feat if name == "appnp" else model.conv.fc(feat)


def run_nodewise(model, name, g, x, batch_size):
    """Node-wise mini-batch inference: each batch of output nodes with its full 3-hop
    neighbourhood, through the model's own forward on the blocks."""
    import dgl
    import torch

    if not MODELS[name][2]:
        raise NotImplementedError(f"{name}'s forward takes the whole graph, not blocks")
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(NUM_LAYERS)
    dataloader = dgl.dataloading.DataLoader(
        g, torch.arange(g.num_nodes()), sampler, batch_size=batch_size, shuffle=False, drop_last=False,
        num_workers=0,
    )
    y = torch.empty(g.num_nodes(), OUT_SIZE)
    with torch.no_grad():
        for input_nodes, output_nodes, blocks in dataloader:
            y[output_nodes] = model(blocks, x[input_nodes])
    return y


def run_generated(model, name, g, x, batch_size):
    return model.inference(g, x, batch_size=batch_size, device="cpu")


RUNNERS = {"full": run_full, "handwritten": run_handwritten, "nodewise": run_nodewise, "generated": run_generated,
           "baseline": run_generated}


def child(spec: dict) -> dict:
    """One method on one graph and model, in this process."""
    import torch

    if spec["threads"]:
        torch.set_num_threads(spec["threads"])
    work = Path(spec["work"])
    name, method = spec["model"], spec["method"]
    class_name, init, _ = MODELS[name]
    if method == "generated":
        module = load_module(work / f"generated_{name}.py", f"generated_{name}")
    elif method == "baseline":
        module = load_module(Path(spec["baseline"]) / f"generated_{name}.py", f"baseline_{name}")
    else:
        module = load_module(MODELS_FILE, "benchmark_models")
    if spec.get("fixed_threads"):  # benchmarks/threads.py: the user's thread count for every batch
        for runtime in vars(module).values():
            if isinstance(runtime, type) and hasattr(runtime, "_paced"):
                runtime._paced = lambda self, batches, work: batches
    model = getattr(module, class_name)(**init)
    model.load_state_dict(torch.load(work / f"weights_{name}.pt"))
    model.eval()
    g, x = load_inputs(work / f"graph_{spec['graph']}.pt")
    gc.collect()
    peak_reset = reset_peak_rss()
    base = rss_mib()
    times, loads, out = [], [], None
    for _ in range(spec["runs"]):
        out = None
        gc.collect()
        start = time.perf_counter()
        out = RUNNERS[method](model, name, g, x, spec["batch_size"])
        times.append(time.perf_counter() - start)
        loads.append(load_average())
    peak = peak_rss_mib()
    torch.save(out, spec["output"])
    return {
        "times_s": times, "median_s": statistics.median(times), "base_rss_mib": base,
        "peak_rss_mib": peak, "extra_rss_mib": peak - base if peak_reset else None,
        "torch_threads": torch.get_num_threads(), "load_per_run": loads,
    }


# --- the parent -------------------------------------------------------------------------------


def generate_modules(models: list[str], work: Path) -> None:
    sys.path.insert(0, str(REPO))
    from gnn_codegen import GenerateOptions, generate

    for name in models:
        class_name, init, _ = MODELS[name]
        source = generate(
            f"{MODELS_FILE}:{class_name}",
            GenerateOptions(init=json.dumps(init), output=f"generated_{name}.py"),
        )
        (work / f"generated_{name}.py").write_text(source)


def save_graph(kind: str, nodes: int, edges: int, seed: int, path: Path) -> None:
    """make_graph's graph as the children load it (graph_<label>.pt)."""
    import torch

    src, dst, features = make_graph(kind, nodes, edges, seed)
    torch.save({"src": src, "dst": dst, "num_nodes": nodes, "features": features}, path)


def prepare_work(models: list[str], work: Path, nodes: int, edges: int, seed: int = 0) -> None:
    """A uniform graph (graph_uniform.pt), the models' generated modules and their weights in
    work: what alternating.py's and threads.py's children read."""
    save_graph("uniform", nodes, edges, seed, work / "graph_uniform.pt")
    generate_modules(models, work)
    save_weights(models, work, seed)


def save_weights(models: list[str], work: Path, seed: int) -> None:
    import torch

    module = load_module(MODELS_FILE, "benchmark_models")
    for name in models:
        class_name, init, _ = MODELS[name]
        torch.manual_seed(seed)
        model = getattr(module, class_name)(**init)
        with torch.no_grad():  # move biases off zero so that they count
            for p in model.parameters():
                p.add_(0.05 * torch.randn_like(p))
        torch.save(model.state_dict(), work / f"weights_{name}.pt")


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("gnn-codegen")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gnn_codegen"]


def time_cli(models: list[str], work: Path, runs: int) -> dict[str, dict]:
    """`gnn-codegen benchmarks/models.py:NAME -o OUT --init ...`, end to end, as a user runs it."""
    results = {}
    for name in models:
        class_name, init, _ = MODELS[name]
        cmd = [*cli_command(), f"{MODELS_FILE}:{class_name}", "-o", str(work / f"cli_{name}.py"),
               "--init", json.dumps(init)]
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"gnn-codegen failed for {name}:\n{proc.stderr}")
        results[name] = {"times_s": times, "median_s": statistics.median(times)}
        print(f"cli {name}: {results[name]['median_s']:.2f} s", flush=True)
    return results


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run_child(spec: dict, timeout: float | None) -> dict:
    env = dict(os.environ, DGLBACKEND="pytorch")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {proc.returncode}: {tail[0]}"}
    return json.loads(lines[-1][len("RESULT "):])


def max_error(output: Path, reference: Path) -> float | None:
    import torch

    if not output.exists() or not reference.exists():
        return None
    a, b = torch.load(output), torch.load(reference)
    return float((a - b).abs().max()) if a.shape == b.shape else float("inf")


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def summarise(rows: list[dict]) -> None:
    """Ratios against the same graph and model's full-graph row and its hand-written row with the
    same batch size."""
    by_key = {(r["graph"], r["model"], r["method"], r["batch_size"]): r for r in rows}
    for r in rows:
        full = by_key.get((r["graph"], r["model"], "full", None), {})
        hand = by_key.get((r["graph"], r["model"], "handwritten", r["batch_size"]), {})
        r["vs_full"] = ratio(r.get("median_s"), full.get("median_s"))
        r["vs_handwritten"] = ratio(r.get("median_s"), hand.get("median_s"))
        r["peak_vs_handwritten"] = ratio(r.get("peak_rss_mib"), hand.get("peak_rss_mib"))
        r["extra_vs_full"] = ratio(r.get("extra_rss_mib"), full.get("extra_rss_mib"))


def fmt(value, spec: str, empty: str = "") -> str:
    return empty if value is None else format(value, spec)


def write_markdown(path: Path, meta: dict, rows: list[dict]) -> None:
    lines = [
        "# Benchmark results",
        "",
        f"`{meta['command']}`",
        "",
        f"{meta['machine']}; torch {meta['torch']}, dgl {meta['dgl']}, {meta['torch_threads']} torch "
        f"threads; median of {meta['runs']} runs; {meta['date']}"
        + "".join(f"; {k}={v}" for k, v in meta.get("env", {}).items()) + ".",
        "",
        "extra RSS: the method's peak RSS minus the RSS of graph (all formats), features and "
        "model before it ran. max error: largest |difference| from the full-graph forward.",
        "",
        "vs hand-written: against the hand-written loop with the same batch size.",
        "",
        "load: the 1-minute load average before the method's process started, and the highest "
        "after one of its runs. The process itself adds up to its torch threads; a load above "
        "0.5 before, or well above the threads after, means other work shared the CPUs and the "
        "row's times are suspect.",
        "",
        "| graph | model | method | batch | median s | vs full | vs hand-written | peak RSS MiB "
        "| extra RSS MiB | extra vs full | max error | load |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        head = f"| {r['graph']} | {r['model']} | {r['method']} | {fmt(r['batch_size'], 'd')} "
        if "error" in r:
            lines.append(head + f"| {r['error']} " + "| " * 7 + "|")
            continue
        during = [v for v in r.get("load_per_run", []) if v is not None]
        load = f"{fmt(r.get('load_before'), '.1f')} / {fmt(max(during) if during else None, '.1f')}"
        lines.append(
            head + f"| {r['median_s']:.2f} "
            f"| {fmt(r['vs_full'], '.2f')}{'x' * (r['vs_full'] is not None)} "
            f"| {fmt(r['vs_handwritten'], '.2f')}{'x' * (r['vs_handwritten'] is not None)} "
            f"| {r['peak_rss_mib']:.0f} | {fmt(r['extra_rss_mib'], '.0f')} "
            f"| {fmt(r['extra_vs_full'], '.2f')}{'x' * (r['extra_vs_full'] is not None)} "
            f"| {fmt(r.get('max_error'), '.1e', 'reference')} | {load} |"
        )
    if meta.get("cli"):
        lines += ["", "`gnn-codegen` command, end to end (median s):", "",
                  "| model | seconds |", "|---|---:|"]
        lines += [f"| {name} | {c['median_s']:.2f} |" for name, c in meta["cli"].items()]
    lines += ["", "## Targets for the generated method", "",
              "time <= 1.2x full-graph, time <= 0.4x hand-written, peak RSS <= hand-written, extra RSS "
              "<= 0.5x full-graph's (yes/no; blank where the row is missing)", "",
              "| graph | model | batch | time vs full | time vs hand-written | peak vs hand-written | extra vs full |",
              "|---|---|---:|---|---|---|---|"]
    for r in rows:
        if r["method"] != "generated" or "error" in r:
            continue
        checks = [(r["vs_full"], 1.2), (r["vs_handwritten"], 0.4), (r["peak_vs_handwritten"], 1.0),
                  (r["extra_vs_full"], 0.5)]
        cells = ["" if v is None else f"{v:.2f}x {'yes' if v <= limit else 'no'}" for v, limit in checks]
        lines.append(f"| {r['graph']} | {r['model']} | {r['batch_size']} | " + " | ".join(cells) + " |")
    if meta.get("cli"):
        slow = [name for name, c in meta["cli"].items() if c["median_s"] >= 3]
        lines += ["", f"CLI < 3 s per model: {'no (' + ', '.join(slow) + ')' if slow else 'yes'}"]
    lines.append("")
    path.write_text("\n".join(lines))


def write_chart(path: Path, rows: list[dict]) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no chart", flush=True)
        return False
    rows = [r for r in rows if "error" not in r]
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    batched = ("handwritten", "generated", "baseline")
    order = (*METHODS, "baseline")
    batch_sizes = {r["batch_size"] for r in rows if r["method"] in batched}

    def series(r: dict) -> tuple[int, int]:  # one bar per method, and per batch size if several
        several = r["method"] in batched and len(batch_sizes) > 1
        return order.index(r["method"]), r["batch_size"] if several else 0

    methods = sorted({series(r) for r in rows})
    fig, axes = plt.subplots(len(graphs), 2, figsize=(12, 3.2 * len(graphs)), squeeze=False)
    width = 0.8 / max(1, len(methods))
    for gi, graph in enumerate(graphs):
        for ci, (key, label) in enumerate((("median_s", "median time (s)"),
                                           ("peak_rss_mib", "peak RSS (MiB; dashed: before it ran)"))):
            ax = axes[gi][ci]
            for mi, method in enumerate(methods):
                values = [next((r[key] for r in rows if (r["graph"], r["model"], series(r)) == (graph, model, method)), 0)
                          for model in models]
                name = order[method[0]] + (f" {method[1]}" if method[1] else "")
                ax.bar([i + (mi - (len(methods) - 1) / 2) * width for i in range(len(models))], values, width,
                       label=name)
            if key == "peak_rss_mib":  # what graph, features and model took before each method ran
                bases = [r["base_rss_mib"] for r in rows if r["graph"] == graph]
                ax.axhline(min(bases), color="black", linestyle="--", linewidth=0.8, label="graph + features")
            ax.set_xticks(range(len(models)), models)
            ax.set_title(f"{graph}: {label}")
            if key == "median_s" and any(r["method"] == "nodewise" for r in rows if r["graph"] == graph):
                ax.set_yscale("log")
    handles, labels = axes[0][1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 5), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (3.2 * len(graphs))))
    fig.savefig(path, dpi=110)
    return True


def merged(old: dict, meta: dict, rows: list[dict], models: list[str]) -> tuple[dict, list[dict]]:
    """--update: the earlier run's rows with those of `models` replaced by this run's. Every
    ratio stays within one run, as each model's methods all come from the same run."""
    graphs = list(dict.fromkeys([r["graph"] for r in old["rows"]] + [r["graph"] for r in rows]))
    kept = [r for r in old["rows"] if r["model"] not in models]
    order = list(MODELS)
    combined = sorted(kept + rows, key=lambda r: (graphs.index(r["graph"]), order.index(r["model"])))
    result = dict(old["meta"])
    result["command"] = f"{old['meta']['command']}` ({old['meta']['date']}); rows of {', '.join(models)}: `{meta['command']}"
    result["date"] = f"{old['meta']['date']} and {meta['date']}"
    result["cli"] = {**old["meta"].get("cli", {}), **meta.get("cli", {})}
    return result, combined


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--edges", type=int, default=10_000_000, help="random edges, before self-loops")
    p.add_argument("--graphs", default="uniform,powerlaw", help="of uniform, powerlaw, local")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--methods", default=",".join(METHODS),
                   help="of full, handwritten, nodewise, generated; nodewise also runs everything on "
                        "the smaller --nodewise-nodes/--nodewise-edges graphs")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--batch-size", default="65536,262144",
                   help="destination nodes per batch for handwritten and generated; several, comma-separated, "
                        "run each")
    p.add_argument("--nodewise-nodes", type=int, default=20_000)
    p.add_argument("--nodewise-edges", type=int, default=200_000)
    p.add_argument("--nodewise-batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in each child (0: default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cli-runs", type=int, default=3, help="0 skips timing the gnn-codegen command")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per child process")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--keep-work", action="store_true", help="keep OUT/work (graphs, outputs)")
    p.add_argument("--baseline-modules", type=Path,
                   help="a folder of generated_<model>.py written by another gnn-codegen: adds the method "
                        "'baseline', for before/after ratios from one run")
    p.add_argument("--update", action="store_true",
                   help="keep OUT/results.json's rows of the models not run now, replace the others")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        print("RESULT " + json.dumps(child(json.loads(args.child))), flush=True)
        return 0

    import dgl
    import torch

    models = [m for m in args.models.split(",") if m]
    batch_sizes = [int(b) for b in args.batch_size.split(",") if b]
    methods = [m for m in args.methods.split(",") if m]
    if args.baseline_modules and "baseline" not in methods:
        methods.append("baseline")
    for m in models:
        if m not in MODELS:
            raise SystemExit(f"unknown model {m!r}: choose from {', '.join(MODELS)}")
    for m in methods:
        if m not in (*METHODS, "baseline") or m == "baseline" and not args.baseline_modules:
            raise SystemExit(f"unknown method {m!r}: choose from {', '.join(METHODS)}")
    out = args.out.resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)

    meta = {
        "command": "python " + " ".join([os.path.relpath(__file__, REPO), *(argv if argv is not None else sys.argv[1:])]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}",
        "torch": torch.__version__, "dgl": dgl.__version__,
        "torch_threads": args.threads or torch.get_num_threads(), "batch_sizes": batch_sizes,
        "runs": args.runs, "date": time.strftime("%Y-%m-%d %H:%M"), "seed": args.seed,
        "env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "THP_MEM_ALLOC_ENABLE") if k in os.environ},
    }
    load = load_average()
    if load is not None and load > 0.5:
        print(f"warning: load average {load:.1f}: other processes share the CPUs, and with several torch "
              "threads each layer-wise batch waits for them; the times will be noisy", flush=True)
    generate_modules(models, work)
    save_weights(models, work, args.seed)
    meta["cli"] = time_cli(models, work, args.cli_runs) if args.cli_runs > 0 else {}

    graphs = []  # (label, kind, nodes, edges, methods)
    main_methods = [m for m in methods if m != "nodewise"]
    for kind in args.graphs.split(","):
        if main_methods:
            graphs.append((f"{kind}-{args.nodes}-{args.edges}", kind, args.nodes, args.edges, main_methods))
        if "nodewise" in methods:
            small = [m for m in METHODS if m in methods or m in ("full", "handwritten", "generated")]
            graphs.append((f"{kind}-{args.nodewise_nodes}-{args.nodewise_edges}", kind, args.nodewise_nodes,
                           args.nodewise_edges, small))

    rows: list[dict] = []
    for label, kind, nodes, edges, graph_methods in graphs:
        save_graph(kind, nodes, edges, args.seed, work / f"graph_{label}.pt")
        print(f"graph {label}", flush=True)
        for name in models:
            # full first: every other output is compared with it
            reference = work / f"out_{label}_{name}_full.pt"
            for method in sorted(graph_methods, key=lambda m: m != "full"):
                if method == "nodewise" and not MODELS[name][2]:
                    continue
                # batch sizes of at least the graph's nodes all mean one batch: run the first
                layerwise = [b for i, b in enumerate(batch_sizes) if min(b, nodes) not in
                             [min(c, nodes) for c in batch_sizes[:i]]]
                sizes = {"full": [None], "nodewise": [args.nodewise_batch_size]}.get(method, layerwise)
                for batch in sizes:
                    output = work / f"out_{label}_{name}_{method}_{batch}.pt"
                    output = reference if method == "full" else output
                    output.unlink(missing_ok=True)
                    spec = {"graph": label, "model": name, "method": method, "runs": args.runs,
                            "batch_size": batch, "threads": args.threads, "work": str(work), "output": str(output),
                            "baseline": str(args.baseline_modules or "")}
                    row = {"graph": label, "model": name, "method": method, "batch_size": batch, "nodes": nodes,
                           "edges": edges + nodes, "load_before": load_average(), **run_child(spec, args.timeout)}
                    if method != "full" and "error" not in row:
                        row["max_error"] = max_error(output, reference)
                        output.unlink(missing_ok=True)
                    rows.append(row)
                    what = f"{name:6s} {method:12s} {fmt(batch, 'd'):>7s}"
                    if "error" in row:
                        print(f"  {what} {row['error']}", flush=True)
                    else:
                        print(f"  {what} {row['median_s']:8.2f} s  peak {row['peak_rss_mib']:7.0f} MiB  extra "
                              f"{fmt(row['extra_rss_mib'], '7.0f')} MiB  max error "
                              f"{fmt(row.get('max_error'), '.1e', '-')}", flush=True)
            reference.unlink(missing_ok=True)
        if not args.keep_work:
            (work / f"graph_{label}.pt").unlink(missing_ok=True)

    if args.update and (out / "results.json").exists():
        meta, rows = merged(json.loads((out / "results.json").read_text()), meta, rows, models)
    summarise(rows)
    (out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    write_markdown(out / "results.md", meta, rows)
    charted = write_chart(out / "chart.png", rows)
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out / 'results.json'}, {out / 'results.md'}" + (f", {out / 'chart.png'}" if charted else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

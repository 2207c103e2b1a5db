"""Benchmark: inference for some nodes only (nodes=ids) and out of core (storage=DIR), with the
SAGE model of benchmarks/models.py (3 layers, 128 features, 128 hidden, 47 outputs) through the
`inference` gnn-codegen writes for it.

    python benchmarks/beyond_memory.py subset        # 1M nodes, 10M edges: time vs targets
    python benchmarks/beyond_memory.py out-of-core   # 2M nodes: in memory vs storage=DIR

subset: the time of inference(nodes=ids) for 10 .. 100,000 random targets, against full
inference (all nodes) in the same run, and its largest difference from full inference's rows.

out-of-core: the features as a read-only memory map of a .npy file, results in DIR, against
inference with the features and results in memory, in the same run; the time of each layer,
peak anonymous memory (RssAnon, sampled) against the bytes stored in files, and the disk's
sequential read bandwidth (a file written, dropped from the page cache, read back) measured
in the same run. Results are printed as JSON lines and as a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from run import IN_SIZE, MODELS, MODELS_FILE, load_module, make_graph  # noqa: E402

from tests.peak_memory import bytes_in_files, peak_during  # noqa: E402  (the tests' sampler)


def generated_sage(work: Path, init: dict | None = None):
    from gnn_codegen import GenerateOptions, generate

    class_name, default, _ = MODELS["sage"]
    init = init or default
    source = generate(f"{MODELS_FILE}:{class_name}", GenerateOptions(init=json.dumps(init), output="sage.py"))
    (work / "generated_sage.py").write_text(source)
    module = load_module(work / "generated_sage.py", "generated_sage")
    import torch

    torch.manual_seed(0)
    model = getattr(module, class_name)(**init).eval()
    with torch.no_grad():  # biases off zero, so that they count
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return module, model


def graph(num_nodes: int, num_edges: int, kind: str = "uniform", in_size: int = IN_SIZE):
    import dgl

    src, dst, features = make_graph(kind, num_nodes, num_edges, seed=0, in_size=in_size)
    g = dgl.graph((src, dst), num_nodes=num_nodes)
    g.create_formats_()  # the caller's graph, with its formats, before anything is timed
    return g, features


def timed(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def subset(args) -> list[dict]:
    import torch

    work = Path(tempfile.mkdtemp(prefix="gnn-codegen-bench-"))
    _, model = generated_sage(work)
    g, x = graph(args.nodes, args.edges)
    rows = []
    full_s, full = timed(lambda: model.inference(g, x, args.batch_size, "cpu"))
    full_s = min(full_s, timed(lambda: model.inference(g, x, args.batch_size, "cpu"))[0])
    rows.append({"mode": "subset", "targets": "all", "seconds": full_s, "ratio": 1.0})
    gen = torch.Generator().manual_seed(1)
    for count in args.targets:
        nodes = torch.randperm(args.nodes, generator=gen)[:count]
        seconds = min(timed(lambda: model.inference(g, x, args.batch_size, "cpu", nodes=nodes))[0]
                      for _ in range(2))
        result = model.inference(g, x, args.batch_size, "cpu", nodes=nodes)
        error = float((result - full[nodes]).abs().max())
        rows.append({"mode": "subset", "targets": count, "seconds": seconds, "ratio": seconds / full_s,
                     "max_abs_diff": error})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def peak_anon_during(call):
    """(seconds, the peak rise of RssAnon while call runs, its result), with the tests' sampler."""
    peak, (seconds, result) = peak_during(lambda: timed(call))
    return seconds, peak, result


def read_bandwidth(folder: Path, size: int) -> float:
    """Bytes per second of a sequential read of a file not in the page cache."""
    path = folder / "bandwidth.bin"
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache
        start = time.perf_counter()
        while os.read(fd, 1 << 24):
            pass
        seconds = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return size / seconds


def features_on_disk(path: Path, num_nodes: int, width: int, in_memory: bool):
    """Seeded random features saved as a .npy file, written in chunks (never all in memory
    unless in_memory), dropped from the page cache; (the features in memory or None, a
    read-only memory map of the file)."""
    import numpy as np
    import torch

    gen = torch.Generator().manual_seed(0)
    array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(num_nodes, width))
    chunk = max(1, (1 << 28) // (4 * width))
    for start in range(0, num_nodes, chunk):
        rows = min(chunk, num_nodes - start)
        array[start:start + rows] = torch.randn(rows, width, generator=gen).numpy()
    array.flush()
    del array
    drop_from_page_cache(path)
    with warnings.catch_warnings():  # not writable: inference never writes into its inputs
        warnings.simplefilter("ignore", UserWarning)
        mapped = torch.from_numpy(np.load(path, mmap_mode="r"))
    return (mapped.clone() if in_memory else None), mapped


def drop_from_page_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def out_of_core(args) -> list[dict]:
    work = Path(args.dir or tempfile.mkdtemp(prefix="gnn-codegen-ooc-"))
    work.mkdir(parents=True, exist_ok=True)
    init = {"in_size": args.features, "hid_size": args.hidden, "out_size": 47}
    module, model = generated_sage(work, init)
    g, _ = graph(args.nodes, args.edges, args.graph, in_size=0)
    x, x_mapped = features_on_disk(work / "x.npy", args.nodes, args.features, in_memory=not args.no_in_memory)
    runtime = module._FullNeighbourBatches
    stored, layer_seconds = bytes_in_files(runtime), []  # the bytes of each file it makes
    map_ = runtime.map

    def timed_map(self, *a, **k):
        seconds, result = timed(lambda: map_(self, *a, **k))
        layer_seconds.append(seconds)
        return result

    runtime.map = timed_map
    if args.always_gather:  # as where the rows do not fit in the page cache
        runtime._fit_in_memory = lambda self, tensors: False
    if args.no_read_ahead:  # memory-mapped pages read as the kernel reads them by itself
        runtime._read_ahead = lambda self, t, index: None
    rows, in_memory = [], None
    if x is not None:
        memory_s, memory_peak, in_memory = peak_anon_during(lambda: model.inference(g, x, args.batch_size, "cpu"))
        rows.append({"mode": "in memory", "seconds": memory_s, "peak_anon_bytes": memory_peak,
                     "layer_seconds": list(layer_seconds)})
        layer_seconds[:] = []
        del x
    disk_s, disk_peak, on_disk = peak_anon_during(
        lambda: model.inference(g, x_mapped, args.batch_size, "cpu", storage=str(work / "stored")))
    bandwidth = read_bandwidth(work, args.bandwidth_bytes)
    stored_bytes = sum(stored)
    row = {"mode": "out of core", "nodes": args.nodes, "edges": g.num_edges(), "graph": args.graph,
           "seconds": disk_s, "peak_anon_bytes": disk_peak, "stored_bytes": stored_bytes,
           "peak_anon_per_stored": disk_peak / stored_bytes, "layer_seconds": list(layer_seconds),
           "disk_read_bytes_per_s": bandwidth, "feature_bytes": args.nodes * args.features * 4,
           "always_gather": args.always_gather, "read_ahead": not args.no_read_ahead}
    if in_memory is not None:
        row.update(ratio_to_in_memory=disk_s / rows[0]["seconds"],
                   max_abs_diff=float((on_disk - in_memory).abs().max()))
    rows.append(row)
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["subset", "out-of-core"])
    p.add_argument("--nodes", type=int)
    p.add_argument("--edges", type=int)
    p.add_argument("--batch-size", type=int, default=65536)
    p.add_argument("--targets", default="10,100,1000,10000,100000")
    p.add_argument("--dir", help="out-of-core: where the features and results go (default: a temporary one)")
    p.add_argument("--bandwidth-bytes", type=int, default=1 << 30)
    p.add_argument("--threads", type=int)
    p.add_argument("--graph", default="uniform", help="out-of-core: uniform, powerlaw or local (see run.py)")
    p.add_argument("--features", type=int, default=IN_SIZE, help="out-of-core: input width")
    p.add_argument("--hidden", type=int, default=128, help="out-of-core: hidden width")
    p.add_argument("--always-gather", action="store_true",
                   help="out-of-core: gather source rows even where they would fit in the page cache")
    p.add_argument("--no-read-ahead", action="store_true",
                   help="out-of-core: no madvise of the pages a gather reads")
    p.add_argument("--no-in-memory", action="store_true",
                   help="out-of-core: skip the in-memory run (for data larger than memory)")
    args = p.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    args.targets = [int(t) for t in args.targets.split(",")]
    if args.mode == "subset":
        args.nodes, args.edges = args.nodes or 1_000_000, args.edges or 10_000_000
        subset(args)
    else:
        args.nodes, args.edges = args.nodes or 2_000_000, args.edges or 10_000_000
        out_of_core(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

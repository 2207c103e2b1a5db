"""The generated inference of the sage, gcn and gat examples on a real GPU, where PyPI's DGL
(CPU only) cannot run: DGL's few calls in that code are served by tests/cuda/stand_in (torch
alone), so what runs on the GPU is gnn-codegen's own code: the batch loop, the side stream,
pinned results, asynchronous copies, the per-node work in chunks on the device.

    python tests/cuda/check.py reference DIR          # real DGL, on the CPU: graphs, weights
                                                      # and forward's rows, into DIR
    python tests/cuda/check.py run DIR --device cuda  # the stand-in: every way of calling
                                                      # inference against forward's rows
    python tests/cuda/check.py bench DIR              # the stand-in on a GPU: timings

`run --device cpu` is what tests/test_cuda_stand_in.py runs in CI: it shows that the stand-in
computes what DGL computes for this code. On a GPU the same run proves the device contract
where the simulated device (gnn_codegen/verify/simulated_device.py) cannot: streams, pinned memory,
non-blocking copies.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).resolve().parent / "stand_in"
CASES = ("sage", "gcn", "gat")
SEEDS = (0, 1)
NUM_NODES = 1003  # batches of 97 do not divide it
TOLERANCE = 1e-4  # largest difference, relative to the largest value


def load_generated(case: str, tag: str):
    """generated_examples/<case>/generated.py as a module, its model built from case.json (with
    whichever dgl the import finds: DGL, or the stand-in), and the model's input width."""
    folder = REPO / "generated_examples" / case
    spec = json.loads((folder / "case.json").read_text())
    name = spec["target"].split(":")[1]
    module_spec = importlib.util.spec_from_file_location(
        f"_cuda_check_{case}_{tag}", folder / "generated.py"
    )
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module, getattr(module, name)(**spec["init"]), spec["init"]["in_size"]


def random_csc(num_nodes: int, num_edges: int, self_loops: bool, seed: int):
    """A random graph's CSC arrays: about a tenth of the nodes without in-edges unless every
    node has a self-loop (GraphConv and GATConv refuse nodes without in-edges by default)."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(num_nodes, (num_edges,), generator=generator)
    dst = torch.randint(num_nodes, (num_edges,), generator=generator)
    if self_loops:
        loops = torch.arange(num_nodes)
        src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    else:
        dst = torch.where(dst % 10 == 0, dst + 1, dst) % num_nodes
    order = torch.argsort(dst, stable=True)  # edge IDs in the order drawn, as DGL keeps them
    counts = torch.bincount(dst, minlength=num_nodes)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    return indptr, src[order], order


def perturbed(model: torch.nn.Module, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    return {
        k: torch.randn(v.shape, generator=generator) * 0.5 if v.is_floating_point() else v
        for k, v in model.state_dict().items()
    }


def forward(case: str, model, g, x):
    return model([g] * 3, x) if case == "sage" else model(g, x)


def make_reference(out: Path) -> None:
    """With DGL: per case and seed, the graph, the inputs, the weights and forward's rows."""
    import dgl

    reference = {}
    for case in CASES:
        _, model, width = load_generated(case, "dgl")
        for seed in SEEDS:
            indptr, indices, edge_ids = random_csc(NUM_NODES, 8 * NUM_NODES, case != "sage", seed)
            g = dgl.graph(("csc", (indptr, indices, edge_ids)), num_nodes=NUM_NODES)
            x = torch.randn(NUM_NODES, width, generator=torch.Generator().manual_seed(seed))
            weights = perturbed(model, seed)
            model.load_state_dict(weights)
            model.eval()
            with torch.no_grad():
                expected = forward(case, model, g, x)
            reference[case, seed] = dict(
                csc=(indptr, indices, edge_ids), x=x, weights=weights, expected=expected
            )
        reference["ops", case] = ops_reference(dgl, g, case)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(reference, out / "reference.pt")
    print(f"reference: {len(reference)} graphs and models in {out / 'reference.pt'}")


def op_inputs(g, seed: int) -> dict:
    """Rows per node and per edge for DGL's ops, with heads: (rows, 4 heads, 3) and (edges,
    4 heads, 1), as GATConv's code calls them."""
    generator = torch.Generator().manual_seed(seed)
    n, e = g.num_src_nodes(), g.num_edges()
    return dict(
        h=torch.randn(n, 4, 3, generator=generator),
        a=torch.randn(e, 4, 1, generator=generator),
        el=torch.randn(n, 4, 1, generator=generator),
        er=torch.randn(n, 4, 1, generator=generator),
    )


def apply_ops(dgl, g, inputs: dict) -> dict:
    h, a, el, er = (inputs[k] for k in ("h", "a", "el", "er"))
    return {
        "copy_u_sum": dgl.ops.copy_u_sum(g, h),
        "u_mul_e_sum": dgl.ops.u_mul_e_sum(g, h, a),
        "u_add_v": dgl.ops.u_add_v(g, el, er),
        "edge_softmax": dgl.ops.edge_softmax(g, a),
        "in_degrees": g.in_degrees(),
        "out_degrees": g.out_degrees(),
    }


def ops_reference(dgl, g, case: str) -> dict:
    """DGL's ops that the stand-in writes anew, on the last graph of a case."""
    inputs = op_inputs(g, len(case))
    return dict(csc=g.adj_tensors("csc"), inputs=inputs, expected=apply_ops(dgl, g, inputs))


def check_ops(dgl, ref: dict, case: str, device: str) -> int:
    g = dgl.graph_from_csc(*ref["csc"], NUM_NODES).to(device)
    inputs = {k: v.to(device) for k, v in ref["inputs"].items()}
    failures = 0
    for name, got in apply_ops(dgl, g, inputs).items():
        want = ref["expected"][name]
        error = (got.cpu() - want).abs().max().item() / max(1.0, want.abs().max().item())
        failures += report(case, "its graph", f"dgl.ops {name}", error <= TOLERANCE, f"error {error:.1e}")
    return failures


def use_stand_in():
    sys.path.insert(0, str(STAND_IN))
    import dgl

    if not Path(dgl.__file__).is_relative_to(STAND_IN):
        raise SystemExit(f"dgl imported from {dgl.__file__}, not the stand-in")
    return dgl


def variants(device: str):
    """(name, how g and x are placed, inference's keyword arguments) for one device."""
    yield "batches of 97", None, dict(batch_size=97)
    yield "one batch", None, dict(batch_size=NUM_NODES)
    yield "auto, 64 KiB", None, dict(batch_size="auto", max_memory=2**16)
    yield "nodes=", None, dict(batch_size=97, nodes="some")
    yield "storage=", None, dict(batch_size=97, storage="tmp")
    if device != "cpu":
        yield "x and g pinned", "pinned", dict(batch_size=97)
        yield "x and g on device", "device", dict(batch_size=97)


def run(reference_dir: Path, device: str) -> int:
    dgl = use_stand_in()
    reference = torch.load(reference_dir / "reference.pt")
    failures = 0
    for (case, seed), ref in reference.items():
        if case == "ops":  # (ops, the case whose graph they ran on)
            failures += check_ops(dgl, ref, seed, device)
            continue
        _, model, _ = load_generated(case, "stand_in")
        model.load_state_dict(ref["weights"])
        g = dgl.graph_from_csc(*ref["csc"], NUM_NODES)
        expected = ref["expected"]
        # the model left on the host while device is a GPU: a clear error, never a result
        if device != "cpu":
            try:
                model.inference(g, ref["x"], batch_size=97, device=device)
            except ValueError as error:
                ok = "call model.to(device)" in str(error)
            else:
                ok = False
            failures += report(case, f"seed {seed}", "model on the host: refused", ok, "")
        model.to(device)
        for name, placement, kwargs in variants(device):
            x, graph = ref["x"], g
            if placement == "pinned":
                x, graph = x.pin_memory(), dgl.graph_from_csc(*ref["csc"], NUM_NODES)
                graph.pin_memory_()
            elif placement == "device":
                x, graph = x.to(device), g.to(device)
            want = expected
            if kwargs.get("nodes") == "some":
                nodes = torch.randint(NUM_NODES, (50,), generator=torch.Generator().manual_seed(seed))
                kwargs = dict(kwargs, nodes=nodes)
                want = expected[nodes]
            with tempfile.TemporaryDirectory() as tmp:
                if kwargs.get("storage") == "tmp":
                    kwargs = dict(kwargs, storage=tmp)
                got = model.inference(graph, x, device=device, **kwargs)
                got = torch.as_tensor(got).clone()
            error = (got.cpu() - want).abs().max().item() / max(1.0, want.abs().max().item())
            on_host = got.device.type == "cpu"
            failures += report(
                case, f"seed {seed}", name, error <= TOLERANCE and on_host,
                f"error {error:.1e}, result on {got.device}",
            )
    if device != "cpu":
        failures += stress(dgl, device)
    print(f"{failures} failed" if failures else "all passed")
    return 1 if failures else 0


def stress(dgl, device: str, num_nodes: int = 200_000, batch_size: int = 1000) -> int:
    """Many batches of a larger graph, where a missing wait between the side stream and the
    compute stream, or a buffer reused too early, would show: each case's result on the device
    against the same code on the CPU (which the run above compares with DGL)."""
    failures = 0
    for case in CASES:
        _, model, width = load_generated(case, "stress")
        model.load_state_dict(perturbed(model, 7))
        csc = random_csc(num_nodes, 10 * num_nodes, case != "sage", 7)
        g = dgl.graph_from_csc(*csc, num_nodes)
        x = torch.randn(num_nodes, width, generator=torch.Generator().manual_seed(7))
        want = model.inference(g, x, batch_size=batch_size, device="cpu")
        model.to(device)
        for repeat in range(2):
            got = model.inference(g, x, batch_size=batch_size, device=device)
            error = (got - want).abs().max().item() / max(1.0, want.abs().max().item())
            failures += report(
                case, f"run {repeat}", f"{num_nodes} nodes, batches of {batch_size}, against the CPU",
                error <= TOLERANCE, f"error {error:.1e}",
            )
    return failures


def report(case, run, name, ok, detail) -> int:
    print(f"{'ok  ' if ok else 'FAIL'} {case} ({run}) {name}: {detail}")
    return 0 if ok else 1


@contextlib.contextmanager
def one_stream():
    """The runtime's side stream replaced by the current one: preparation and compute in one
    queue, for the timing without the overlap."""
    original, current = torch.cuda.Stream, torch.cuda.current_stream()
    torch.cuda.Stream = lambda *_, **__: current  # current_stream() makes a Stream too
    try:
        yield
    finally:
        torch.cuda.Stream = original


def bench(num_nodes: int, degree: int, width: int, repeats: int, out: Path | None) -> None:
    """SAGE (3 layers, 256 wide) on a random graph in host memory, the model on the GPU: the
    runtime as shipped (a layer's source rows moved to the GPU whole where they fit), against
    gathering each batch's rows on the host (as before, and as for rows too large for the GPU)
    with the next batch prepared on a side stream or on the one stream, against pinned inputs,
    and against device="cpu" on this machine's cores. Each: the best of `repeats` runs."""
    dgl = use_stand_in()
    module, _, _ = load_generated("sage", "bench")
    out_size = json.loads((REPO / "generated_examples/sage/case.json").read_text())["init"]["out_size"]
    model = module.SAGE(width, 256, out_size)
    g = dgl.graph_from_csc(*random_csc(num_nodes, degree * num_nodes, False, 0), num_nodes)
    x = torch.randn(num_nodes, width)
    runtime = module._FullNeighbourBatches
    prepare, spent = runtime._prepare, []

    def timed_prepare(self, *args):  # the host's time making each batch's block and rows
        start = time.perf_counter()
        try:
            return prepare(self, *args)
        finally:
            spent.append(time.perf_counter() - start)

    @contextlib.contextmanager
    def gathering():
        original = runtime.map
        runtime.map = lambda self, *a, **k: original(self, *a, **dict(k, in_place=False))
        try:
            yield
        finally:
            runtime.map = original

    runtime._prepare = timed_prepare
    results, outputs = {}, {}
    ways = [
        ("gpu, as shipped", "cuda", x, contextlib.nullcontext),
        ("gpu, x pinned", "cuda", x.pin_memory(), contextlib.nullcontext),
        ("gpu, gathered per batch, side stream", "cuda", x, gathering),
        ("gpu, gathered per batch, one stream", "cuda", x, lambda: _both(gathering(), one_stream())),
        ("cpu (16 threads)", "cpu", x, contextlib.nullcontext),
    ]
    for name, device, features, context in ways:
        model.to(device)
        times = []
        for _ in range(repeats):
            spent.clear()
            with context():
                if device == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                start = time.perf_counter()
                outputs[name] = model.inference(g, features, batch_size=65536, device=device)
                if device == "cuda":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
        peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None
        results[name] = dict(seconds=min(times), preparing_last_run=sum(spent), peak_mib=peak)
        print(f"{name}: {min(times):.2f} s (best of {repeats}), of which preparing batches "
              f"{sum(spent):.2f} s" + (f", peak {peak:.0f} MiB on the GPU" if peak else ""), flush=True)
    shipped = outputs["gpu, as shipped"]
    for name, other in outputs.items():
        error = (other - shipped).abs().max().item() / max(1.0, shipped.abs().max().item())
        results[name]["difference_from_shipped"] = error
        print(f"{name} against as shipped: difference {error:.1e}")
    summary = dict(
        graph=dict(nodes=num_nodes, edges=degree * num_nodes, width=width), batch_size=65536,
        results=results, device=torch.cuda.get_device_name(), threads=torch.get_num_threads(),
        torch=torch.__version__,
    )
    print(json.dumps(summary))
    if out is not None:
        out.write_text(json.dumps(summary, indent=1) + "\n")


@contextlib.contextmanager
def _both(first, second):
    with first, second:
        yield


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("reference").add_argument("dir", type=Path)
    runner = sub.add_parser("run")
    runner.add_argument("dir", type=Path)
    runner.add_argument("--device", default="cuda")
    bencher = sub.add_parser("bench")
    bencher.add_argument("--nodes", type=int, default=2_000_000)
    bencher.add_argument("--degree", type=int, default=15)
    bencher.add_argument("--width", type=int, default=128)
    bencher.add_argument("--repeats", type=int, default=3)
    bencher.add_argument("--out", type=Path, help="the timings as JSON")
    args = parser.parse_args(argv)
    if args.command == "reference":
        make_reference(args.dir)
        return 0
    if args.command == "run":
        return run(args.dir, args.device)
    bench(args.nodes, args.degree, args.width, args.repeats, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

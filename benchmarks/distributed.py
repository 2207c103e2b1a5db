"""The DistDGL benchmark of issue 36: the generated `inference` of SAGE (3 layers,
generated_examples/sage) on a DistGraph of 2 partitions, 2 servers and 2 trainers on this host,
against the single-process generated `inference` on the same graph and against DGL's example
loop (examples/distributed/graphsage, as tests/distributed_job.py reproduces it), all in one run
of this script, each checked against the model's full-graph forward.

usage: python benchmarks/distributed.py [--nodes 1000000] [--edges 10000000] [--out FILE]

Every process (this one, each server, each trainer) runs with one thread (OMP_NUM_THREADS=1 and
torch.set_num_threads(1)), so that the 4 processes of the distributed run and the single process
compare on the same footing. The graph: N nodes, E edges with both ends uniform from a seeded
torch.Generator (no dgl.rand_graph), 128 features; partitioned in 2 (random by default, as the
tests) into a temporary directory that is removed at the end.

The servers and trainers are this file run with --worker: it imports the generated module (in
every role, before initialize(), as its docstring asks), then tests/distributed_job.py for the
one-host workarounds and the DistGraph (its spec has no jobs), then times its calls. The
processes are started as tests/test_distributed.py starts them (its environments), each in its
own process group, killed with its group at --timeout.

Bytes pulled from the other partition: in each trainer, DistTensor.__getitem__ is wrapped (here,
not in the generated code) to count, per tensor read and per barrier-delimited phase, the rows
asked for and those whose owner (the tensor's partition policy) is the other partition; times
the row's bytes. These are the rows each trainer's blocks read (their source nodes, batch by
batch), as pulled, so a node read by two batches counts twice. The graph structure the
trainers sample (every in-edge of their own nodes) is in their own partition and not counted.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("DGLBACKEND", "pytorch")

import argparse
import importlib.util
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dgl  # noqa: E402

MODULE = ROOT / "generated_examples" / "sage" / "generated.py"


def load_module(path: str):
    """The generated module, imported as a user imports it (registers its flush request)."""
    spec = importlib.util.spec_from_file_location("generated_sage", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["generated_sage"] = module
    spec.loader.exec_module(module)
    return module


def random_graph(nodes: int, edges: int, features: int, seed: int):
    """Both ends of each edge uniform, from a seeded generator; features standard normal."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(nodes, (edges,), generator=gen)
    dst = torch.randint(nodes, (edges,), generator=gen)
    g = dgl.graph((src, dst), num_nodes=nodes)
    g.ndata["feat"] = torch.randn(nodes, features, generator=gen)
    return g


def layer_reads(events: list[list], by_phase: bool) -> list[dict]:
    """Reads grouped by tensor (the generated runtime's tensors have a name per layer), or by
    tensor and phase (DGL's example reads "h" in two layers, a barrier apart), in the order first
    read. events: [name, phase, rows, remote rows, row bytes]."""
    groups: dict[tuple, dict] = {}
    for name, phase, rows, remote, row_bytes in events:
        key = (name, phase if by_phase else None)
        group = groups.setdefault(
            key, {"tensor": name, "rows": 0, "remote_rows": 0, "row_bytes": row_bytes}
        )
        group["rows"] += rows
        group["remote_rows"] += remote
    for group in groups.values():
        group["remote_bytes"] = group["remote_rows"] * group["row_bytes"]
    return list(groups.values())


# ---------------------------------------------------------------------------------------------
# a server or a trainer


def worker(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    module = load_module(spec["module"])  # before initialize(), in every role
    sys.argv = [sys.argv[0], spec_path]  # tests/distributed_job.py reads its spec there
    from tests import distributed_job as job  # a server serves in here, then exits

    g, out = job.g, Path(spec["out"])
    events: list[list] = []
    counting = {"on": False, "phase": 0}
    own = g.get_partition_book().partid
    get = dgl.distributed.DistTensor.__getitem__

    def counted(self, idx):
        if counting["on"] and isinstance(idx, torch.Tensor):
            owners = self.part_policy.to_partid(idx)
            row = int(numpy.prod(self.shape[1:])) * torch.empty((), dtype=self.dtype).element_size()
            events.append([self.name, counting["phase"], len(idx), int((owners != own).sum()), row])
        return get(self, idx)

    dgl.distributed.DistTensor.__getitem__ = counted
    barrier = g.barrier

    def counted_barrier():
        counting["phase"] += 1
        return barrier()

    g.barrier = counted_barrier  # the runtime's self.g is this object

    model = getattr(module, spec["class"])(**spec["init"])
    model.load_state_dict(torch.load(spec["weights"]))
    model.eval()
    x, rank, report = g.ndata["feat"], g.rank(), {}
    runs = [
        ("generated", False, lambda: model.inference(g, x, spec["batch_size"], "cpu")),
        ("dgl_example", True, lambda: job.dgl_example_inference(model, g, x, spec["batch_size"])),
    ]
    for name, by_phase, run in runs:
        report[name] = {"spans": []}
        for i in range(spec["runs"]):
            barrier()
            events.clear()
            counting["on"] = i == 0  # the first run's reads (the same every run)
            start = time.time()
            result = run()
            end = time.time()
            counting["on"] = False
            report[name]["spans"].append([start, end])
            if i == 0:
                report[name]["reads"] = layer_reads(events, by_phase)
                if rank == 0:  # every row, in DistGraph IDs; the first run's (DGL's example
                    # reuses its persistent "h" in the runs after it)
                    rows = result[torch.arange(g.num_nodes())].numpy()
                    numpy.save(out / f"{name}.npy", rows)
            del result  # DistTensors: freed in every trainer at once
            barrier()
    (out / f"trainer{rank}.json").write_text(json.dumps(report))


# ---------------------------------------------------------------------------------------------
# the benchmark


def launch(envs: list[dict], spec: Path, timeout: float) -> tuple[list, list[float]]:
    """Each process to its end or to `timeout` (then its process group is killed); exit codes
    and output, and the 1-minute load average sampled each second while they run."""
    base = dict(os.environ, DGLBACKEND="pytorch", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(spec)]
    procs = [subprocess.Popen(command, env={**base, **env}, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for env in envs]
    logs = [tempfile.TemporaryFile("w+") for _ in procs]
    start, loads = time.monotonic(), []
    try:
        pending = set(range(len(procs)))
        while pending and time.monotonic() - start < timeout:
            loads.append(os.getloadavg()[0])
            for i in list(pending):
                try:  # drain its output (a full pipe would block it)
                    out, _ = procs[i].communicate(timeout=1.0 / len(pending))
                    logs[i].write(out)
                    pending.discard(i)
                except subprocess.TimeoutExpired:
                    pass
    finally:
        for p in procs:  # whatever failed: none left running
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
    results = []
    for p, log in zip(procs, logs):
        log.seek(0)
        results.append((p.returncode, log.read()))
    return results, loads


def max_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got - want).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--features", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--classes", type=int, default=47)
    parser.add_argument("--batch-size", type=int, default=65536)
    parser.add_argument("--part-method", default="random", choices=["random", "metis"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3, help="times: the median of")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for the 4 processes")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "distributed.json"))
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    torch.set_num_threads(1)
    # killed from outside (timeout(1)): still through launch's finally, which kills the
    # servers' and trainers' process groups (their own sessions: a signal here misses them)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from tests.test_distributed import _loopback  # the 2 servers' and 2 trainers' environments

    module = load_module(str(MODULE))
    init = {"in_size": args.features, "hid_size": args.hidden, "out_size": args.classes}
    result = {"command": " ".join(["python", "benchmarks/distributed.py", *sys.argv[1:]]),
              "nodes": args.nodes, "edges": args.edges, "features": args.features, "model": init,
              "module": str(MODULE.relative_to(ROOT)), "batch_size": args.batch_size,
              "part_method": args.part_method, "threads_per_process": 1, "runs": args.runs,
              "load_average_at_start": os.getloadavg(), "seconds": {}}
    seconds = result["seconds"]

    def timed(name, fn, runs=1):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - start)
        seconds[name] = round(statistics.median(times), 3)
        print(f"{name}: {seconds[name]} s (load {os.getloadavg()[0]:.1f})", flush=True)
        return value

    g = timed("graph", lambda: random_graph(args.nodes, args.edges, args.features, args.seed))
    x = g.ndata["feat"]
    torch.manual_seed(args.seed)
    model = module.SAGE(**init).eval()
    with torch.no_grad():
        for p in model.parameters():  # biases not zero
            p.add_(0.1 * torch.randn_like(p))
    with tempfile.TemporaryDirectory(prefix="distbench-") as work:
        tmp = Path(work)
        torch.save(model.state_dict(), tmp / "weights.pt")
        orig_nid, _ = timed("partition", lambda: dgl.distributed.partition_graph(
            g, "g", 2, str(tmp / "parts"), part_method=args.part_method, return_mapping=True))
        g.create_formats_()  # none of the timed runs pays for them
        with torch.no_grad():
            want = timed("full_forward", lambda: model([g] * 3, x), args.runs)
        ours = timed("single_process", lambda: model.inference(g, x, args.batch_size, "cpu"), args.runs)
        result["error_single_process"] = max_error(ours, want)
        del ours
        envs, _ = _loopback(tmp)  # writes tmp/ip_config.txt
        tag = f"-distbench{os.getpid()}"  # shared-memory names no test run of the same shares
        for env in envs:
            env["GNN_SHM_TAG"] = tag + env["GNN_SHM_TAG"]
        spec = {"graph": "g", "part_config": str(tmp / "parts" / "g.json"),
                "ip_config": str(tmp / "ip_config.txt"), "jobs": [], "module": str(MODULE),
                "class": "SAGE", "init": init, "weights": str(tmp / "weights.pt"),
                "batch_size": args.batch_size, "out": str(tmp), "runs": args.runs}
        (tmp / "spec.json").write_text(json.dumps(spec))
        print("distributed run: 2 servers, 2 trainers", flush=True)
        start = time.perf_counter()
        try:
            procs, loads = launch(envs, tmp / "spec.json", args.timeout)
        finally:  # a server killed leaves its shared memory behind
            for leftover in Path("/dev/shm").glob(f"*{tag}-p*"):
                leftover.unlink()
        seconds["distributed_processes"] = round(time.perf_counter() - start, 3)
        result["load_average_during_distributed"] = {
            "min": min(loads), "mean": round(sum(loads) / len(loads), 2), "max": max(loads)}
        for (code, out), role in zip(procs, ["server 0", "server 1", "trainer 0", "trainer 1"]):
            if code != 0:
                why = f"killed at --timeout {args.timeout} s" if code == -9 else f"exited {code}"
                sys.exit(f"{role} {why}:\n{out[-3000:]}")
        reports = [json.loads((tmp / f"trainer{r}.json").read_text()) for r in range(2)]
        want = want[orig_nid]  # row i: the DistGraph's node i
        for name in ("generated", "dgl_example"):
            # each run: from the first trainer's call to the last trainer's return
            spans = [max(r[name]["spans"][i][1] for r in reports)
                     - min(r[name]["spans"][i][0] for r in reports) for i in range(args.runs)]
            seconds[f"distributed_{name}"] = round(statistics.median(spans), 3)
            seconds[f"distributed_{name}_runs"] = [round(s, 3) for s in spans]
            got = torch.from_numpy(numpy.load(tmp / f"{name}.npy"))
            wrong = (got - want).abs().amax(1) > 1e-3
            result[f"error_{name}"] = max_error(got, want)
            result[f"rows_wrong_{name}"] = int(wrong.sum())  # more than 1e-3 off
            result[f"reads_{name}"] = [r[name]["reads"] for r in reports]  # by trainer
            result[f"remote_bytes_{name}"] = [  # by trainer, all layers
                sum(read["remote_bytes"] for read in r[name]["reads"]) for r in reports]
    single = seconds["single_process"]
    result["ratios_to_single_process"] = {
        name: round(seconds[name] / single, 3)
        for name in ("full_forward", "distributed_generated", "distributed_dgl_example")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in result if not k.startswith("reads")}, indent=1))
    for name in ("generated", "dgl_example"):
        for rank, reads in enumerate(result[f"reads_{name}"]):
            for read in reads:
                print(f"{name} trainer {rank}: {read}")


if __name__ == "__main__":
    main()

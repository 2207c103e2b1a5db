"""The generated `inference` on DistDGL (dgl.distributed): g a DistGraph, x a DistTensor, the
result a DistTensor in the DistGraph's node IDs, checked against the user's full-graph forward
through the orig_nid that partition_graph(return_mapping=True) gives. Generated examples'
homogeneous models (goldens), imported as users import them, run by tests/distributed_job.py:
in standalone mode (one partition, one process), and with 2 partitions on loopback (2 servers
and 2 trainers as processes, as DGL's tools/launch.py starts them on 2 machines). Every process
has one thread and a hard timeout that kills its process group: a hang fails the test."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy
import pytest
import torch

import dgl

ROOT = Path(__file__).resolve().parent.parent
NODES, EDGES, FEATURES = 300, 1500, 16
TIMEOUT = 150  # seconds for a whole run: start-up is ~6 s a process here, alone
# (example, class, init, forward's [g] * layers or None for forward(g, x), batch size)
MODELS = [
    ("sage", "SAGE", {"in_size": 16, "hid_size": 32, "out_size": 5}, 3, 64),
    ("gcn", "GCN", {"in_size": 16, "hid_size": 16, "out_size": 4, "num_layers": 3}, None, 50),
    ("gat", "GAT", {"in_size": 16, "hid_size": 8, "out_size": 5, "heads": [4, 2]}, None, 64),
    ("gcn_norms", "MixedNormGCN", {"in_feats": 16, "hidden": 24, "n_classes": 4}, 3, 40),
    # PairNorm: means over all nodes, every trainer's rows
    ("gcn_pairnorm", "DeepGCN", {"in_feats": 16, "n_hidden": 32, "n_classes": 4}, None, 64),
]


def _load(example: str):
    import importlib.util

    name = f"golden_{example}"
    if name not in sys.modules:
        path = ROOT / "generated_examples" / example / "generated.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _prepare(tmp: Path, parts: int, models, nodes=None, dgl_example=False):
    """The graph, its partitions, the models' weights and their full-graph forward; the spec
    of a run of tests/distributed_job.py and what each job must give."""
    torch.manual_seed(0)
    dgl.seed(0)
    g = dgl.add_self_loop(dgl.rand_graph(NODES, EDGES))  # GraphConv, GATConv: in-edges
    x = torch.randn(NODES, FEATURES)
    g.ndata["feat"] = x
    orig_nid, _ = dgl.distributed.partition_graph(
        g, "g", parts, str(tmp / "parts"), part_method="random", return_mapping=True
    )
    jobs, expected = [], []
    if nodes is not None:  # the first model again, for nodes= (in DistGraph IDs)
        models = [*models, models[0]]
    if dgl_example:  # and last, DGL's example loop on it
        models = [*models, models[0]]
    for i, (example, cls, init, layers, batch_size) in enumerate(models):
        torch.manual_seed(100 + i % len(MODELS))
        model = getattr(_load(example), cls)(**init).eval()
        with torch.no_grad():
            for p in model.parameters():  # biases not zero
                p.add_(0.1 * torch.randn_like(p))
            ref = model([g] * layers if layers else g, x)
        torch.save(model.state_dict(), tmp / f"w{i}.pt")
        job = {"module": str(ROOT / "generated_examples" / example / "generated.py"),
               "class": cls, "init": init, "weights": str(tmp / f"w{i}.pt"),
               "batch_size": batch_size, "nodes": None, "out": str(tmp / f"out{i}.npy")}
        want = ref[orig_nid]  # row i: DistGraph node i's
        if dgl_example and i == len(models) - 1:
            job["style"] = "dgl_example"
        elif nodes is not None and i == len(MODELS):
            numpy.save(tmp / "nodes.npy", nodes.numpy())
            job["nodes"] = str(tmp / "nodes.npy")
            want = want[nodes]
        jobs.append(job)
        expected.append((example, want))
    (tmp / "ip_config.txt").write_text("127.0.0.1 30050\n")  # read, unused, in standalone
    spec = {"graph": "g", "part_config": str(tmp / "parts" / "g.json"),
            "ip_config": str(tmp / "ip_config.txt"), "jobs": jobs}
    (tmp / "spec.json").write_text(json.dumps(spec))
    return expected


def _check(tmp: Path, expected) -> None:
    for i, (example, want) in enumerate(expected):
        got = torch.from_numpy(numpy.load(tmp / f"out{i}.npy"))
        assert got.shape == want.shape, example
        assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), (
            example, float((got - want).abs().max()))


def _run(procs_env: list[dict], tmp: Path) -> list[tuple[int, str]]:
    """Each process of the run, to its end or to TIMEOUT (then its process group is killed);
    its exit code and output."""
    command = [sys.executable, "-m", "tests.distributed_job", str(tmp / "spec.json")]
    base = dict(os.environ, DGLBACKEND="pytorch", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen(command, env={**base, **env}, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for env in procs_env]
    start, results = time.monotonic(), []
    try:
        for p in procs:
            try:
                out, _ = p.communicate(timeout=max(1.0, TIMEOUT - (time.monotonic() - start)))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
                out += f"\n[killed after {TIMEOUT} s]"
            results.append((p.returncode, out))
    finally:
        for p in procs:  # whatever failed: none left running
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return results


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_standalone_one_partition(tmp_path: Path) -> None:
    """Standalone mode (one process, a 1-partition graph): sage (3 layers), gcn (3 layers,
    norm by both degrees), gat (2 layers), gcn_norms (left, right, none), and nodes=."""
    nodes = torch.tensor([5, 0, 123, 7, 299, 5])
    expected = _prepare(tmp_path, 1, MODELS, nodes=nodes)
    [(code, out)] = _run([{"DGL_DIST_MODE": "standalone"}], tmp_path)
    assert code == 0, out[-3000:]
    _check(tmp_path, expected)


def test_refused_on_a_dist_graph(tmp_path: Path) -> None:
    """What does not run on a DistGraph yet is refused at the entry, with a ValueError that
    says what and where: storage=, a graph derived in forward, an LSTM over in-edges in order, a
    message-passing module of the user's (its reduce may read in-edges in order), a
    heterogeneous model."""
    _prepare(tmp_path, 1, [])
    spec = json.loads((tmp_path / "spec.json").read_text())
    refused = [
        ("sage", "SAGE", MODELS[0][2], {"storage": str(tmp_path / "files")}),
        ("gat_self_loops", "GAT", MODELS[2][2], {}),
        # an LSTM over each node's in-edges, in order: partition_graph renumbers edges
        ("sage_variants", "SAGEVariants", {"in_feats": 16, "n_hidden": 16, "n_classes": 3}, {}),
        # a message-passing module of the user's: its reduce may read a node's in-edges in order
        ("custom_mp", "CustomNet", json.loads(
            (ROOT / "generated_examples" / "custom_mp" / "case.json").read_text())["init"], {"extra_inputs": 2}),
        ("rgcn_hetero", "RGCN", json.loads(
            (ROOT / "generated_examples" / "rgcn_hetero" / "case.json").read_text())["init"], {}),
    ]
    spec["jobs"] = [{"module": str(ROOT / "generated_examples" / example / "generated.py"),
                     "class": cls, "init": init, "refused": True, "out": str(tmp_path / f"{i}.txt"),
                     **extra} for i, (example, cls, init, extra) in enumerate(refused)]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    [(code, out)] = _run([{"DGL_DIST_MODE": "standalone"}], tmp_path)
    assert code == 0, out[-3000:]
    messages = [(tmp_path / f"{i}.txt").read_text() for i in range(len(refused))]
    assert "storage= does not apply to a DistGraph" in messages[0]
    assert "derives a graph from its graph, add_self_loop at" in messages[1]
    assert "gat_self_loops/model.py:38" in messages[1]
    assert "self.layers.2 (SAGEConv with an LSTM over each node's in-edges" in messages[2]
    assert "self.conv1 (GatedMeanConv) is a message-passing module of yours at" in messages[3]
    assert "not done yet for a heterogeneous model" in messages[4]
    assert not (tmp_path / "files").exists()


def test_two_partitions_on_loopback(tmp_path: Path) -> None:
    """2 partitions, 2 servers and 2 trainers on 127.0.0.1: each trainer computes its
    partition's rows and reads the other's through its server, layer after layer."""
    nodes = torch.tensor([299, 3, 150, 3, 0])
    expected = _prepare(tmp_path, 2, MODELS, nodes=nodes, dgl_example=True)
    ports = [_free_port() for _ in range(2)]
    ip_config = tmp_path / "ip_config.txt"
    ip_config.write_text("".join(f"127.0.0.1 {port}\n" for port in ports))
    common = {"DGL_NUM_SAMPLER": "0", "DGL_NUM_CLIENT": "2", "DGL_NUM_SERVER": "1",
              "DGL_CONF_PATH": str(tmp_path / "parts" / "g.json"), "DGL_IP_CONFIG": str(ip_config),
              "DGL_GRAPH_FORMAT": "csc,coo"}
    servers = [{**common, "DGL_ROLE": "server", "DGL_SERVER_ID": str(i), "DGL_KEEP_ALIVE": "0",
                "GNN_SHM_TAG": f"-p{i}"} for i in range(2)]
    trainers = [{**common, "DGL_ROLE": "client", "DGL_DIST_MODE": "distributed",
                 "DGL_GROUP_ID": "0", "GNN_PART_ID": str(i), "GNN_SHM_TAG": f"-p{i}"}
                for i in range(2)]
    results = _run(servers + trainers, tmp_path)
    for code, out in results:
        assert code == 0, out[-3000:]
    *ours, (_, want) = expected
    _check(tmp_path, ours)
    # DGL's example loop on the same model (sage, 3 layers), the same run: wrong
    example = torch.from_numpy(numpy.load(tmp_path / f"out{len(ours)}.npy"))
    wrong = (example - want).abs().amax(1) > 1e-3
    assert wrong[0] and wrong.sum() > NODES // 2, int(wrong.sum())
    for port in ports:  # released: no server listens on it any more (a closed connection's
        with socket.socket() as s:  # TIME_WAIT may stay a minute, which SO_REUSEADDR lets pass)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()

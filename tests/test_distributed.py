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

# pytest -m long (CI runs it after the README's quick command): DistDGL servers and trainers in
# processes of their own
pytestmark = pytest.mark.long

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
    # edge inputs: a weight and 4 features per edge
    g.edata["w"], g.edata["ef"] = torch.rand(g.num_edges()) + 0.5, torch.randn(g.num_edges(), 4)
    orig_nid, orig_eid = dgl.distributed.partition_graph(
        g, "g", parts, str(tmp / "parts"), part_method="random", return_mapping=True
    )
    jobs, expected, count = [], [], len(models)
    if nodes is not None:  # the first model again, for nodes= (in DistGraph IDs)
        models = [*models, models[0]]
    if dgl_example:  # and last, DGL's example loop on it
        models = [*models, models[0]]
    for i, (example, cls, init, layers, batch_size, *inputs) in enumerate(models):
        torch.manual_seed(100 + i % len(MODELS))
        kind = inputs[0] if inputs else None
        model = getattr(_load(example), cls)(*([g] if kind == "graph_on_model" else []), **init).eval()
        with torch.no_grad():
            for p in model.parameters():  # biases not zero
                p.add_(0.1 * torch.randn_like(p))
            if kind == "edges":
                ref = model(g, x, g.edata["w"], g.edata["ef"])
            else:
                ref = model(x) if kind == "graph_on_model" else model([g] * layers if layers else g, x)
        torch.save(model.state_dict(), tmp / f"w{i}.pt")
        job = {"module": str(ROOT / "generated_examples" / example / "generated.py"),
               "class": cls, "init": init, "weights": str(tmp / f"w{i}.pt"),
               "batch_size": batch_size, "nodes": None, "out": str(tmp / f"out{i}.npz"),
               "inputs": kind}
        # row i: DistGraph node i's (edge i's: orig_eid[i])
        want = {"0": ref[0][orig_nid], "1": ref[1][orig_eid]} if kind == "edges" else ref[orig_nid]
        if dgl_example and i == len(models) - 1:
            job["style"] = "dgl_example"
        elif nodes is not None and i == count:
            numpy.savez(tmp / "nodes.npz", _=nodes.numpy())
            job["nodes"] = str(tmp / "nodes.npz")
            want = want[nodes]
        jobs.append(job)
        expected.append((example, want))
    _write_spec(tmp, jobs)
    return expected


def _write_spec(tmp: Path, jobs: list[dict]) -> None:
    (tmp / "ip_config.txt").write_text("127.0.0.1 30050\n")  # read, unused, in standalone
    spec = {"graph": "g", "part_config": str(tmp / "parts" / "g.json"),
            "ip_config": str(tmp / "ip_config.txt"), "jobs": jobs}
    (tmp / "spec.json").write_text(json.dumps(spec))


def _output(tmp: Path, i: int):
    """Job i's rows: a tensor, or a dict of them by node type."""
    found = {t: torch.from_numpy(x) for t, x in numpy.load(tmp / f"out{i}.npz").items()}
    return found.get("_", found)


def _check(tmp: Path, expected) -> None:
    for i, (example, want) in enumerate(expected):
        got = _output(tmp, i)
        pairs = [(t, got[t], want[t]) for t in want] if isinstance(want, dict) else [("", got, want)]
        if isinstance(want, dict):
            assert sorted(got) == sorted(want), example
        for ntype, g, w in pairs:
            assert g.shape == w.shape, (example, ntype)
            assert torch.allclose(g, w, atol=1e-5, rtol=1e-4), (
                example, ntype, float((g - w).abs().max()))


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


# heterogeneous examples: (example, class, forward's [g] * layers or None, batch size, nodes=)
HETERO = [
    # GraphConv per relation, norm "both": out-degrees per relation, across partitions
    ("rgcn_hetero", "RGCN", None, 16, {"paper": [99, 0, 42, 0], "institution": [3]}),
    # GATConv per relation (DGL's rgat example), a result of one type: nodes= its IDs
    ("rgat", "RGAT", 3, 20, [5, 98, 0, 5]),
]
HETERO_NODES = {"author": 60, "field": 20, "institution": 10, "paper": 100}


def _prepare_hetero(tmp: Path, parts: int, example: str, cls: str, layers, batch_size, nodes):
    """A heterograph of the example's relations (every node with an in-edge of each relation
    into its type: GATConv refuses one without), partitioned; the model's full-graph forward and
    the jobs: all rows, then nodes=."""
    case = json.loads((ROOT / "generated_examples" / example / "case.json").read_text())
    relations = [tuple(r.split(":")) for r in case["metagraph"].split(",")]
    torch.manual_seed(1)
    data = {}
    for src, rel, dst in relations:
        count = HETERO_NODES[dst]
        heads = torch.cat([torch.arange(count), torch.randint(count, (2 * count,))])
        data[(src, rel, dst)] = (torch.randint(HETERO_NODES[src], (3 * count,)), heads)
    g = dgl.heterograph(data, HETERO_NODES)
    x = {t: torch.randn(HETERO_NODES[t], 12) for t in g.ntypes}
    for t in g.ntypes:
        g.nodes[t].data["feat"] = x[t]
    orig_nid, _ = dgl.distributed.partition_graph(
        g, "g", parts, str(tmp / "parts"), part_method="random", return_mapping=True
    )
    torch.manual_seed(2)
    model = getattr(_load(example), cls)(**case["init"]).eval()
    with torch.no_grad():
        for p in model.parameters():  # biases not zero
            p.add_(0.1 * torch.randn_like(p))
        ref = model([g] * layers if layers else g, x)
    torch.save(model.state_dict(), tmp / "w.pt")
    job = {"module": str(ROOT / "generated_examples" / example / "generated.py"), "class": cls,
           "init": case["init"], "weights": str(tmp / "w.pt"), "batch_size": batch_size,
           "nodes": None, "hetero": True}
    # row i of a type: the DistGraph's node i of the type
    want = {t: r[orig_nid[t]] for t, r in ref.items()} if isinstance(ref, dict) else ref[orig_nid["paper"]]
    if isinstance(nodes, dict):
        numpy.savez(tmp / "nodes.npz", **{t: numpy.array(ids) for t, ids in nodes.items()})
        want_nodes = {t: want[t][torch.tensor(ids)] for t, ids in nodes.items()}
    else:
        numpy.savez(tmp / "nodes.npz", _=numpy.array(nodes))
        want_nodes = want[torch.tensor(nodes)]
    jobs = [{**job, "out": str(tmp / "out0.npz")},
            {**job, "out": str(tmp / "out1.npz"), "nodes": str(tmp / "nodes.npz")}]
    _write_spec(tmp, jobs)
    return [(example, want), (example, want_nodes)]


def _loopback(tmp_path: Path):
    """Environments of 2 servers and 2 trainers on 127.0.0.1 (free ports), 2 partitions: the
    one-host workarounds (tests/distributed_job.py)."""
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
    return servers + trainers, ports


@pytest.mark.parametrize("example", [h[0] for h in HETERO])
def test_heterogeneous_standalone(example: str, tmp_path: Path) -> None:
    """A heterogeneous model on a DistGraph in standalone mode (one partition): a dict of
    DistTensors by node type in, the rows of each type out, and nodes=."""
    (_, cls, layers, batch_size, nodes) = next(h for h in HETERO if h[0] == example)
    expected = _prepare_hetero(tmp_path, 1, example, cls, layers, batch_size, nodes)
    [(code, out)] = _run([{"DGL_DIST_MODE": "standalone"}], tmp_path)
    assert code == 0, out[-3000:]
    _check(tmp_path, expected)


@pytest.mark.parametrize("example", [h[0] for h in HETERO])
def test_heterogeneous_two_partitions(example: str, tmp_path: Path) -> None:
    """2 partitions on loopback: each trainer computes its partition's nodes of each type; a
    GraphConv's norm reads each relation's out-degrees summed over the partitions."""
    (_, cls, layers, batch_size, nodes) = next(h for h in HETERO if h[0] == example)
    expected = _prepare_hetero(tmp_path, 2, example, cls, layers, batch_size, nodes)
    envs, _ = _loopback(tmp_path)
    for code, out in _run(envs, tmp_path):
        assert code == 0, out[-3000:]
    _check(tmp_path, expected)


# edge inputs (DistTensors of g.edata, and a result per edge); a model keeping its graph
EDGES_AND_GRAPH = [
    ("edge_features", "EdgeAwareGNN", {"in_size": 16, "edge_size": 4, "hid_size": 8, "out_size": 3},
     None, 64, "edges"),
    ("citation_gcn", "GCN", {"in_feats": 16, "n_hidden": 8, "n_classes": 4, "n_layers": 2}, None, 64,
     "graph_on_model"),
]


def test_edge_inputs_and_a_graph_on_the_model_standalone(tmp_path: Path) -> None:
    """Edge inputs as DistTensors of g.edata (GraphConv's edge weights, GINEConv's and EGATConv's
    edge features; EGATConv's result per edge, a DistTensor by the DistGraph's edge IDs), and a
    model that keeps its graph (self.g = g: inference is given the DistGraph)."""
    expected = _prepare(tmp_path, 1, EDGES_AND_GRAPH)
    [(code, out)] = _run([{"DGL_DIST_MODE": "standalone"}], tmp_path)
    assert code == 0, out[-3000:]
    _check(tmp_path, expected)


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
        # built as generated (case.json's init): a model built otherwise is refused before this
        ("sage_variants", "SAGEVariants", json.loads(
            (ROOT / "generated_examples" / "sage_variants" / "case.json").read_text())["init"], {}),
        # a message-passing module of the user's: its reduce may read a node's in-edges in order
        ("custom_mp", "CustomNet", json.loads(
            (ROOT / "generated_examples" / "custom_mp" / "case.json").read_text())["init"], {"extra_inputs": 2}),
        ("gnn_film", "GNNFiLM", json.loads(
            (ROOT / "generated_examples" / "gnn_film" / "case.json").read_text())["init"], {"hetero": True}),
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
    assert "add_self_loop at `g = g.remove_self_loop().add_self_loop()`" in messages[1]
    assert "model.py" not in messages[1]  # a shipped module quotes the line, not a file it lacks
    assert "self.layers.2 (SAGEConv with an LSTM over each node's in-edges" in messages[2]
    assert "self.conv1 (GatedMeanConv) is a message-passing module of yours at" in messages[3]
    assert "not done yet where layer 1 is a heterogeneous layer of yours" in messages[4], messages[4]
    assert not (tmp_path / "files").exists()


def test_two_partitions_on_loopback(tmp_path: Path) -> None:
    """2 partitions, 2 servers and 2 trainers on 127.0.0.1: each trainer computes its
    partition's rows and reads the other's through its server, layer after layer."""
    nodes = torch.tensor([299, 3, 150, 3, 0])
    # and edge inputs, a result per edge: by the DistGraph's edge IDs
    expected = _prepare(tmp_path, 2, [*MODELS, EDGES_AND_GRAPH[0]], nodes=nodes, dgl_example=True)
    # then jobs where every trainer must raise: trainer 1's input makes its first layer raise;
    # the trainers ask for other nodes=
    spec = json.loads((tmp_path / "spec.json").read_text())
    sage = {**spec["jobs"][0], "raises": True}
    for rank, ids in enumerate([[1, 2], [1, 3]]):
        numpy.savez(tmp_path / f"nodes_of_{rank}.npz", _=numpy.array(ids))
    spec["jobs"] += [
        {**sage, "bad_rank": 1, "out": str(tmp_path / "failed")},
        {**sage, "out": str(tmp_path / "other_nodes"),
         "nodes_by_rank": [str(tmp_path / f"nodes_of_{rank}.npz") for rank in range(2)]},
    ]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    envs, ports = _loopback(tmp_path)
    results = _run(envs, tmp_path)
    for code, out in results:
        assert code == 0, out[-3000:]
    *ours, (_, want) = expected
    _check(tmp_path, ours)
    # DGL's example loop on the same model (sage, 3 layers), the same run: wrong
    example = _output(tmp_path, len(ours))
    wrong = (example - want).abs().amax(1) > 1e-3
    assert wrong[0] and wrong.sum() > NODES // 2, int(wrong.sum())
    # a trainer's layer raised: it raises its error, the other one naming it; none hangs
    failed = [(tmp_path / f"failed.{rank}").read_text() for rank in range(2)]
    assert "inference failed in trainer 1 of 2" in failed[0], failed[0]
    assert "mat1 and mat2 shapes cannot be multiplied" in failed[1], failed[1]
    for rank in range(2):  # nodes= differ: a ValueError in every trainer
        message = (tmp_path / f"other_nodes.{rank}").read_text()
        assert "ValueError: nodes must be the same in every trainer" in message, message
    for port in ports:  # released: no server listens on it any more (a closed connection's
        with socket.socket() as s:  # TIME_WAIT may stay a minute, which SO_REUSEADDR lets pass)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()

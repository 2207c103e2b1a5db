"""One process of a DistDGL run of generated modules' `inference`, for tests/test_distributed.py:
a server or a trainer (as DGL's tools/launch.py starts one script in every role, told which by
DGL_ROLE), or the single process of standalone mode (DGL_DIST_MODE=standalone).

usage: python -m tests.distributed_job SPEC.json

SPEC: {"graph": name, "part_config": path, "ip_config": path, "jobs": [{"module": path of a
generated module, "class": name, "init": kwargs, "weights": path, "blocks": layers or null (
forward takes [g] * layers), "batch_size": n, "nodes": path or null, "out": path, "style":
"dgl_example" for DGL's own example loop in place of `inference`; "refused": true, with
"storage" or not, for the message of the ValueError `inference` raises; "hetero": true for
features by node type; "raises": true where every trainer must raise (its message to
out.RANK), with "bad_rank" (that trainer's input makes its layer raise) or "nodes_by_rank"}]}.
Trainer 0 writes each job's rows (all of them, or those of `nodes`) to its "out" (.npz).

What works around one-host limits of DGL's distributed package (dgl 1.1.3), here and never in
the generated code: several servers on one host share their shared-memory names, so each pair
(server, its trainer) tags them (GNN_SHM_TAG), and servers run without shared memory for the
graph, started as DGL's own tests start them (GNN_DISABLE_SHM); DGL takes a trainer's machine
from the first line of the IP config with a local address, the same for every trainer on one
host, so each trainer is told its partition (GNN_PART_ID)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")

import numpy
import torch

import dgl
from dgl.distributed import kvstore, rpc_client

torch.set_num_threads(1)
spec = json.load(open(sys.argv[1]))

# the generated modules, before initialize(): in every role, as the runtime's docstring says (the
# servers must know the flush request each module registers)
modules = {}
for job in spec["jobs"]:
    if job["module"] not in modules:
        name = f"generated_{len(modules)}"
        loader = importlib.util.spec_from_file_location(name, job["module"])
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module
        loader.loader.exec_module(module)
        modules[job["module"]] = module

if "GNN_SHM_TAG" in os.environ:  # one host: shared-memory names per partition (see above)
    _empty_shared_mem = kvstore.empty_shared_mem
    kvstore.empty_shared_mem = lambda name, *args: _empty_shared_mem(
        name + os.environ["GNN_SHM_TAG"], *args
    )
if os.environ.get("DGL_ROLE") == "server":
    # what initialize() does for a server, without shared memory for the graph, as DGL's
    # tests/distributed/ start several partitions' servers on one host
    dgl.distributed.DistGraphServer(
        int(os.environ["DGL_SERVER_ID"]),
        os.environ["DGL_IP_CONFIG"],
        int(os.environ["DGL_NUM_SERVER"]),
        int(os.environ["DGL_NUM_CLIENT"]),
        os.environ["DGL_CONF_PATH"],
        disable_shared_mem=True,
        graph_format=["csc", "coo"],
    ).start()
    sys.exit(0)
if "GNN_PART_ID" in os.environ:  # one host: each trainer's machine is its partition's
    rpc_client.get_local_machine_id = lambda namebook: int(os.environ["GNN_PART_ID"])
dgl.distributed.initialize(spec["ip_config"])
if os.environ.get("DGL_DIST_MODE", "standalone") == "standalone":
    g = dgl.distributed.DistGraph(spec["graph"], part_config=spec["part_config"])
else:  # servers without shared memory: the partition book from the files
    book = dgl.distributed.load_partition_book(
        spec["part_config"], int(os.environ["GNN_PART_ID"])
    )[0]
    g = dgl.distributed.DistGraph(spec["graph"], gpb=book)



@torch.no_grad()
def dgl_example_inference(model, g, x, batch_size):
    """The layer-wise loop of DGL's distributed GraphSAGE example (dmlc/dgl,
    examples/distributed/graphsage/node_classification.py, DistSAGE.inference) as its users
    take it, for a SAGE of `layers` with ReLU between: node IDs given to node_split, which
    takes a mask (node 0 is in no trainer's split), and every hidden layer written into one
    DistTensor "h" (from 3 layers, a layer overwrites rows that are still to be read)."""
    model.eval()
    book = g.get_partition_book()
    nodes = dgl.distributed.node_split(numpy.arange(g.num_nodes()), book, force_even=True)
    for i, layer in enumerate(model.layers):
        last = i == len(model.layers) - 1
        y = dgl.distributed.DistTensor(
            (g.num_nodes(), layer._out_feats), torch.float32, "h_last" if last else "h",
            persistent=True,
        )
        loader = dgl.dataloading.DistNodeDataLoader(
            g, nodes, dgl.dataloading.NeighborSampler([-1]), batch_size=batch_size,
            shuffle=False, drop_last=False,
        )
        for input_nodes, output_nodes, blocks in loader:
            h = x[input_nodes]
            h = layer(blocks[0], (h, h[: blocks[0].num_dst_nodes()]))
            y[output_nodes] = h if last else torch.relu(h)
        x = y
        g.barrier()
    return x


def _inputs(job):
    """The features inference is given: g.ndata["feat"], or by node type for a heterogeneous
    model; "bad_rank": that trainer's are zeros of another width (its first layer raises)."""
    if job.get("hetero"):
        return {t: g.nodes[t].data["feat"] for t in g.ntypes}
    if job.get("inputs") == "edges":  # forward(g, x, edge_weight, edge_feat)
        return g.ndata["feat"], g.edata["w"], g.edata["ef"]
    if job.get("bad_rank") == g.rank():
        return torch.zeros(g.num_nodes(), 7)
    return g.ndata["feat"]


def _nodes(job):
    """nodes=: IDs, or a dict of them by type, from a .npz (its "_" entry: IDs); "nodes_by_rank":
    each trainer its own (they differ)."""
    path = job["nodes"]
    if job.get("nodes_by_rank"):
        path = job["nodes_by_rank"][g.rank()]
    if path is None:
        return None
    found = {k: torch.from_numpy(v) for k, v in numpy.load(path).items()}
    return found.get("_", found)


def _save(job, out, nodes):
    """Trainer 0 writes every row (of each type: .npz by type), or those of nodes."""
    if g.rank() != 0:
        return
    if isinstance(out, tuple):  # "0", "1", ...
        out = {str(i): x for i, x in enumerate(out)}
    elif not isinstance(out, dict):
        out = {"_": out}  # one tensor: "_"
        nodes = None if nodes is None else {"_": nodes}
    rows = {t: x if nodes is not None else x[torch.arange(len(x))] for t, x in out.items()}
    numpy.savez(job["out"], **{t: x.numpy() for t, x in rows.items()})


for job in spec["jobs"]:
    graph = [g] if job.get("inputs") == "graph_on_model" else []  # a model keeping its graph
    model = getattr(modules[job["module"]], job["class"])(*graph, **job["init"])
    if job.get("raises"):  # every trainer raises: its message to "out" with its rank
        model.load_state_dict(torch.load(job["weights"]))
        try:
            model.inference(g, _inputs(job), job["batch_size"], "cpu", nodes=_nodes(job))
        except (ValueError, RuntimeError) as error:
            open(f"{job['out']}.{g.rank()}", "w").write(f"{type(error).__name__}: {error}")
            continue
        sys.exit(f"did not raise: {job}")
    if job.get("refused"):  # a ValueError whose message goes to "out"
        try:
            inputs = [_inputs(job)] * (1 + job.get("extra_inputs", 0))  # refused before reading them
            model.inference(g, *inputs, 10, "cpu", storage=job.get("storage"))
        except ValueError as error:
            open(job["out"], "w").write(str(error))
            continue
        sys.exit(f"not refused: {job}")
    model.load_state_dict(torch.load(job["weights"]))
    nodes = _nodes(job)
    if job.get("style") == "dgl_example":
        out = dgl_example_inference(model, g, g.ndata["feat"], job["batch_size"])
    else:
        inputs = _inputs(job)
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        out = model.inference(g, *inputs, job["batch_size"], "cpu", nodes=nodes)
    _save(job, out, nodes)
    del out  # DistTensors: freed in every trainer at once
    g.barrier()

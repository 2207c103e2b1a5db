"""What giving each batch's block as a graph costs (gnn_codegen/analysis/block_as_graph.py): one layer of
a user's mean-and-Linear module that runs on a block and on a graph alike, over a random graph,
through the generated runtime, called (a) on the block, (b) on `_block_as_graph(block)` with the
first num_dst_nodes() rows kept. The median of a few runs each, in turn.

    python benchmarks/block_as_graph.py [--nodes 100000] [--degree 10] [--batch-size 1024]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import dgl
import dgl.function as fn
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnn_codegen.render.runtime import block_as_graph, runtime_class  # noqa: E402


class MeanConv(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, graph, feat):
        with graph.local_scope():
            graph.srcdata["h"] = feat
            graph.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
            return self.linear(graph.dstdata["h"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--degree", type=int, default=10)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    g = dgl.rand_graph(args.nodes, args.nodes * args.degree)
    x = torch.randn(args.nodes, args.width)
    conv = MeanConv(args.width).eval()
    layers = {
        "block": lambda block, h: conv(block, h),
        "as graph": lambda block, h: conv(block_as_graph(block), h)[: block.num_dst_nodes()],
    }
    times: dict[str, list[float]] = {name: [] for name in layers}
    results = {}
    with torch.no_grad():
        for _ in range(args.runs):
            for name, layer in layers.items():
                batches = runtime_class()(conv, g, args.batch_size, "cpu", 2**30, False)
                started = time.perf_counter()
                results[name] = batches.map(layer, source_rows=dict(h=x))
                times[name].append(time.perf_counter() - started)
    assert torch.allclose(results["block"], results["as graph"], atol=1e-5)
    block, graph = statistics.median(times["block"]), statistics.median(times["as graph"])
    print(f"{args.nodes} nodes, {args.nodes * args.degree} edges, width {args.width}, batches of "
          f"{args.batch_size}, {torch.get_num_threads()} threads: block {block:.2f} s, as graph "
          f"{graph:.2f} s, ratio {graph / block:.2f}")


if __name__ == "__main__":
    main()

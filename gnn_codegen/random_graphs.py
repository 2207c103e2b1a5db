"""Random graphs made from a seeded torch Generator (never dgl.rand_graph, which samples with
OpenMP and gave different graphs in different processes under load): the check's graphs and
the relation graphs of its heterographs."""

from __future__ import annotations

from typing import Iterable

import dgl
import torch


def random_graph(num_nodes: int, avg_degree: int = 5, seed: int = 0, zero_in_degree: bool = True) -> dgl.DGLGraph:
    """Edges drawn uniformly; with zero_in_degree, one node in ten receives no edge at all,
    otherwise every node also gets a self-loop."""
    gen = torch.Generator().manual_seed(seed)
    return dgl.graph(random_edges(num_nodes, num_nodes * avg_degree, gen, zero_in_degree), num_nodes=num_nodes)


def random_edges(num_nodes: int, num_edges: int, gen: torch.Generator, zero_in_degree: bool,
                 sinks: tuple[int, int] = (10, 3)) -> tuple[torch.Tensor, torch.Tensor]:
    """(sources, destinations) drawn uniformly among num_nodes nodes; with zero_in_degree, the
    edges into the nodes v with v % sinks[0] == sinks[1] dropped (one node in ten by default:
    they receive none), otherwise a self-loop on every node added."""
    src = torch.randint(0, max(num_nodes, 1), (num_edges,), generator=gen)
    dst = torch.randint(0, max(num_nodes, 1), (num_edges,), generator=gen)
    if zero_in_degree:
        every, residue = sinks
        keep = dst % every != residue
        return src[keep], dst[keep]
    loops = torch.arange(num_nodes)
    return torch.cat([src, loops]), torch.cat([dst, loops])


def random_relations(relations: Iterable[tuple[str, str, str]], num_nodes: int, seed: int = 0,
                     zero_in_degree: bool = True, avg_degree: int = 3) -> dgl.DGLHeteroGraph:
    """A heterograph of these relations with num_nodes nodes of each of their types, each
    relation a random graph of random_edges (with zero_in_degree one node in ten of each type
    without its in-edges, else a self-loop on every node): the metapath models' check graphs
    and the relation graphs'."""
    gen = torch.Generator().manual_seed(seed)
    data = {rel: random_edges(num_nodes, num_nodes * avg_degree, gen, zero_in_degree) for rel in relations}
    return dgl.heterograph(data, num_nodes_dict={t: num_nodes for s, _, d in data for t in (s, d)})

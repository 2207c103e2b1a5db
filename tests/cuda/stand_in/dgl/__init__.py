"""A stand-in for the few parts of DGL's public API that the generated inference of the sage,
gcn and gat examples calls, written with torch alone, so that this code runs on a real GPU
where PyPI's DGL (CPU only) cannot: graphs and blocks as CSC arrays, DGL's message-passing
ops as index_add_, and the three convolutions as their parameters.

It is put first on sys.path by tests/cuda/check.py only (its folder, tests/cuda/stand_in). It does not stand in for DGL's CUDA
kernels: what the GPU run proves is gnn-codegen's own code on a GPU (streams, pinned memory,
asynchronous copies, host and device never mixed), not DGL's. tests/test_cuda_stand_in.py
shows on the CPU, in CI, that it computes what DGL computes for these examples.
"""

import torch

from . import distributed, function, nn, ops, utils  # noqa: F401  (dgl.nn, dgl.ops, ... as DGL has them)

EID = "_ID"
NID = "_ID"


class DGLError(Exception):
    pass


class Graph:
    """A graph (or a block: num_src_nodes sources, num_dst_nodes destinations) held as CSC
    arrays: the in-edges of destination v are at positions indptr[v]:indptr[v + 1], their
    sources in indices and their edge IDs in edge_ids."""

    def __init__(self, indptr, indices, edge_ids, num_src, num_dst, is_block):
        self.indptr, self.indices, self.edge_ids = indptr, indices, edge_ids
        self._num_src, self._num_dst, self.is_block = num_src, num_dst, is_block
        self.edata = {}

    @property
    def device(self):
        return self.indices.device

    @property
    def canonical_etypes(self):
        # one node type and one edge type, named as DGL names a homogeneous graph's
        return [("_N", "_E", "_N")]

    def num_nodes(self):
        return self._num_dst

    def num_src_nodes(self):
        return self._num_src

    def num_dst_nodes(self):
        return self._num_dst

    def num_edges(self):
        return len(self.indices)

    def formats(self, formats=None):
        if formats is not None:
            return self
        return {"created": ["csc"], "not created": []}

    def adj_tensors(self, fmt):
        if fmt != "csc":
            raise DGLError("the stand-in holds CSC arrays only")
        return self.indptr, self.indices, self.edge_ids

    def in_degrees(self):
        return self.indptr[1:] - self.indptr[:-1]

    def out_degrees(self):
        return torch.bincount(self.indices, minlength=self._num_src)

    def to(self, device, non_blocking=False):
        moved = Graph(
            *(
                t.to(device, non_blocking=non_blocking)
                for t in (self.indptr, self.indices, self.edge_ids)
            ),
            self._num_src,
            self._num_dst,
            self.is_block,
        )
        moved.edata = {
            k: v.to(device, non_blocking=non_blocking) for k, v in self.edata.items()
        }
        return moved

    def pin_memory_(self):
        for name in ("indptr", "indices", "edge_ids"):
            setattr(self, name, getattr(self, name).pin_memory())
        return self

    def is_pinned(self):
        return self.indices.is_pinned()

    # where each CSC position's edge goes, and its edge ID
    def _destinations(self):
        counts = self.in_degrees()
        return torch.repeat_interleave(
            torch.arange(self._num_dst, device=self.device), counts
        )


def graph_from_csc(indptr, indices, edge_ids, num_nodes):
    return Graph(indptr, indices, edge_ids, num_nodes, num_nodes, is_block=False)


def create_block(data_dict, num_src_nodes, num_dst_nodes):
    fmt, (indptr, indices, edge_ids) = data_dict
    if fmt != "csc":
        raise DGLError("the stand-in builds blocks from CSC arrays only")
    return Graph(indptr, indices, edge_ids, num_src_nodes, num_dst_nodes, is_block=True)

"""Issue 40: the heterogeneous runtime's blocks of all sources (_HeteroBatches.
_block_of_all_sources), which every batch of a layer whose relations read their source rows
in place is given. Made from the slices of g's CSC arrays (nothing sorted, the source IDs a
view), once per range of consecutive IDs and given to every layer: rgcn-hetero's
EntityClassify rebuilt them for each of its three layers (a fifth of its time at 200k
papers). Also GraphConv's in-degrees, read once per call where its check and its norm both
want them."""

from __future__ import annotations

import json
from typing import Any

import dgl
import dgl.nn as dglnn
import pytest
import torch

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph
from gnn_codegen.render.hetero import RUNTIME
from gnn_codegen.verify.harness import import_source
from tests.cases import CASES_BY_NAME, generate_case


def _entity() -> tuple[Any, torch.nn.Module, dgl.DGLHeteroGraph, dict[str, torch.Tensor]]:
    """rgcn-hetero's EntityClassify (generated_examples/entity_classify), weights perturbed,
    on a random heterograph of its node counts, and forward's result."""
    case = CASES_BY_NAME["entity_classify"]
    generated = generate_case(case)
    module = import_source(generated.source, case.folder, "entity_blocks")
    init = json.loads(case.options.init)
    model = getattr(module, generated.loaded.class_name)(**init).eval()
    perturb(model, 3)
    g = random_heterograph(parse_metagraph(case.options.metagraph), init["num_nodes"], seed=3)
    with torch.no_grad():
        expected = model(g)
    return module, model, g, expected


class _Creations:
    """Counts dgl.create_block's calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        create = dgl.create_block

        def counted(*args: Any, **kwargs: Any) -> dgl.DGLGraph:
            self.count += 1
            return create(*args, **kwargs)

        monkeypatch.setattr(dgl, "create_block", counted)


@pytest.mark.parametrize("batch_size", [7, 32, 1000])
def test_a_range_s_block_is_built_once_for_every_layer(batch_size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three layers into game and user: one block per batch range of each type, not three;
    the result forward's."""
    _, model, g, expected = _entity()
    creations = _Creations(monkeypatch)
    out = model.inference(g, batch_size=batch_size, device="cpu")
    ranges = sum(-(-g.num_nodes(t) // batch_size) for t in ("game", "user"))
    assert creations.count == ranges
    for t in expected:
        assert torch.allclose(out[t], expected[t], atol=1e-5), (t, (out[t] - expected[t]).abs().max())


def test_a_layer_s_blocks_are_made_together_before_its_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made one after another before the first layer's batches of a type, not among each
    batch's temporaries (where, kept, they fragmented the heap: a third more peak memory)."""
    module, model, g, _ = _entity()
    runtime = getattr(module, RUNTIME)
    found, block_of = [], runtime._block_of_all_sources

    def recorded(self: Any, ntype: str, batch: Any) -> dgl.DGLGraph:
        found.append((ntype, sum(key[0] == ntype for key in self.blocks)))
        return block_of(self, ntype, batch)

    monkeypatch.setattr(runtime, "_block_of_all_sources", recorded)
    model.inference(g, batch_size=8, device="cpu")
    assert found and all(count == -(-g.num_nodes(t) // 8) for t, count in found)


def test_nodes_of_one_type_build_their_blocks_from_their_in_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """nodes=: batches of IDs, not ranges, each block made from their in-edges' CSC (not
    kept): forward's rows of those nodes."""
    _, model, g, expected = _entity()
    ids = {"user": torch.tensor([5, 0, 5, 88]), "game": torch.tensor([69])}
    out = model.inference(g, batch_size=3, device="cpu", nodes=ids)
    for t, i in ids.items():
        assert torch.allclose(out[t], expected[t][i], atol=1e-5)


def test_a_kept_block_is_the_block_of_its_in_edges_and_keeps_nothing_a_layer_sets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The block built from CSC slices has every in-edge of the batch in g's CSC order, as the
    block from (source, destination) pairs had; each caller gets a view of its own, so data a
    layer sets on its block is gone for the next layer's batch of the same range."""
    module, model, g, _ = _entity()
    batches = getattr(module, RUNTIME)(model, g, 16, "cpu", 2**30, False)
    for batch in (slice(16, 32), torch.tensor([3, 1, 60])):
        block = batches._block_of_all_sources("user", batch)
        ids = torch.arange(batch.start, batch.stop) if isinstance(batch, slice) else batch
        for rel in block.canonical_etypes:
            src, dst = block.edges(etype=rel, order="eid")
            if rel[2] != "user":
                assert len(src) == 0
                continue
            # the old block's edges, made from these (source, destination) pairs, in order
            expected_src, expected_dst = batches._in_edges(rel, batch)
            assert torch.equal(src, expected_src) and torch.equal(dst, expected_dst)
            # its edge IDs spelled out, as a layer's helper reads them from the CSC arrays
            assert torch.equal(block.adj_tensors("csc", etype=rel)[2], torch.arange(len(src)))
            assert len(src) == sum(len(g.in_edges(int(v), etype=rel, form="eid")) for v in ids)
        assert block.num_src_nodes("game") == g.num_nodes("game")
        assert block.num_dst_nodes("user") == len(ids)
    first = batches._block_of_all_sources("user", slice(0, 16))
    first.srcnodes["user"].data["h"] = torch.zeros(g.num_nodes("user"), 2)
    again = batches._block_of_all_sources("user", slice(0, 16))
    assert "h" not in again.srcnodes["user"].data
    assert len(batches.blocks) == 2  # the two ranges; the batch of IDs is not kept


class _InDegrees:
    """Counts DGLGraph.in_degrees' calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        in_degrees = dgl.DGLGraph.in_degrees

        def counted(graph: dgl.DGLGraph, *args: Any, **kwargs: Any) -> torch.Tensor:
            self.count += 1
            return in_degrees(graph, *args, **kwargs)

        monkeypatch.setattr(dgl.DGLGraph, "in_degrees", counted)


@pytest.mark.parametrize("allow_zero_in_degree", [False, True])
@pytest.mark.parametrize("norm", ["right", "both", "none"])
def test_graph_conv_reads_a_block_s_in_degrees_once(norm: str, allow_zero_in_degree: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """GraphConv's check of zero in-degrees and its norm by in-degree read them once per
    block between them (they read them twice), and only where one of them reads them."""
    from gnn_codegen.trace.write_out import HELPERS

    torch.manual_seed(4)
    src, dst = torch.randint(0, 30, (90,)), torch.arange(90) % 12
    block = dgl.create_block((src, dst), num_src_nodes=30, num_dst_nodes=12)
    block.create_formats_()
    conv = dglnn.GraphConv(6, 5, norm=norm, allow_zero_in_degree=allow_zero_in_degree)
    feat = torch.randn(30, 6)
    with torch.no_grad():
        expected = conv(block, feat)
        degrees = _InDegrees(monkeypatch)
        out_degrees = block.out_degrees() if norm == "both" else None
        source = HELPERS["graph_conv_source"](conv, feat, out_degrees, False)
        got = HELPERS["graph_conv_aggregate"](conv, block, source, False)
    # at most once: none where the norm needs none, or where the in-edge sum's CSC offsets give
    # them (_in_edge_sum on a CPU)
    assert degrees.count <= (0 if allow_zero_in_degree and norm == "none" else 1)
    assert torch.allclose(got, expected, atol=1e-6)

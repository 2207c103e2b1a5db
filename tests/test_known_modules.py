"""Each entry of the known-modules table, pinned against the full-graph forward: what the
table calls exact (or exact after the out-degree rescale) is exact on blocks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import dgl
import pytest
import torch

from gnn_codegen.analysis.known_modules import EXACT, sources_in_place
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.trace.write_out import HELPERS
from gnn_codegen.verify.check import check
from tests.cases import EXAMPLES
from tests.models.gcn2_settings import ACTIVATIONS, SETTINGS
from tests.row_counter import RowCounter

# pytest -m long (CI runs it after the README's quick command): every verified module kind in
# every configuration, on blocks
pytestmark = pytest.mark.long

MODEL = Path(__file__).parent / "models" / "known_modules.py"
KINDS = [
    "GraphConv-both", "GraphConv-left", "GraphConv-right", "GraphConv-none",
    "GraphConv-both-tanh", "GraphConv-left-ReLU-no-bias",
    "SAGEConv-mean", "SAGEConv-gcn", "SAGEConv-pool", "SAGEConv-lstm", "SAGEConv-mean-tanh-LayerNorm",
    "GATConv", "GATConv-residual", "GATv2Conv", "GINConv", "GINConv-mean-learn-eps", "DotGatConv", "EdgeConv",
]


@pytest.mark.parametrize("kind", KINDS)
def test_known_module_is_exact_on_blocks(kind: str) -> None:
    generated = generate_all(f"{MODEL}:TwoConvs", GenerateOptions(init=json.dumps({"kind": kind})))
    result = check(generated, num_nodes=211, batch_sizes=(1, 13, 211))
    assert result.ok, f"{kind}: max |difference| {result.max_abs_diff}"
    assert result.zero_in_degree_nodes > 0


def test_every_exact_entry_is_pinned() -> None:
    # GINEConv and EGATConv take edge features: generated_examples/edge_features pins them
    # (tests/test_equivalence.py).
    pinned = {k.split("-")[0] for k in KINDS} | {"GINEConv", "EGATConv"}
    assert {cls.__name__ for cls in EXACT} <= pinned
    assert "GINEConv" in (EXAMPLES / "edge_features" / "model.py").read_text()
    assert "EGATConv" in (EXAMPLES / "edge_features" / "model.py").read_text()


# Per kind, whether each of TwoConvs' layers (6 -> 10, 10 -> 4) is written out (write_out.py):
# GraphConv with any norm, SAGEConv("mean") and GATConv (one input width) always, each with its
# work per source row (when it has any) as an op of its own, which the cut places once per node.
WRITTEN_OUT = {
    "GraphConv-both": ["graph_conv"] * 2, "GraphConv-left": ["graph_conv"] * 2,
    "GraphConv-right": ["graph_conv"] * 2, "GraphConv-none": ["graph_conv"] * 2,
    "GraphConv-both-tanh": ["graph_conv"] * 2, "GraphConv-left-ReLU-no-bias": ["graph_conv"] * 2,
    "SAGEConv-mean": ["sage_conv_mean"] * 2, "SAGEConv-mean-tanh-LayerNorm": ["sage_conv_mean"] * 2,
    "GATConv": ["gat_conv"] * 2, "GATConv-residual": ["gat_conv"] * 2,
}
# Per kind, the work each layer does per source row (write_out.py): GraphConv's norm by
# out-degree ("both", "left") and its weight when it narrows (10 -> 4), SAGEConv's fc_neigh when
# it narrows, GATConv's fc and attention term.
SOURCE_WORK = {
    "GraphConv-both": [True, True], "GraphConv-left": [True, True], "GraphConv-both-tanh": [True, True],
    "GraphConv-left-ReLU-no-bias": [True, True], "GraphConv-right": [False, True], "GraphConv-none": [False, True],
    "SAGEConv-mean": [False, True], "SAGEConv-mean-tanh-LayerNorm": [False, True],
    "GATConv": [True, True], "GATConv-residual": [True, True],
}


@pytest.mark.parametrize("kind", KINDS)
def test_written_out_where_the_form_is_known(kind: str) -> None:
    generated = generate_all(f"{MODEL}:TwoConvs", GenerateOptions(init=json.dumps({"kind": kind})))
    program = generated.program
    helpers = [op.helper.rsplit("_", 1)[0] if op.helper != "sage_conv_mean" else op.helper
               for op in program.ops if op.kind == "mp"]
    written = WRITTEN_OUT.get(kind, [])
    assert [h for h in helpers if h] == written
    per_node = [any(op.note and program.module_path(op) == path or op.note and op.target == f"{path}.fc_neigh"
                    for op in program.ops) for path in ("conv1", "conv2")]
    assert per_node == SOURCE_WORK.get(kind, [False, False])


def test_graphconv_written_out_needs_the_full_out_degrees() -> None:
    """The written-out GraphConv scales source rows by g's out-degrees, once per node; with the
    degrees a 1-hop block sees instead (its own edges only), the result is wrong."""
    generated = generate_all(f"{MODEL}:TwoConvs", GenerateOptions(init='{"kind": "GraphConv-both"}'))
    line = "out_degrees = g.out_degrees()  # of the whole graph, once"
    assert line in generated.source
    wrong = "out_degrees = torch.ones(g.num_nodes())"  # as if no source had edges out of the batch
    broken_generated = generated.__class__(**{**generated.__dict__, "source": generated.source.replace(line, wrong)})
    assert not check(broken_generated, num_nodes=211, batch_sizes=(13,)).ok


IN_PLACE = {
    "GraphConv-right", "GraphConv-none", "SAGEConv-mean", "SAGEConv-gcn", "SAGEConv-mean-tanh-LayerNorm",
    "GINConv", "GINConv-mean-learn-eps",
}


@pytest.mark.parametrize("kind", KINDS)
def test_sources_in_place_only_where_no_work_per_source_row(kind: str) -> None:
    """known_modules.sources_in_place says a convolution computes nothing per source row, so
    that blocks whose sources are all of g's nodes cost it nothing: run each convolution on
    such a block (97 sources, 5 destinations, 23 edges) and watch every torch function's result."""
    spec = importlib.util.spec_from_file_location("known_modules_models", MODEL)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    model = models.TwoConvs(kind).eval()
    gen = torch.Generator().manual_seed(0)
    num_src, num_dst, num_edges = 97, 5, 23
    dst = torch.sort(torch.randint(0, num_dst, (num_edges,), generator=gen)).values
    src = torch.randint(0, num_src, (num_edges,), generator=gen)
    block = dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=num_dst)
    claims = []
    for conv, width in ((model.conv1, 6), (model.conv2, model.conv2_in_size)):
        x = torch.randn(num_src, width, generator=gen)
        counter = RowCounter()
        claims.append(sources_in_place(conv))
        with torch.no_grad(), counter:  # the generated loop passes a pair where it claims so
            conv(block, (x, x[10 : 10 + num_dst]) if claims[-1] else x)
        if claims[-1]:
            assert num_src not in counter.rows, f"{kind}: computes on every source row"
        elif kind.split("-")[0] in ("GATConv", "GATv2Conv", "DotGatConv", "EdgeConv", "GraphConv"):
            assert num_src in counter.rows  # the test sees per-source work where there is some
    # widening first layers (6 -> 10) of the aggregating kinds; narrowing second layers (10 -> 4)
    # of SAGEConv / GraphConv transform source rows first, GINConv never does
    assert claims == [kind in IN_PLACE, kind.startswith("GINConv")]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_gcn2_conv_helper_equals_dgls_module_on_blocks(settings: dict) -> None:
    """GCN2Conv written out (trace/gcn2_write_out.py), in each of its settings: on each block of
    all in-edges of some destination nodes, _gcn2_conv_aggregate given the source
    rows scaled by the whole graph's norm (and the destination rows of feat_0 and the norm)
    equals DGL's GCN2Conv on the whole graph at those nodes."""
    torch.manual_seed(0)
    options = {k: ACTIVATIONS[v] if k == "activation" else v for k, v in settings.items()}
    conv = dgl.nn.GCN2Conv(5, layer=2, alpha=0.3, lambda_=0.8, **options).eval()
    with torch.no_grad():
        for p in conv.parameters():
            p.uniform_(-1, 1)
    g = dgl.rand_graph(60, 240)
    if not settings.get("allow_zero_in_degree"):
        g = dgl.add_self_loop(g)
    feat, feat_0 = torch.randn(60, 5), torch.randn(60, 5)
    with torch.no_grad():
        expected = conv(g, feat, feat_0)
        norm = g.in_degrees().to(feat).clamp(min=1).pow(-0.5).unsqueeze(1)
        for dst in (torch.arange(60), torch.tensor([3, 17, 41, 59]), torch.arange(10, 30)):
            block = dgl.to_block(dgl.in_subgraph(g, dst), dst)
            src = block.srcdata[dgl.NID]
            got = HELPERS["gcn2_conv_aggregate"](conv, block, (feat * norm)[src], feat_0[dst], norm[dst])
            torch.testing.assert_close(got, expected[dst], atol=1e-5, rtol=1e-5)

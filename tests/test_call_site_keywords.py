"""Calls a reviewer reads without opening the helpers or the runtime (issue 37): GraphConv's
helpers take no `weight_first=` at the call, deciding as DGL does from the module whether W
comes before the sum (where the layer narrows), which the comment on the source step says; they
leave out what is their default (`out_degrees=None` where the norm reads no
out-degrees); `batches.map(..., in_place=True)` is explained where a module first passes it,
and a layer that gathers its source rows instead says why. Each exact."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO

MODELS = "tests/models/call_sites.py"
INIT = '{"in_size": 6, "hid_size": 8, "out_size": 3}'


def _method(name: str, monkeypatch: pytest.MonkeyPatch, **options) -> str:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"{MODELS}:{name}", GenerateOptions(init=INIT, **options))
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"
    source = generated.source
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def test_a_narrowing_layer_leaves_its_weights_place_to_the_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _method("NarrowingGCN", monkeypatch)
    assert "(and weight, where it narrows)" in " ".join(method.replace("#", "").split()), method
    method = re.sub(r"\s+", "", method)
    assert "weighted=" not in method and "weight_first" not in method, method
    # conv2 narrows, conv1 widens: their calls alike all the same
    assert re.search(r"_graph_conv_source\(self\.conv2,h,out_degrees[,)]", method), method
    assert re.search(r"_graph_conv_aggregate\(self\.conv2,block,feat\w*\)", method), method
    assert re.search(r"_graph_conv_aggregate\(self\.conv1,block,feat\w*\)", method), method


def test_no_out_degrees_where_the_norm_reads_none(monkeypatch: pytest.MonkeyPatch) -> None:
    method = re.sub(r"\s+", "", _method("EdgeWeightedGCN", monkeypatch, feat_dims="x=6"))
    assert "out_degrees" not in method, method
    assert re.search(r"_graph_conv_source\(self\.conv2,h[,)]", method), method


def test_in_place_is_said_once_and_a_layer_that_gathers_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """SAGEConv("gcn") reads source rows only in messages, "pool" runs fc_pool on each first."""
    method = _method("MixedAggregators", monkeypatch)
    said = [line.strip() for line in method.split("\n") if line.strip().startswith("#")]
    assert sum("in_place=True: source rows are read where they are stored" in line for line in said) == 1
    calls = re.findall(r"= batches\.map\((.*?)\n        \w", method, re.S)
    assert len(calls) == 3 and "in_place=True" not in calls[1], calls
    gathered = method.split("layer_2,")[0].rsplit("def layer_2", 1)[1]
    assert "# source rows gathered per batch: self.conv2 (SAGEConv) reads them outside messages" in gathered, gathered


def test_an_optional_argument_goes_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """GATConv's residual reads the layer input's destination rows: `h_dst=h`, not a sixth
    positional argument a reviewer must count to."""
    method = re.sub(r"\s+", "", _method("ResidualGAT", monkeypatch))
    assert re.search(r"_gat_conv_(aggregate|attention)\(self\.gat2,block,\w+,\w+,\w+,h_dst=\w+\)", method), method


def test_a_tuple_partly_read_is_unpacked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last layer's LSTM step: its memory (h, c) read by nothing, `x, _, _ = ...` as the
    layers before it unpack theirs, not `x = ...` and then `x = x[0]`."""
    method = _method("BreadthThenDepth", monkeypatch)
    steps = re.findall(r"^ *(.*?) = _lstm_step\(", method, re.M)
    assert steps and steps[-1] == "x, _, _", method
    assert not re.search(r"\b(\w+) = \1\[0\]", method), method


def test_a_tensor_a_layer_only_counts_is_not_passed_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37 (geniepath): `torch.zeros(1, x.shape[0], d)`, the LSTM's first memory, passed the
    raw input x's rows to layer 1 only to be counted. A layer counts the block's rows instead,
    and the plan neither loads nor keeps a tensor for a layer that only counts it."""
    method = _method("BreadthThenDepth", monkeypatch)
    layer_1 = method[method.index("def layer_1("):method.index("def layer_2(")]
    assert "torch.zeros(block.num_dst_nodes(), self.hid_size, device=device)" in layer_1, layer_1
    assert not re.search(r"def layer_1\([^)]*\bx\b", layer_1) and "dict(x=x" not in layer_1, layer_1
    method = _method("CountedOnly", monkeypatch)
    assert method.count("block.num_dst_nodes()") == 2, method
    for layer in ("layer_1", "layer_2"):  # neither x nor h (lin's result) is a row argument
        call = re.search(rf"= batches\.map\(\s*{layer},(.*?)\)\n", method, re.S)
        assert call and not re.search(r"\b(x|h)\b=", call.group(1)), method


def test_nodes_says_why_it_starts_where_it_does() -> None:
    """Issue 37 (gcn_pairnorm): `nodes=` appeared on the last layers only, unexplained. PairNorm's
    means read every node, so the stages before the last that reads one compute all nodes: said
    once, at the first call that passes nodes=."""
    method = (REPO / "generated_examples" / "gcn_pairnorm" / "generated.py").read_text()
    method = method[method.index("    def inference("):method.index("# --- gnn-codegen ")]
    # in the loop over the layers (render/round_loops.py): passed in its last round alone
    said = "# nodes= in the last round alone"
    assert method.count(said) == 1 and "nodes=needed[" in method.split(said)[1].split(")\n")[0], method
    assert "nodes=needed[" not in method.split(said)[0].split("needed = batches.needed(")[1]
    # the means are pair_norm's, the function PairNorm's passes are written once in
    assert "pair_norm's means" in " ".join(method.split(said)[1].split("\n")[:3]), method


def test_a_self_loop_on_embeddings_is_written_as_every_layers() -> None:
    """entity_classify: layer 0's self-loop term `torch.matmul(inputs[ntype], self.loop_weight)`
    on the embeddings goes to the relations' helper as layers 1 and 2's do, reading the
    features dict's destination rows (`h_dst`, the embeddings in the loop's first round), not
    a `loop_term` table computed before."""
    source = (REPO / "generated_examples" / "entity_classify" / "generated.py").read_text()
    method = re.sub(r"\s+", "", source.split("def inference(")[1].split("# --- gnn-codegen")[0])
    assert "loop_term" not in method and "matmul" not in method, method
    assert method.count("linear=((h_dst,self.layers[i].loop_weight)ifself.layers[i].self_loopelseNone)") == 1, method
    assert "h=dict(self.embeds.items())" in method and "foriinrange(len(self.layers)):" in method

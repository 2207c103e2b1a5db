"""A loop over the user's layers whose every layer adds a Linear skip of its input, the first
layer's included (issue 37, reviewer on rgat_mag240m: `if i == 0 and j == 0: x_skip =
self.skips[i](x_skip)` beside `x_skip_next = self.skips[i + 1](x_skip)`, one thing in two
places, and the logits returned as `x_skip`). The first layer's skip runs where later layers'
runs, where its input rows are made: the prologue (cut/prologue_work.py), so the loop's body has
no case for the first layer; forward's output made in the loop's carried name is bound under
its own after the loop (render/loop_results.py). Every module here is checked exact by the
generator before it is returned, with nodes= too below."""

from __future__ import annotations

import copy
import json
import re

import torch

from gnn_codegen.analysis.perturb import perturb
from gnn_codegen.pipeline import GenerateOptions
from gnn_codegen.verify.harness import (
    allclose,
    flatten,
    full_graph_forward,
    generated_model,
    import_source,
    make_inputs,
    max_difference,
    random_graph_for,
    run_inference,
)
from tests.cases import REPO, Case, generate_case

MODELS = "tests/models/first_layer_skips.py"


def _case(name: str, **init: int) -> Case:
    label = "_".join(f"{k}{v}" for k, v in init.items())
    return Case(f"{name}_{label}", REPO / "tests" / "models", f"{MODELS}:{name}",
                GenerateOptions(init=json.dumps(init) if init else None))


def _method(case: Case) -> str:
    source = generate_case(case).source  # checked exact against forward
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _prologue(method: str) -> str:
    return method[method.index("def prologue("):method.index("batches.map_nodes(")]


def test_lsc_rgat_runs_the_first_skip_in_the_prologue() -> None:
    """DGL's OGB-LSC MAG240M R-GAT: the first layer's skip beside its GATs' fc in the prologue,
    the loops' function the same for every layer and graph but for its endings."""
    method = _method(_case("RGAT", num_layers=3))
    assert "x_skip = self.skips[0](x)" in _prologue(method), method
    assert "x_skip, feat, el = batches.map_nodes(prologue, x, nodes=needed[0])" in method, method
    assert re.search(r"^ +for i in range\(len\(self\.convs\)\):\n +for j in range\(self\.num_etypes\):$",
                     method, re.M), method
    assert len(re.findall(r"^ +def layer_\w*\(", method, re.M)) == 1, method
    # no case for the first layer, no binding of the caller's x to the loop's name
    assert "i == 0" not in method and "x_skip = x\n" not in method, method
    assert len(re.findall(r"self\.skips\[[^\]]+\]\(", method)) == 2 and "x_skip_next = self.skips[i + 1](x_skip)" in method, method


def test_lsc_rgat_returns_its_output_under_a_name_of_its_own() -> None:
    method = _method(_case("RGAT"))
    assert "return self.mlp(x_skip), None, None" in method, method
    assert re.search(r"\n +out = x_skip\n +return batches\.result\(out, nodes=nodes\)", method), method
    assert "# the last layer's pass returns forward's output, self.mlp(x_skip), as x_skip" in method, method


def test_residual_gcn_with_a_first_linear_skip_is_one_loop() -> None:
    """`h = F.relu(layer(g, h) + res(h))` over zip(self.layers, self.res_linears): with the first
    layer's res in the prologue, every layer reads its skip's rows as the others do, and the
    layers are one loop (before, three functions: the first read `features` for its skip)."""
    method = _method(_case("ResGCN"))
    assert "self.res_linears[0](features)" in _prologue(method), method
    assert "for i in range(len(self.layers)):" in method, method
    assert len(re.findall(r"^ +def layer_\w*\(", method, re.M)) == 1, method
    assert "self.res_linears[i + 1](h)" in method, method
    assert re.search(r"\n +out = feat\n +return batches\.result\(out, nodes=nodes\)", method), method


def test_without_a_prologue_the_first_skip_stays_in_its_pass() -> None:
    """GraphConvs that read their input as it is: no prologue runs, and none is added for the
    skip (a pass costs a read and a write of every row); each layer's skip in its first pass."""
    method = _method(_case("EdgeTypeGraphConv"))
    assert "def prologue(" not in method, method
    assert "self.skips[0](x_dst)" in method and "self.skips[1](x1_dst)" in method, method


def test_nodes_gives_forwards_rows_of_those_nodes() -> None:
    """The prologue runs on needed[0], more nodes than the first pass's destinations: the
    skip's rows for the nodes asked for are forward's all the same."""
    generated = generate_case(_case("RGAT"))
    reference = copy.deepcopy(generated.loaded.model)
    perturb(reference, 0)
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent), reference)
    g = random_graph_for(generated, 61, seed=0, zero_in_degree=False)
    inputs = make_inputs(generated, 61, 0, g.num_edges())
    nodes = torch.tensor([2, 9, 33, 60])
    some = run_inference(model, generated, g, inputs, batch_size=16, device="cpu", nodes=nodes)
    expected = [t[nodes] for t in flatten(full_graph_forward(model, generated, g, inputs))]
    assert allclose(some, expected, atol=1e-4, rtol=1e-4), max_difference(some, expected)

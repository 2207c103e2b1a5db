"""A user's layer of several convolutions, each on a graph forward derives (HAN's metapath
GATs, an R-GAT's GAT per edge type, a GraphConv per relation), reads as the user's layer
(issue 37, render/user_layers.py): each generated layer is labelled "self.layers[0], metapath
2 of 2", not "Layer 2 of 4", the rows sent on each graph are named for it, `feat0_pa_ap`, not
`feat0_2`; and a counted local a layer's function returns takes the name the method binds it
to, `x_skip1`, never `x_skip_2` beside the parameter `x_skip0` (render/local_names.py); the
rows a user's layer reads are numbered for it, `feat1_pa_ap`, `x_skip1`, not for the pass that
computes them (render/buffer_names.py)."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.local_names import bound_names
from gnn_codegen.render.user_layers import owner
from tests.cases import REPO

MODELS = "tests/models/user_layers.py"
# a name the allocator counted (names.py counts from 2): `feat0_2`, `x_skip_2`
_COUNTED = re.compile(r"\b[a-z]\w*?_[2-9]\b")


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _comments(source: str) -> list[str]:
    """Every comment of the method, its wrapped lines as one."""
    blocks, current = [], []
    for line in _method(source).splitlines() + [""]:
        if line.strip().startswith("# "):
            current.append(line.strip()[2:])
        elif current:
            blocks.append(" ".join(current))
            current = []
    return blocks


@pytest.mark.parametrize("accessor, expected", [
    ("self.layers[0].gats[1]", "self.layers[0]"),  # a list of the user's layer module
    ("self.convs[0][2]", "self.convs[0]"),  # a list in a list
    ('self.layer1["likes"]', "self.layer1"),  # a dict of the model's
    ("self.conv1", None),  # no container
])
def test_the_users_layer_that_holds_a_convolution(accessor: str, expected: str | None) -> None:
    assert owner(accessor) == expected


def test_a_counted_local_returned_takes_the_name_it_is_bound_to() -> None:
    body = ["x_skip = x_skip2 + a", "x_skip_2 = self.skips[1](x_skip)", "feat, el = f(x_skip)",
            "feat_2, el_2 = f(x_skip)", "return x_skip_2, feat, el, feat_2, el_2"]
    counted = {"x_skip_2": "x_skip", "feat_2": "feat", "el_2": "el"}
    returned = {"x_skip_2": "x_skip3", "feat": "feat3_a", "el": "el3_a", "feat_2": "feat3_b", "el_2": "el3_b"}
    assert bound_names(["block", "x_skip2"], body, returned, counted) == {
        "x_skip_2": "x_skip3", "feat_2": "feat3_b", "el_2": "el3_b", "feat": "feat3_a", "el": "el3_a"}
    # a name the function reads already (a parameter, a value of the method's): left counted
    assert bound_names(["block", "x_skip3"], body, {"x_skip_2": "x_skip3"}, counted) == {}
    assert bound_names(["block"], body + ["y = x_skip3"], {"x_skip_2": "x_skip3"}, counted) == {}


def test_a_user_layer_of_a_gat_per_edge_type_reads_as_the_users_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    source = generate_all(f"{MODELS}:EdgeTypeGAT", GenerateOptions()).source  # checked exact
    assert [c for c in _comments(source) if ": self.layers[" in c and "(GATConv), on" in c] == [
        f"self.layers[{i}], edge type {j + 1} of 2: self.layers[{i}].gats[{j}] (GATConv), on g_etype_{j}."
        for i in (0, 1) for j in (0, 1)]
    method = _method(source)
    # the rows of self.layers[1] numbered for it, not for the pass that computes them (feat2, h2)
    assert "def layer1_etype_0(block, feat1_etype_0, el1_etype_0, h1, feat1_etype_0_dst):" in method, method
    # the next layer's skip, a second `h` in layer 2's function, as the method binds it
    assert "h1 = self.layers[1].skip(h)" in method, method
    # the sum over edge types keeps its name, as forward's `h = h + gat(...)`
    assert "h1 = batches_etype_0.map(" in method and "h3" not in method, method
    assert not [n for n in _COUNTED.findall(method) if not n.startswith("layer_")], method


def test_a_skip_computed_a_layer_early_is_one_loop_with_the_first_in_the_prologue(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each layer's skip is computed where its input rows are made: the first in the prologue,
    the others at the end of the layer before (cut/prologue_work.py), so the layers fold into
    one loop."""
    monkeypatch.chdir(REPO)
    method = _method(generate_all(f"{MODELS}:SkipEachLayer", GenerateOptions()).source)
    prologue = method[method.index("def prologue("):method.index("for i in range(len(self.convs)):")]
    assert "x_skip = self.skips[0](x)" in prologue, prologue
    assert method.count("for i in range(len(self.convs)):") == 1 and "self.skips[i + 1](x_skip)" in method, method


@pytest.mark.xfail(strict=True, reason="the loop carries the skip as x_skip_2 and binds the next one as "
                   "x_skip_3: counted names, where the unrolled layers had x_skip2 = self.skips[2](x_skip)")
def test_a_skip_carried_by_a_loop_has_no_counted_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all(f"{MODELS}:SkipEachLayer", GenerateOptions()).source)
    assert "x_skip_2" not in method and "x_skip_3" not in method, method


@pytest.mark.parametrize("name, metagraph, feat_dims, labels", [
    # `for etype in g.etypes: h = h + self.layer1[etype](g[etype], x)`: one layer of three parts
    ("RelationSumGCN", "user:follows:user,user:likes:user,user:replies:user", None,
     [f'self.layer{i}, relation {j} of 3: self.layer{i}["{r}"] (GraphConv), on g_{r}.'
      for i in (1, 2) for j, r in enumerate(("follows", "likes", "replies"), 1)]),
    # `for agg, ... in zip(self.aggs, g.canonical_etypes): h = agg(g[...], h)`: layers one after
    # another, each sending what the one before computed, are the user's layers as they are
    ("RelationChainSAGE", "user:follows:user,user:likes:user", "x=8",
     ["Layer 1 of 2: self.aggs[0] (MeanAggregator), on g_follows.",
      "Layer 2 of 2: self.aggs[1] (MeanAggregator), on g_likes."]),
])
def test_relation_graphs_of_one_layer_and_layers_one_after_another(
        name: str, metagraph: str, feat_dims: str | None, labels: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    source = generate_all(f"tests/models/derived_graphs.py:{name}",
                          GenerateOptions(metagraph=metagraph, feat_dims=feat_dims)).source
    assert [c for c in _comments(source) if c in labels] == labels, _comments(source)


def _golden(name: str) -> str:
    return _method((REPO / "generated_examples" / name / "generated.py").read_text())


def test_the_han_golden_names_each_metapath() -> None:
    han = _golden("han")
    assert [label for label in _labels_of(han) if "metapath" in label] == [
        f"self.layers[{i}], metapath {j + 1} of 2: self.layers[{i}].gats[{j}] (GATConv), on g_{m}."
        for i in (0, 1) for j, m in enumerate(("pa_ap", "pf_fp"))]
    assert "def layer1_pf_fp(block, feat1_pf_fp, el1_pf_fp, z1, feat1_pf_fp_dst):" in han, han
    assert not re.search(r"\b(feat|el)\d_\d\b", han), han
    assert not re.search(r"Layer \d of 4", han), han


def test_the_rgat_mag240m_golden_names_each_edge_type_and_no_skip_twice() -> None:
    rgat = _golden("rgat_mag240m")
    # the next layer's skip named for it (not x_skip3, a count of the passes before it), in the
    # loop over the user's layers (graph_layer_loops.py) as the loop names the next layer's rows
    assert "x_skip_2" not in rgat and "x_skip_next = self.skips[i + 1](x_skip)" in rgat, rgat
    said = " ".join(line.strip().removeprefix("# ") for line in rgat.splitlines() if line.strip().startswith("#"))
    assert "in it a pass per edge type, [j], each the same function: self.convs[i][j] (GATConv), on graphs[j]." in said
    assert not re.search(r"\b(feat|el)\d_\d\b", rgat), rgat


def _labels_of(method: str) -> list[str]:
    return [c for c in _comments(method + "# --- gnn-codegen ") if re.match(r"self\.\S+, \w[\w ]* \d of \d: ", c)]


def test_every_convolution_of_a_list_on_each_of_forwards_graphs_is_no_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """PerViewHeads runs all of `self.filters` on each graph forward takes: a layer per graph,
    not a part of `self.filters` per graph (each layer holds the whole list)."""
    monkeypatch.chdir(REPO)
    source = generate_all("tests/models/plain_containers.py:PerViewHeads", GenerateOptions()).source
    assert "self.filters, graph" not in source and "feat0_0_2" not in source, _method(source)

"""Graphs forward derives in a loop over a list a module holds (`for meta_path in
self.meta_paths`, a comprehension over `self.metapaths`) are derived as forward does, in one
comprehension over that list, `graphs = [dgl.metapath_reachable_graph(g, metapath) for metapath
in self.layers[0].metapaths]`, each with its batches in a list beside it (issue 37, reviewer of
han: "Metapath names are baked into identifiers", lower/held_lists.py,
render/held_graph_lists.py). The rows sent on each are lists indexed as the graphs are, the
method's own batches do the whole-graph work, and graphs written one by one stay apart. Every
module here is checked against forward by the generator before it is returned."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.lower.held_lists import held_loops
from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.graph_rows import indexed
from tests.cases import REPO
from tests.models.held_graph_lists import DGLHAN, MetapathSum

MODELS = "tests/models/held_graph_lists.py"


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _flat(text: str) -> str:
    flat = " ".join(text.split())
    return flat.replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]")


def _no_metapath_names(method: str) -> None:
    assert not re.search(r"\w_(?:pa_ap|pf_fp)\b", method), method


def test_dgl_han_derives_its_metapath_graphs_in_one_comprehension(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all(f"{MODELS}:DGLHAN", GenerateOptions()).source)  # checked
    flat = _flat(method)
    assert ("graphs = [dgl.metapath_reachable_graph(g, meta_path) for meta_path in self.layers[0].meta_paths]"
            in flat), method
    assert "graph_batches = [batches, *(batches.over(graph) for graph in graphs[1:])]" in flat, method
    _no_metapath_names(method)
    # the whole-graph work on the method's batches, each layer's pass on its graph's
    assert "batches.sum_nodes(" in method and "batches.result(" in method, method
    assert "graph_batches[0].map(" in method and "graph_batches[1].map(" in method, method
    assert "layers=graph_batches * 2)" in flat, method
    assert "in its loop over self.layers[0].meta_paths" in flat, method  # a `for`, not a comprehension
    # each graph's GAT rows made in one loop over the graphs, and read as items of one list
    assert "self.layers[0].gat_layers[j]" in method, method
    assert "source_rows=dict(feat0=feat0[1], el0=el0[1])" in method, method


def test_a_comprehension_in_the_models_own_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all(f"{MODELS}:MetapathSum", GenerateOptions()).source)  # checked
    flat = _flat(method)
    assert "graphs = [dgl.metapath_reachable_graph(g, path) for path in self.metapaths]" in flat, method
    _no_metapath_names(method)
    assert "in its comprehension over self.metapaths" in flat, method
    assert "layers=graph_batches)" in flat, method


def test_graphs_written_one_by_one_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all(f"{MODELS}:MetapathsOneByOne", GenerateOptions()).source)  # checked
    assert "graphs = [" not in method and "graph_batches" not in method, method
    # the method's batches named for their graph as the other graph's are
    assert "batches_pf_fp = batches_pa_ap.over(g_pf_fp)" in method, method
    assert len(re.findall(r"^ +\w+ = dgl\.metapath_reachable_graph\(", method, re.MULTILINE)) == 2, method


def test_held_loops_name_each_modules_list() -> None:
    source = (REPO / MODELS).read_text()
    loops = {loop.var: loop for loop in held_loops(source, MODELS, DGLHAN())}
    assert loops["meta_path"].attribute == "meta_paths"
    assert [spelled for spelled, _ in loops["meta_path"].lists] == ["self.layers[0].meta_paths",
                                                                    "self.layers[1].meta_paths"]
    assert loops["meta_path"].lists[0][1] == (("pa", "ap"), ("pf", "fp"))
    # the model's own list, read on the model itself
    (path,) = [loop for loop in held_loops(source, MODELS, MetapathSum()) if loop.var == "path"]
    assert path.lists == (("self.metapaths", (("pa", "ap"), ("pf", "fp"), ("pa", "ap", "pa", "ap"))),)


def test_held_loops_keep_only_lists_the_built_digest_covers() -> None:
    model = MetapathSum()
    model.metapaths = [object(), object()]  # not a setting: another build would not be refused
    source = (REPO / MODELS).read_text()
    assert not [loop for loop in held_loops(source, MODELS, model) if loop.var == "path"]


def test_a_list_inside_a_module_of_a_list_is_indexed_at_its_last_index() -> None:
    assert indexed("self.layers[0].gats[1].fc(h)", 1, "j") == "self.layers[0].gats[j].fc(h)"
    assert indexed("self.layers[1].gats[0]", 1, "j") == "self.layers[1].gats[0]"
    assert indexed("self.convs[1][2](x), self.norms[2]", 2, "j") == "self.convs[1][j](x), self.norms[j]"

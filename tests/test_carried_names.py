"""The value a loop over the user's layers carries is named as forward names the value its loop
carries (`h` of `h = layer(g, h)`), where that name is free in the method, and forward's output
made by the loop's last round is returned under it: no alias after the loop, `h = feat` (issue
37, render/carried_names.py); a loop's other carried values take plain names, `linear`, not the
allocator's `linear_2`. Every module generated here is checked exact by the tool itself."""

from __future__ import annotations

import re

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.render.carried_names import _assigned_and_read, free_for, loop_name, plain
from gnn_codegen.render.local_names import bound_names
from tests.cases import REPO

# a name the allocator counted (names.py counts from 2): `linear_2`, `x_skip_3`
_COUNTED = re.compile(r"\b[a-z]\w*?_[2-9]\b")


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


@pytest.mark.parametrize("location, name", [
    ("model.py:31 (`h = layer(g, h)`)", "h"),
    ("model.py:31 (`h = conv(block, (h, h_dst))`)", "h"),
    ("model.py:9 (`x_skip += self.convs[i][j](subg, (x, x_dst))`)", "x_skip"),
    ("model.py:40 (`h = F.relu(conv(g, h)) + skip(h)`)", "h"),
    ("model.py:17 (`return self.net(g, features)`)", None),  # assigns none
    ("model.py:12 (`x, (h, c) = layer(graph, x, h, c)`)", None),  # several: which one?
    ("model.py:5 (`out = layer(g, x)`)", None),  # reads another
    ("", None),
])
def test_the_name_forwards_loop_line_assigns_and_reads(location: str, name: str | None) -> None:
    assert _assigned_and_read(location) == name


def test_a_name_is_free_where_no_other_value_of_the_method_holds_it() -> None:
    buffer = {"a": "feat", "b": "feat", "out": "h", "x": "x", "local": "h"}
    bound = frozenset({"a", "b", "out", "x"})
    # held by the loop's own values, or by a function's local alone
    assert free_for("h", ("a", "b", "out"), buffer, bound, set(), ("x",))
    # held by forward's input (read after the loop) or another stored value
    assert not free_for("x", ("x", "a", "b"), buffer, bound, set(), ("x",))
    assert not free_for("h", ("a", "b"), buffer, bound, set(), ("x",))
    # a name of the method's that no value holds (`batches`)
    assert not free_for("batches", ("a",), buffer, bound, {"batches"}, ("x",))
    assert free_for("z", ("a",), buffer, bound, {"batches"}, ("x",))


def test_the_loop_name_is_forwards_for_the_one_value_that_leaves_the_loop() -> None:
    chained = (("a", "b"), ("c", "d"))
    free = lambda name: name != "taken"  # noqa: E731
    assert loop_name("feat", "feat", chained[0], chained, "h", [True, False], free) == "h"
    # not the value that stays in the loop; a plain name for it instead of a count
    assert loop_name("linear_2", "linear", chained[1], chained, "h", [True, False], free) == "linear"
    # forward's name taken, or two values leave the loop: as before
    assert loop_name("feat", "feat", chained[0], chained, "taken", [True, False], free) == "feat"
    assert loop_name("feat", "feat", chained[0], chained, "h", [True, True], free) == "feat"
    assert loop_name("feat_2", "feat", chained[0], chained, None, [True, False], lambda n: False) == "feat_2"
    assert plain("x_skip_3", "x_skip") and not plain("x_skip3", "x_skip") and not plain("h_2", "x")


def test_the_next_value_of_a_name_the_function_holds_is_named_next() -> None:
    body = ["x_skip = x_skip + a", "x_skip_2 = self.skips[i + 1](x_skip)", "return x_skip_2, f(x_skip)"]
    assert bound_names(["block", "x_skip"], body, {"x_skip_2": "x_skip"}, {"x_skip_2": "x_skip"}) == {
        "x_skip_2": "x_skip_next"}
    # a count of another name, or `_next` taken: left counted
    assert bound_names(["block", "x_skip"], body, {"x_skip_2": "y"}, {"x_skip_2": "x_skip"}) == {
        "x_skip_2": "y"}
    taken = [*body[:-1], "x_skip_next = 1", body[-1]]
    assert bound_names(["block", "x_skip"], taken, {"x_skip_2": "x_skip"}, {"x_skip_2": "x_skip"}) == {}


def test_a_gcn_loop_carries_forwards_h_with_no_alias_after_it() -> None:
    method = _method((REPO / "generated_examples" / "gcn" / "generated.py").read_text())
    assert "h = batches.map_nodes(prologue, features, out_degrees" in method, method
    assert "h = batches.map(\n" in method and "source_rows=dict(h=h)" in method, method
    assert "return batches.result(h, nodes=nodes)" in method and "h = feat" not in method, method


def test_no_golden_binds_a_loops_result_under_an_alias() -> None:
    aliased = [path.parent.name for path in sorted((REPO / "generated_examples").glob("*/generated.py"))
               if "returns forward's" in path.read_text()]
    assert aliased == []


def test_plain_skips_in_a_loop_carry_h_and_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all("tests/models/plain_containers.py:GCNWithPlainSkips", GenerateOptions()).source)
    assert not _COUNTED.search(method), method
    assert "h, linear = batches.map(\n" in method and "def layer_i(block, h, out_degrees, linear, i=i):" in method
    assert "return batches.result(h, nodes=nodes)" in method, method


def test_forwards_name_held_by_the_input_read_after_the_loop_is_left_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    method = _method(generate_all("tests/models/carried_names.py:InputReadAfterLoop", GenerateOptions()).source)
    assert "feat = batches.map(\n" in method and "destination_rows=dict(h=h)" in method, method

"""Names a reviewer can read (issue 37): a stored tensor sent to neighbours that would share
its name with the layer's other result is named for that, `rst1_src`, not `rst1_2`
(render/stored_names.py), and inside a layer's function a counted local takes its base's name
back where the value the base held is read no more, `h` again, not `h_2`
(render/local_names.py), as a person reuses a variable."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from gnn_codegen.render.local_names import rename, renamed
from gnn_codegen.render.stored_names import running_name, stored_name
from tests.cases import all_cases

CASES = all_cases(heterogeneous=True)
# the name allocator counts from 2 (names.py: `h_2`): `feat_0`, `X_1` are names library code writes
_COUNTED = re.compile(r"^(\w+?)_([2-9]|[1-9]\d+)$")


def _golden(name: str) -> str:
    source = next(c for c in CASES if c.name == name).golden.read_text()
    return source[source.index("    def inference("):source.index("# --- gnn-codegen")]


def _functions(source: str):
    inference = next(node for node in ast.walk(ast.parse(textwrap.dedent(source)))
                     if isinstance(node, ast.FunctionDef) and node.name == "inference")
    return [f for f in ast.walk(inference) if isinstance(f, ast.FunctionDef) and f is not inference]


# --- stored tensors sent to neighbours ---------------------------------------------------------

def test_a_layers_result_and_its_rows_for_the_next_layer_are_told_apart() -> None:
    tagcn = _golden("tagcn")  # TAGConv's hop 1, and hop1 * norm that the next hop sends
    assert re.search(r"hop1, hop1_src = batches\.map\(", tagcn), tagcn
    # each TAGConv's result is the user's h (dgl_names.py's with_callers_names), the rows it
    # sends (TAGConv's `rst * norm`) are named for it: one concept, one name
    # (stored_names.scaled_rows), the same in every round of the loop over the TAGConvs
    # (period_loops.py): no layer's counter, `h2`, `hop1_3`
    assert "h, h_src = batches.map(" in tagcn and "return rst, None" in tagcn, tagcn
    assert not re.search(r"\b(rst\d|h\d|hop1_\d)", tagcn) and not re.search(r"_src_\d\b", tagcn), tagcn
    chebnet = _golden("chebnet")
    assert "h_src" in chebnet and not re.search(r"\b(h2|h_2|t1_3)", chebnet), chebnet


@pytest.mark.parametrize("example", ["chebnet", "tagcn"])
def test_rows_scaled_for_the_next_hop_are_named_for_what_they_scale(example: str) -> None:
    """`t1 * norm`, which a hop sends to the next, is `t1_src`, not `h1` (a layer's counter, which
    reads as a layer's result: issue 37's review of chebnet); the prologue's `features * norm`
    is `features_src`, not TAGConv's `rst` (the name of its result too)."""
    method = _golden(example)
    # the prologue's is the loop's first h_src, the loop's state h scaled (period_loops.py)
    assert re.search(r"\bnorm, h_src = batches\.map_nodes\(", method), method
    stored = {name for line in re.findall(r"^ {8,12}(\w+(?:, \w+)*) = batches\.map", method, re.M)
              for name in line.split(", ")}
    assert not {"h0", "h1", "h3", "rst", "rst2"} & stored, stored
    if example == "chebnet":
        assert {"t1", "t1_src"} <= stored and not {"t1_3", "t1_3_src"} & stored, stored


def test_a_loop_over_hops_carries_the_rows_it_sends() -> None:
    appnp = _golden("appnp")  # APPNPConv: feat * src_norm it sends, and the last hop's feat
    assert re.search(r"\bfeat = batches\.map\(\s*layer_k,", appnp), appnp
    assert "feat0_2" not in appnp and "feat_2" not in appnp and "feat_src" not in appnp, appnp


def test_a_loop_over_a_modules_hops_reads_their_count_from_the_module() -> None:
    """APPNPConv holds its k: the loop over its hops says so, not `11` (module_index.spelled_hops)."""
    appnp = _golden("appnp")
    assert "for k in range(1, self.propagate._k + 1):" in appnp, appnp
    assert "if k == self.propagate._k:" in appnp, appnp


def test_degrees_a_module_reads_are_named_for_them() -> None:
    """APPNPConv's `torch.pow(graph.out_degrees().to(feat).clamp(min=1), -0.5)` names no part
    of its degrees: they keep their name (method.Renderer._named_receiver), not another `h`."""
    appnp = _golden("appnp")
    assert "out_degrees = out_degrees.to(h).clamp(min=1)" in appnp, appnp
    assert "in_degrees = in_degrees.to(h).clamp(min=1)" in appnp, appnp
    assert "h_2" not in appnp and "h_3" not in appnp, appnp


def test_two_values_both_sent_to_neighbours_keep_a_counter() -> None:
    """Two GATConvs' source parts (han's two metapaths): `_src` would tell nothing apart."""
    taken = {"feat0"}
    buffer = {"a": "feat0"}
    assert stored_name("feat0", "b", frozenset({"a", "b"}), buffer, taken, _take(taken)) == "feat0_2"
    taken = {"rst1"}
    assert stored_name("rst1", "b", frozenset({"b"}), {"a": "rst1"}, taken, _take(taken)) == "rst1_src"
    assert stored_name("rst2", "b", frozenset({"b"}), {}, {"rst1"}, _take({"rst1"})) == "rst2"


def _take(taken: set[str]):
    def take(base: str) -> str:
        name, i = base, 2
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        return name
    return take


@pytest.mark.parametrize("last, running", [("feat9_2", "feat"), ("feat9", "feat"), ("feat9_src", "feat_src"),
                                           ("rst", "rst")])
def test_a_loops_running_name(last: str, running: str) -> None:
    assert running_name(last) == running


# --- locals that take their name back ----------------------------------------------------------

def test_a_counted_local_takes_its_base_back_where_the_base_is_dead() -> None:
    body = ["h = block.dstdata['h']", "h_2 = h * norm", "h_2 = F.relu(h_2)", "return h_2"]
    renames = renamed(["block", "norm"], body, {"h_2": "h"})
    assert renames == {"h_2": "h"}
    assert rename(body, renames) == ["h = block.dstdata['h']", "h = h * norm", "h = F.relu(h)", "return h"]


@pytest.mark.parametrize("body", [
    ["h = f(x)", "h_2 = g(h)", "return h_2, h"],  # h read after h_2 is made
    ["h = f(x)", "h_2 = g(x)", "y = h + h_2", "return y"],  # both live at once
    ["h_2 = g(x)", "return h_2"],  # h is no local of the function: a closure's name
])
def test_a_counted_local_keeps_its_counter_where_the_base_is_still_read(body: list[str]) -> None:
    assert renamed(["block", "x"], body, {"h_2": "h"}) == {}


def test_a_parameter_is_reassigned_only_where_its_value_is_read_no_more() -> None:
    # as forward and DGL write it, `h = layer(block, h)` (issue 37: a loop's layer function,
    # whose parameter is the loop's running h, reads as the user's loop body)
    body = ["norm_2 = norm.clamp(min=1)", "return norm_2"]
    assert renamed(["block", "norm"], body, {"norm_2": "norm"}) == {"norm_2": "norm"}
    # the stored tensor is read after the counted local is made: both keep their names
    body = ["norm_2 = norm.clamp(min=1)", "return norm_2 * norm"]
    assert renamed(["block", "norm"], body, {"norm_2": "norm"}) == {}


def test_renaming_touches_names_only() -> None:
    body = ["h = f(x)", 'h_2 = block.h_2 + h  # h_2', 'y = g(h_2=h_2, key="h_2")', "return y"]
    assert rename(body, {"h_2": "h"}) == ["h = f(x)", 'h = block.h_2 + h  # h_2', 'y = g(h_2=h, key="h_2")',
                                          "return y"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_no_golden_layer_function_keeps_a_counter_it_could_drop(case) -> None:
    """The invariant on every golden: no local `x_N` of a function inference makes could be
    `x` (what local_names.py would rename is renamed)."""
    source = case.golden.read_text()
    method = source[source.index("    def inference("):source.index("# --- gnn-codegen")]
    for function in _functions(method):
        params = [a.arg for a in function.args.args]
        body = [ast.unparse(statement) for statement in function.body]
        stored = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        counted = {name: m.group(1) for name in stored if (m := _COUNTED.match(name))}
        assert renamed(params, body, counted) == {}, (function.name, ast.unparse(function))


# --- several results, each taken under its own name --------------------------------------------

@pytest.mark.parametrize("name", ["residual", "edge_features"])
def test_several_results_are_named_before_they_are_returned(name: str) -> None:
    """`return batches.result(out, ...), batches.result(` split by black mid-call read badly:
    each result is taken under its own name, and the return is forward's tuple of names."""
    method = _golden(name)
    returned = method[method.rindex("        return "):].strip()
    assert re.fullmatch(r"return \w+, \w+", returned), returned
    assert len(re.findall(r"^        (\w+) = batches\.result\(\1, ", method, re.MULTILINE)) == 2, method


# --- loop counts read from the model's lists ---------------------------------------------------

def test_a_loop_over_a_module_list_reads_its_count_from_the_list() -> None:
    gcnii = _golden("gcnii")  # 8 GCN2Convs: the loop runs them all, the last adds fcs[1]
    assert "for i in range(len(self.convs)):" in gcnii, gcnii
    assert "if i == len(self.convs) - 1:" in gcnii, gcnii
    assert "range(8)" not in gcnii and "layer_8" not in gcnii, gcnii


def test_the_loops_end_as_the_list_gives_it() -> None:
    from gnn_codegen.render.layer import LayerFunction
    from gnn_codegen.render.module_index import spelled_stop

    function = LayerFunction("layer_i", ["block", "h"], ["return self.convs[i](block, h) + self.fcs[i + 1](h)"])
    assert spelled_stop(function, "i", 7, {"self.convs": 8}) == "len(self.convs) - 1"
    assert spelled_stop(function, "i", 8, {"self.convs": 8}) == "len(self.convs)"
    assert spelled_stop(function, "i", 7, {"self.fcs": 8}) == "7"  # read at i + 1 only: a number
    assert spelled_stop(function, "i", 9, {"self.convs": 8}) == "9"  # never a length it exceeds


def test_batches_over_derived_graphs_are_named_alike() -> None:
    """han: the method's batches are over the first metapath's graph; named for it, as the
    second metapath's are (`batches_pa_ap` beside `batches_pf_fp`, not `batches`)."""
    han = _golden("han")
    assert re.search(r"\bbatches_pa_ap = _FullNeighbourBatches\(", han), han
    assert "batches_pf_fp = batches_pa_ap.over(g_pf_fp)" in han, han
    assert not re.search(r"\bbatches\.", han), han

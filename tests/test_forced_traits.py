"""A norm cast to forward's input and the same norm cast to a layer's output are one value
where forward could not run otherwise (issue 37, analysis/forced_traits.py): TAGConv's and
ChebConv's first layer cast to the features, the next to a Linear's output over hops of the
features, which torch refuses unless the features have the Linear's dtype and rank."""

from __future__ import annotations

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check
from tests.cases import REPO


def _method(source: str) -> str:
    return source[source.index("    def inference("):source.index("# --- gnn-codegen ")]


def _generate(name: str, init: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(REPO)
    generated = generate_all(f"tests/models/widths.py:{name}", GenerateOptions(init=init))
    result = check(generated, num_nodes=97, seed=1, batch_sizes=(1, 13, 97))
    assert result.ok, f"max |difference| {result.max_abs_diff}"
    return _method(generated.source)


def test_a_tagconv_stacks_norm_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    method = _generate("TAGStack", '{"in_feats": 7, "n_hidden": 5, "n_classes": 3}', monkeypatch)
    layers = method[method.index("def hop_1("):]  # the loop over the TAGConvs (period_loops.py)
    assert "in_degrees.to(features)" in method and "in_degrees" not in layers  # the prologue's alone


def test_a_norm_cast_to_features_whose_dtype_is_free_stays_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """x * self.scale: float16 features would give float32 rows, so the user's norm (cast to
    x) and TAGConv's (cast to its input) are not proven one."""
    method = _generate("ScaledTAG", '{"in_feats": 7, "n_hidden": 5, "n_classes": 3}', monkeypatch)
    assert "in_degrees.to(x)" in method and "in_degrees.to(h)" in method  # TAGConv's own


def test_forced_traits_follow_only_what_torch_requires() -> None:
    """The rules on a small program: a Linear ties its input to its weight's dtype, torch.cat
    its parts' ranks; an op mixing the input with a parameter gives no symbol of the input's."""
    from gnn_codegen.analysis.attributes import Attributes, TensorInfo
    from gnn_codegen.analysis.forced_traits import equal_to_inputs
    from gnn_codegen.ir import Op, Program, Ref

    f32 = "torch.float32"
    ops = (
        Op("g", "graph"), Op("x", "input", "x"),
        Op("w", "attr", "w"),
        Op("scaled", "function", "operator.mul", (Ref("x"), Ref("w"))),
        Op("cat", "function", "torch.cat", ([Ref("x"), Ref("x")],), (("dim", 1),)),
        Op("lin", "module", "lin", (Ref("cat"),), linear=True),
        Op("out", "function", "F.relu", (Ref("lin"),)),
        Op("other", "module", "lin2", (Ref("scaled"),), linear=True),
    )
    info = tuple((op.name, TensorInfo("node", (4,), f32) if op.name != "g" else TensorInfo("graph"))
                 for op in ops)
    program = Program(ops=ops, graph="g", inputs=("x",), output=Ref("out"))
    attrs = Attributes(info=info, inputs=())
    dtype = equal_to_inputs(program, attrs, "dtype")
    assert dtype.get("out") == "x" and "scaled" not in dtype and "other" not in dtype
    assert equal_to_inputs(program, attrs, "rank").get("out") == "x"

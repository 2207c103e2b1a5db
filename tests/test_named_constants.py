"""analysis/named_constants.py on programs written out: which constants a library line names
are kept as Python floats under their names (with what is computed from them), and which stay
tensors because a reader would not take a float, or because the line is the user's."""

from __future__ import annotations

from gnn_codegen.analysis.named_constants import as_python_float, named_constants
from gnn_codegen.ir import Op, Program, Ref

USER = "model.py:9 (`h = self.conv(g, x)`)"
LIBRARY = "/site-packages/dgl/nn/pytorch/conv/chebconv.py:{} (`{}`)"
# constant_scalars.py's findings for the program below: (value, dimensions)
CONSTANTS = {"lambda_max": (2.0, 1), "re_norm": (1.0, 1), "minus": (-1.0, 1)}


def _program(reader: Op, re_norm_line: str = LIBRARY.format(121, "re_norm = 2.0 / lambda_max")) -> Program:
    ops = (
        Op("x", "input"),
        Op("lambda_max", "function", "torch.tensor", ([2.0],), location=USER, var="lambda_max",
           library_line=LIBRARY.format(115, "lambda_max = th.Tensor(lambda_max).to(feat)")),
        Op("re_norm", "function", "operator.truediv", (2.0, Ref("lambda_max")), location=USER, var="re_norm",
           library_line=re_norm_line),
        Op("minus", "function", "operator.neg", (Ref("re_norm"),), location=USER, line_var="t1",
           library_line=LIBRARY.format(130, "X_1 = -re_norm * h + X_0 * (re_norm - 1)")),
        Op("scaled", "function", "operator.mul", (Ref("minus"), Ref("x")), location=USER, var="t1"),
        reader,
    )
    return Program(ops=ops, graph="g", inputs=("x",), output=Ref(reader.name))


def _fits(other, dims: int) -> bool:
    return isinstance(other, Ref) and other.name in ("x", "scaled")


def test_a_library_lines_constant_and_what_is_computed_from_it_are_kept() -> None:
    program = _program(Op("out", "function", "operator.add", (Ref("scaled"), Ref("re_norm"))))
    named = named_constants(program, CONSTANTS, _fits)
    assert named == {"re_norm", "minus"}
    re_norm = as_python_float(program.op("re_norm"), program, CONSTANTS, named)
    assert re_norm.args == (2.0, 2.0)
    assert re_norm.note == "`re_norm = 2.0 / lambda_max` with forward's lambda_max 2.0, in every float dtype"
    minus = as_python_float(program.op("minus"), program, CONSTANTS, named)
    assert minus.args == (Ref("re_norm"),) and not minus.note


def test_a_reader_that_takes_no_float_keeps_every_constant_it_reaches_a_tensor() -> None:
    """torch.cat of re_norm needs its tensor: re_norm stays one, and so does `-re_norm`, which
    is computed from it."""
    program = _program(Op("out", "function", "torch.cat", ([Ref("scaled"), Ref("re_norm")],)))
    assert named_constants(program, CONSTANTS, _fits) == frozenset()


def test_a_constant_of_the_users_own_line_is_not_named() -> None:
    program = _program(Op("out", "function", "operator.add", (Ref("scaled"), Ref("re_norm"))),
                       re_norm_line="/home/me/model.py:9 (`h = self.conv(g, x)`)")
    assert named_constants(program, CONSTANTS, _fits) == frozenset()

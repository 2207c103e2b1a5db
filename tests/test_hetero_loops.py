"""Heterogeneous layers that forward runs from one line of its loop, alike but for their
module's index, written as one loop over the layers (render/hetero_loops.py, issue 37): a
3-layer RelGraphConvLayer-style stack whose last layer has no activation (forward's own test
of it in the loop's function), a 4-layer HeteroGraphConv of GATConv with a flatten; layers
written out one by one, or one of them treated otherwise, stay apart. Each equals forward."""

from __future__ import annotations

import re

from tests.cases import REPO
from tests.test_added_terms import _equals_forward, generated_from

MODELS = "tests/models/hetero_stacks.py"


def _generated(name: str, **init):
    return generated_from(MODELS, name, **init)


def _method(source: str) -> str:
    return source.split("def inference(")[1].split("# --- gnn-codegen")[0]


def _layer_functions(method: str) -> list[str]:
    return re.findall(r"def (layer_\w+)\(", method)


def test_a_relational_stack_is_one_loop_with_forwards_activation_test() -> None:
    generated = _generated("RelStack")
    method = _method(generated.source)
    assert "for i in range(len(self.layers)):" in method, method
    assert _layer_functions(method) == ["layer_i"], method
    # the last layer's RelLayer has no activation: forward's own test, not the layer's index
    assert "if self.layers[i].activation:" in method and "h = self.layers[i].activation(h)" in method
    assert "mod_kwargs=wdicts[i]" in method and "nodes=needed[i + 1][ntype]" in method
    assert "h = h_next" in method and "return batches.result(h, nodes=nodes)" in method
    _equals_forward(generated)


def test_four_gat_layers_with_a_flatten_are_one_loop() -> None:
    generated = _generated("GATStack")
    method = _method(generated.source)
    assert "for i in range(len(self.layers)):" in method, method
    assert _layer_functions(method) == ["layer_i"], method
    assert "self.layers[i]" in method and "self.layers[3]" not in method
    # ReLU in every layer but the last: the last's ending under the loop's test of the index
    assert "if i == len(self.layers) - 1:" in method, method
    _equals_forward(generated)


def test_layers_written_out_one_by_one_stay_apart() -> None:
    generated = _generated("RelWrittenOut")
    method = _method(generated.source)
    assert "for i in range(" not in method and _layer_functions(method) == ["layer_1", "layer_2"], method
    _equals_forward(generated)


def test_a_layer_forward_treats_otherwise_is_not_in_the_loop() -> None:
    generated = _generated("GATStack", middle=1)
    method = _method(generated.source)
    assert "Layers 1 to 4" not in method and "layer_2" in method, method
    _equals_forward(generated)


def test_no_two_del_lines_in_a_row() -> None:
    # what a layer frees and what the method frees after it are one statement (rgat's
    # `del h2_src` then `del h2` were two)
    for golden in sorted((REPO / "generated_examples").glob("*/generated.py")):
        lines = golden.read_text().splitlines()
        for before, after in zip(lines, lines[1:]):
            indent = before[: len(before) - len(before.lstrip())]
            assert not (before.lstrip().startswith("del ") and after.startswith(f"{indent}del ")), (golden, before)

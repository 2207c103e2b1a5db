"""The values of the weights alone that forward computes in every layer of a ModuleList alike
(rgcn-hetero's `weights` and `wdict` per layer), written as one loop over the layers
(render/per_layer_values.py): before/after on the lines, and a stack of layers end to end,
equal to forward."""

from __future__ import annotations

import torch.nn as nn

from gnn_codegen.render.per_layer_values import per_layer, rename
from tests.test_added_terms import _equals_forward, _generated


class _Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(nn.init.zeros_(nn.Parameter(__import__("torch").empty(2, 3, 3))))
        self.rel_names = ["a", "b"]


class _Model(nn.Module):
    def __init__(self, count: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList(_Layer() for _ in range(count))
        self.head = _Layer()


RGCN = [
    "weights = torch.split(self.layers[0].weight, 1)",
    "weights_1 = torch.split(self.layers[1].weight, 1)",
    "weights_2 = torch.split(self.layers[2].weight, 1)",
    'wdict = {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.layers[0].rel_names, weights)}',
    'wdict_1 = {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.layers[1].rel_names, weights_1)}',
    'wdict_2 = {rel: {"weight": w.squeeze(0)} for rel, w in zip(self.layers[2].rel_names, weights_2)}',
]


def _names(taken: set[str]):
    def new(base: str) -> str:
        name, i = base, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        return name
    return new


def test_rgcns_weights_per_layer_are_one_loop() -> None:
    readers = ["h = _hetero_conv_sources(conv, block, h0_src, mod_kwargs=wdict_1)", "x = f(wdict, wdict_2)"]
    lines, renamed = per_layer(RGCN, _Model(), readers, _names({"weights", "wdict"}))
    assert lines == [
        "# per layer of self.layers, as its forward computes them",
        "wdicts = []",
        "for layer in self.layers:",
        "    weights = torch.split(layer.weight, 1)",
        '    wdicts.append({rel: {"weight": w.squeeze(0)} for rel, w in zip(layer.rel_names, weights)})',
    ]
    assert [rename(line, renamed) for line in readers] == [
        "h = _hetero_conv_sources(conv, block, h0_src, mod_kwargs=wdicts[1])", "x = f(wdicts[0], wdicts[2])"]


def test_a_value_the_layers_read_beside_its_product_is_kept_in_a_list_too() -> None:
    lines, renamed = per_layer(RGCN, _Model(), ["f(weights_2, wdict)"], _names(set()))
    assert lines[1:] == [
        "weights_per_layer = []",
        "wdicts = []",
        "for layer in self.layers:",
        "    weights = torch.split(layer.weight, 1)",
        "    weights_per_layer.append(weights)",
        '    wdicts.append({rel: {"weight": w.squeeze(0)} for rel, w in zip(layer.rel_names, weights)})',
    ]
    assert renamed["weights_2"] == "weights_per_layer[2]" and renamed["wdict"] == "wdicts[0]"


def test_lines_of_some_layers_only_or_of_another_layers_value_stay() -> None:
    model = _Model()
    some = [line for line in RGCN if "[2]" not in line and "_2" not in line]
    assert per_layer(some, model, [], _names(set())) == (some, {})
    crossed = [*RGCN[:3], RGCN[3], RGCN[4].replace("weights_1)", "weights)"), RGCN[5]]
    lines, _ = per_layer(crossed, model, [], _names(set()))
    # wdict_1 reads layer 0's weights: the wdicts left as written, reading the weights' list
    assert lines[-3:] == [line.replace("weights_2)", "weights_per_layer[2])").replace("weights)", "weights_per_layer[0])")
                          .replace("weights_1)", "weights_per_layer[1])") for line in crossed[3:]]
    assert "    weights_per_layer.append(torch.split(layer.weight, 1))" in lines
    assert per_layer(RGCN[:2], _Model(count=2), [], _names(set()))[0][-1].startswith("    weights = ")


def test_a_stack_of_relational_layers_computes_its_weights_in_one_loop() -> None:
    generated = _generated("LayerList", size=6, out_size=4)
    method = generated.source.split("def inference(")[1].split("# --- gnn-codegen")[0]
    assert "for layer in self.layers:" in method and "weight_2 =" not in method and "wdict_1" not in method, method
    assert "mod_kwargs=wdicts[2]" in method, method
    _equals_forward(generated)

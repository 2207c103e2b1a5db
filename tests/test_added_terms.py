"""What rgcn-hetero's layer adds to a HeteroGraphConv's sum on the destination rows (its
self-loop `h + torch.matmul(inputs_dst[ntype], self.loop_weight)`, then `h + self.h_bias`):
the generated layer hands both to the relations' helper (render/hetero_added_terms.py), which
takes them into its one product (issue 40); forward's own additions where the terms are read
again. Each form equals forward on random heterographs."""

from __future__ import annotations

import json
import os

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.hetero import check_hetero
from tests.cases import REPO

MODELS = "tests/models/added_terms.py"
GAMES = "user:follows:user,user:plays:game,game:played_by:user,user:rates:game"
RELATIONS = ["follows", "plays", "played_by", "rates"]


def generated_from(models: str, name: str, **init):
    """The module generated for the class `name` of the file `models` on the games graph."""
    previous = os.getcwd()
    os.chdir(REPO)
    try:
        options = GenerateOptions(init=json.dumps({"rel_names": RELATIONS, **init}), metagraph=GAMES,
                                  feat_dims="user=6,game=6")
        return generate_all(f"{models}:{name}", options)
    finally:
        os.chdir(previous)


def _generated(name: str, **init):
    return generated_from(MODELS, name, **init)


def _equals_forward(generated) -> None:
    assert generated.verification is not None and generated.verification.ok
    for seed, (nodes, sizes) in enumerate([(120, (7, 1000)), (40, (3,))]):
        result = check_hetero(generated, nodes, seed=seed + 1, batch_sizes=sizes)
        assert result.ok, [(b.batch_size, b.sources, b.max_abs_diff) for b in result.batches]


def _layer_calls(source: str) -> list[str]:
    """The calls of the relations' helper in inference, whitespace removed."""
    method = "".join(source.split("def inference(")[1].split("# --- gnn-codegen")[0].split())
    return [part.split(")=")[0] for part in method.split("_hetero_conv_sources(")[1:]]


@pytest.mark.parametrize("name, added", [
    ("LoopFirst", "linear=(inputs_dst,self.loop_weight),bias=self.h_bias"),
    ("LoopWithoutBias", "linear=(inputs_dst,self.loop_weight)"),
    ("BiasOfAnotherShape", "linear=(inputs_dst,self.loop_weight),bias=self.h_bias"),
])
def test_the_self_loop_and_bias_go_to_the_relations_product(name: str, added: str) -> None:
    generated = _generated(name, in_feat=6, out_feat=9)
    method = "".join(generated.source.split("def inference(")[1].split("def _relation_sum")[0].split())
    assert f"mod_kwargs=wdict,{added},)" in method, method
    assert "torch.matmul(inputs_dst" not in method and "torch.mm(" not in method and "@self.loop" not in method
    _equals_forward(generated)


def test_a_self_loop_read_again_is_added_as_forward_adds_it() -> None:
    generated = _generated("LoopReadAgain", in_feat=6, out_feat=9)
    method = "".join(generated.source.split("def inference(")[1].split("def _relation_sum")[0].split())
    assert "linear=" not in method and "loop=torch.matmul(inputs_dst,self.loop_weight)" in method, method
    _equals_forward(generated)


def test_two_layers_each_one_product() -> None:
    generated = _generated("TwoLayers", size=6, out_size=4)
    method = "".join(generated.source.split("def inference(")[1].split("def _relation_sum")[0].split())
    assert method.count("linear=(") == 2 and method.count("bias=self.") == 2, method
    _equals_forward(generated)


def test_the_first_layers_self_loop_on_embeddings_is_taken_as_every_layers() -> None:
    """Where the first layer's input is the model's embeddings, its self-loop term (of the
    weights alone) is computed per batch from the embeddings' destination rows and handed to
    the helper, as every later layer's is: one form for the self-loop, and no table of the
    term for every node computed before the layers."""
    generated = _generated("FromEmbeddings", size=6, out_size=4)
    method = "".join(generated.source.split("def inference(")[1].split("def _relation_sum")[0].split())
    assert method.count("linear=(") == 2 and method.count("bias=self.") == 2, method
    assert "linear=(h0_dst,self.first.loop_weight)" in method and "matmul(self.embeds" not in method, method
    _equals_forward(generated)

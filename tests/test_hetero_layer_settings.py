"""A heterogeneous loop over the user's layers reads as forward spells it (issue 37, reviewer
52b on entity_classify): the layer count `needed` walks back through is the loop's,
`len(self.layers)`, not a number; the types each layer computes are those forward's
HeteroGraphConv gives (`hs.items()`), read from the graph, not a tuple of names; a term forward adds under a test of its layer's settings
(rgcn-hetero's `if self.self_loop:`) is passed to the helper under that test; the comment on
the relations' source rows is one plain sentence. Each module equals forward."""

from __future__ import annotations

import re

from tests.test_added_terms import _equals_forward, generated_from

MODELS = "tests/models/hetero_stacks.py"


def _method(source: str) -> str:
    return source.split("def inference(")[1].split("# --- gnn-codegen")[0]


def _code(method: str) -> str:
    """The method's code on one line per statement as far as black wraps it: spaces joined."""
    return re.sub(r"\s+", " ", re.sub(r"\(\s+", "(", re.sub(r",?\s+\)", ")", method)))


def test_needed_counts_the_layers_as_the_loop_does() -> None:
    generated = generated_from(MODELS, "RelStack")
    method = _method(generated.source)
    assert "for i in range(len(self.layers)):" in method
    assert "needed = batches.needed(nodes, layers=len(self.layers))" in method, method
    # the types each layer computes, as forward's HeteroGraphConv gives them
    assert "into = {d for s, _, d in g.canonical_etypes if s in h}" in method
    assert "for ntype in (t for t in g.ntypes if t in into):" in method and 'for ntype in ("' not in method
    # no test of settings around the self-loop in RelLayer's forward: none written
    assert "linear=(h_dst, self.layers[i].loop_weight)," in method
    _equals_forward(generated)


def test_a_self_loop_under_forwards_test_is_passed_under_it() -> None:
    generated = generated_from(MODELS, "SelfLoopRelStack")
    code = _code(_method(generated.source))
    assert ("linear=((h_dst, self.layers[i].loop_weight) if self.layers[i].self_loop else None)" in code
            or "linear=(h_dst, self.layers[i].loop_weight) if self.layers[i].self_loop else None" in code), code
    _equals_forward(generated)


def test_the_source_rows_comment_is_one_sentence() -> None:
    method = _method(generated_from(MODELS, "RelStack").source)
    comment = re.search(r"((?:^[ \t]*# .*\n)+)[ \t]*h_src = batches\.map_sources", method, re.MULTILINE)
    assert comment is not None, method
    text = " ".join(line.strip().removeprefix("#").strip() for line in comment.group(1).strip().splitlines())
    assert text.startswith("source rows of each relation into ntype: ") and "its work on source rows" not in text


def test_layers_on_lines_of_their_own_read_their_types_from_the_graph_too() -> None:
    """rgcn_hetero's style, `h = self.layers[1](g, h)` on its own line: each layer's types are
    read as forward's HeteroGraphConv gives them, from the dict that layer reads; one name for
    the types, rebound per layer. A layer that computes fewer types than its relations go into
    (forward reads the users' rows alone) keeps its own."""
    generated = generated_from(MODELS, "RelWrittenOut")
    method = _method(generated.source)
    assert "into = {d for s, _, d in g.canonical_etypes if s in inputs}" in method
    assert "into = {d for s, _, d in g.canonical_etypes if s in h1}" in method
    assert method.count("for ntype in (t for t in g.ntypes if t in into):") == 2 and 'for ntype in ("' not in method
    _equals_forward(generated)
    generated = generated_from(MODELS, "RelWrittenOutToUsers")
    method = _method(generated.source)
    assert method.count("for ntype in (t for t in g.ntypes if t in into):") == 1
    assert 'into=("user",)' in _code(method) and 'h2["user"] = batches.map(' in method
    _equals_forward(generated)

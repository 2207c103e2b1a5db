"""Row spaces: the generated code slices `[:num_dst]`, gathers `h[input_nodes]` and reads
`[start:end]` where the rows demand it, whatever the forward's own slicing — so a full-graph
style forward and a blocks-style one with explicit destination slices generate the same loop."""

from __future__ import annotations

import re
from pathlib import Path

from gnn_codegen.pipeline import generate_all
from gnn_codegen.verify.check import check

MODEL = Path(__file__).parent / "models" / "styles.py"


def _loops(source: str) -> str:
    method = source[source.index("    def inference") :]
    method = re.sub(r'"""(.|\n)*?"""', "", method, count=1)  # the docstring names forward's call
    # and the check of how the model is built has each class's own digest
    return re.sub(r'check_built\(self, "[0-9a-f]+"\)', "check_built(self, DIGEST)", method)


def test_full_graph_and_blocks_styles_generate_the_same_loops() -> None:
    full = generate_all(f"{MODEL}:FullGraphStyle")
    blocks = generate_all(f"{MODEL}:BlocksStyle")
    assert blocks.program.blocks_style and not full.program.blocks_style
    assert _loops(full.source) == _loops(blocks.source)
    for generated in (full, blocks):
        assert check(generated, num_nodes=157, batch_sizes=(1, 10, 157)).ok


def test_destination_rows_are_sliced_from_source_rows_not_reloaded() -> None:
    """Where a layer gathers its source rows (SAGEConv "pool" transforms every one), the
    destination rows the layer also reads are their first rows (the runtime slices them, no
    second load); where it reads them in place (SAGEConv "mean" 6 -> 8 only aggregates), the
    block's sources are all nodes and its destination rows are read once as a range, for the
    (written-out) convolution and the skip Linear alike."""
    source = generate_all(f"{MODEL}:BlocksStyle").source
    layer1, layer2, _ = source.split("# Layer ")[1:]
    calls = ["".join(layer.split()) for layer in (layer1, layer2)]
    assert ("batches.map(layer_1,source_rows=dict(x=x),destination_rows=dict(x_dst=x),in_place=True,"
            "nodes=needed[1],)") in calls[0]
    assert "self.skip(x_dst)" in layer1 and "block, x, x_dst)" in layer1
    assert ("batches.map(layer_2,source_rows=dict(h1=h1),destination_rows=dict(out_degrees=out_degrees,"
            "h1_dst=h1),nodes=needed[2],)") in calls[1]
    assert "h1_dst + self.layers[1](block, h1)" in layer2

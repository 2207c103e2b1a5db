"""Row spaces: the generated code slices `[:num_dst]`, gathers `h[input_nodes]` and reads
`[start:end]` where the rows demand it, whatever the forward's own slicing — so a full-graph
style forward and a blocks-style one with explicit destination slices generate the same loop."""

from __future__ import annotations

import re
from pathlib import Path

from gnn_codegen.pipeline import generate_all
from gnn_codegen.verify import check

MODEL = Path(__file__).parent / "models" / "styles.py"


def _loops(source: str) -> str:
    method = source[source.index("    def inference") :]
    return re.sub(r'"""(.|\n)*?"""', "", method, count=1)  # the docstring names forward's call


def test_full_graph_and_blocks_styles_generate_the_same_loops() -> None:
    full = generate_all(f"{MODEL}:FullGraphStyle")
    blocks = generate_all(f"{MODEL}:BlocksStyle")
    assert blocks.program.blocks_style and not full.program.blocks_style
    assert _loops(full.source) == _loops(blocks.source)
    for generated in (full, blocks):
        assert check(generated, num_nodes=157, batch_sizes=(1, 10, 157)).ok


def test_destination_rows_are_sliced_from_source_rows_not_reloaded() -> None:
    """Where a layer gathers its source rows (SAGEConv "pool" transforms every one), the
    destination rows are their first rows; where it reads them in place (SAGEConv "mean"
    6 -> 8 only aggregates), the block's sources are all nodes and its destination rows are
    loaded once as a range, for the (written-out) convolution and the skip Linear alike."""
    source = generate_all(f"{MODEL}:BlocksStyle").source
    layer1, layer2, _ = source.split("# Layer ")[1:]
    assert "all_sources=x.device == torch.device(device)" in layer1
    assert layer1.count("x[start:end]") == 1
    assert "self.layers[0].fc_self(x_dst)" in layer1 and "self.skip(x_dst)" in layer1
    assert "all_sources" not in layer2
    assert "h1[input_nodes].to(device)" in layer2
    assert "h[: block.num_dst_nodes()]" in layer2 and "h1[start:end].to" not in layer2

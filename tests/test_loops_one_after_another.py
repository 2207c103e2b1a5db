"""Loops of one module each, one after another (`for _ in range(3): h3 = F.relu(self.conv3(g,
h3))`, then the same over conv4 from h4 = h3): the random draws that broke a renaming of the
value a loop carries (stop 55's names55, reverted: the second loop read h3 where it carried h4,
an UnboundLocalError, or a wrong result the tool's own check refused). Each module is written,
checked exact, and its loops read the value they carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from gnn_codegen.pipeline import GenerateOptions, generate_all
from gnn_codegen.verify.check import check

_HEAD = '''
import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class RandomModel(nn.Module):
'''

_THREE_LOOPS = _HEAD + '''    def __init__(self):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(4, 4, "mean")
        self.conv2 = dglnn.SAGEConv(4, 4, "mean")
        self.conv3 = dglnn.SAGEConv(4, 4, "mean")

    def forward(self, g, x):
        h1 = x
        for _ in range(3):
            h1 = F.relu(self.conv1(g, h1))
        h2 = h1
        for _ in range(3):
            h2 = F.relu(self.conv2(g, h2))
        h3 = h2
        for _ in range(3):
            h3 = F.relu(self.conv3(g, h3))
        return h3
'''

_LINEAR_THEN_TWO_LOOPS = _HEAD + '''    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(4, 4)
        self.conv3 = dglnn.SAGEConv(4, 4, "mean")
        self.conv4 = dglnn.SAGEConv(4, 4, "mean")

    def forward(self, g, x):
        h1 = self.lin1(x)
        h2 = F.relu(h1)
        h3 = h2
        for _ in range(3):
            h3 = F.relu(self.conv3(g, h3))
        h4 = h3
        for _ in range(3):
            h4 = F.relu(self.conv4(g, h4))
        return h4
'''


@pytest.mark.parametrize("source", [_THREE_LOOPS, _LINEAR_THEN_TWO_LOOPS])
def test_loops_one_after_another_are_exact(tmp_path: Path, source: str) -> None:
    (tmp_path / "model.py").write_text(source)
    generated = generate_all(f"{tmp_path / 'model.py'}:RandomModel", GenerateOptions(feat_dims="x=4"))
    assert generated.verification is not None and generated.verification.ok
    for seed in (1, 2):
        result = check(generated, num_nodes=90, seed=seed, batch_sizes=(13, 90))
        assert result.ok, result.max_abs_diff

"""splice(BEFORE) == AFTER on dedented strings: the class with the method added, the top-level
names it needs, nothing else."""

from __future__ import annotations

from textwrap import dedent

from gnn_codegen.splice import splice

METHOD = dedent('''\
    @torch.no_grad()
    def inference(self, g, x, batch_size, device):
        return helper_fn(x)
''')
HELPERS = "def _helper(g):\n    return dgl.NID\n"
HEADER = "# header\n"


def test_keeps_what_the_class_needs_and_drops_the_rest() -> None:
    before = dedent('''\
        """A training script."""
        from __future__ import annotations
        import argparse
        import torch
        import torch.nn as nn
        from mylib import helper_fn, unused_fn

        HIDDEN = 16
        SEED = 3
        torch.manual_seed(SEED)


        class Block(nn.Module):
            pass


        class Model(nn.Module):
            # the model
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.size = HIDDEN

            def forward(self, g, x):
                return x


        def train(model):
            opt = argparse.Namespace()


        if __name__ == "__main__":
            train(Model())
    ''')
    after = splice(before, "Model", METHOD, HELPERS, HEADER)
    assert after == dedent('''\
        # header

        from __future__ import annotations
        import torch
        import torch.nn as nn
        from mylib import helper_fn
        import dgl

        HIDDEN = 16


        class Block(nn.Module):
            pass


        class Model(nn.Module):
            # the model
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.size = HIDDEN

            def forward(self, g, x):
                return x
            @torch.no_grad()
            def inference(self, g, x, batch_size, device):
                return helper_fn(x)
        def _helper(g):
            return dgl.NID
    ''')


def test_import_alias_is_kept_by_the_name_it_binds() -> None:
    before = dedent('''\
        import dgl.nn as dglnn
        import torch.nn.functional as F, os
        import dgl
        import torch


        class M(torch.nn.Module):
            def forward(self, g, x):
                return F.relu(dglnn.GraphConv(1, 1)(g, x))
    ''')
    after = splice(before, "M", METHOD.replace("helper_fn", "F.relu"), HELPERS, HEADER)
    assert "import torch.nn.functional as F\n" in after
    assert "os" not in after
    assert after.count("import dgl\n") == 1 and "import dgl.nn as dglnn" in after

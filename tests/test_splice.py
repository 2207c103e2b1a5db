"""splice(BEFORE) == AFTER on dedented strings: the class with the method added, the top-level
names it needs, nothing else."""

from __future__ import annotations

from textwrap import dedent

from gnn_codegen.write.splice import splice

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

        """A training script."""

        from __future__ import annotations
        import dgl
        import torch
        import torch.nn as nn
        from mylib import helper_fn

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


RUNNABLE = dedent('''\
    @torch.no_grad()
    def inference(self, g, x, batch_size, device):
        return F.relu(x)
''')


def test_imports_below_the_class_move_above_it() -> None:
    # `@torch.no_grad()` runs when the class is defined: an import of torch left below the class
    # would make the generated module fail with NameError on import, so it moves to the top;
    # the user's other statements keep their order.
    before = dedent('''\
        """A model whose imports are partly below it."""
        from __future__ import annotations

        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, g, x):
                return F.relu(x)


        import torch

        # the functional API
        import torch.nn.functional as F
    ''')
    after = splice(before, "Model", RUNNABLE, HELPERS, HEADER)
    assert after == dedent('''\
        # header

        """A model whose imports are partly below it."""

        from __future__ import annotations

        import dgl
        import torch.nn as nn
        import torch


        class Model(nn.Module):
            def forward(self, g, x):
                return F.relu(x)
            @torch.no_grad()
            def inference(self, g, x, batch_size, device):
                return F.relu(x)

        # the functional API
        import torch.nn.functional as F


        def _helper(g):
            return dgl.NID
    ''')
    namespace: dict[str, object] = {}
    exec(compile(after, "<spliced>", "exec"), namespace)
    import torch

    model = namespace["Model"]()  # type: ignore[operator]
    assert model.inference(None, torch.tensor([-1.0, 2.0]), 1, "cpu").tolist() == [0.0, 2.0]


USER_INFERENCE = dedent('''\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from tqdm import tqdm


    class Model(nn.Module):
        def forward(self, g, x):
            return F.relu(x)

        @torch.no_grad()
        def inference(self, g, device, batch_size):
            for _ in tqdm(range(3)):
                pass

        def extra(self):
            return 1
''')


def test_the_generated_method_replaces_the_users_method_of_the_same_name() -> None:
    after = splice(USER_INFERENCE, "Model", RUNNABLE, HELPERS, HEADER)
    assert after.count("def inference(") == 1
    assert "def inference(self, g, x, batch_size, device):" in after
    assert "tqdm" not in after  # read only by the method that was replaced
    assert after.index("def extra(") < after.index("def inference(")


def test_method_name_names_the_generated_method_and_keeps_the_users() -> None:
    after = splice(USER_INFERENCE, "Model", RUNNABLE, HELPERS, HEADER, method_name="layerwise_inference")
    assert "def inference(self, g, device, batch_size):" in after
    assert "from tqdm import tqdm" in after
    assert after.count("def layerwise_inference(self, g, x, batch_size, device):") == 1
    assert after.count("def inference(") == 1


def test_statements_that_do_work_stay_out_though_the_class_spells_their_names() -> None:
    # forward's parameters g and x, and the generated method's, are not the script's g and x:
    # only names the class reads from the module keep a statement (issue 34: the generated
    # module built a graph, a model and zeros when imported, and loaded graph.bin)
    before = dedent('''\
        import os
        import dgl
        import torch
        import torch.nn as nn

        os.environ["DGLBACKEND"] = "pytorch"
        ACTS = {}
        for name in ("relu", "elu"):
            ACTS[name] = getattr(torch, name)
        graphs, _ = dgl.load_graphs("graph.bin")
        g = dgl.rand_graph(10, 30)
        x = torch.zeros(10, 6)
        print("loaded")


        class Model(nn.Module):
            def forward(self, g, x):
                return ACTS["relu"](x)


        model = Model()
        model(g, x)
    ''')
    after = splice(before, "Model", RUNNABLE, HELPERS, HEADER)
    assert after == dedent('''\
        # header

        import dgl
        import torch
        import torch.nn as nn
        ACTS = {}
        for name in ("relu", "elu"):
            ACTS[name] = getattr(torch, name)


        class Model(nn.Module):
            def forward(self, g, x):
                return ACTS["relu"](x)
            @torch.no_grad()
            def inference(self, g, x, batch_size, device):
                return F.relu(x)


        def _helper(g):
            return dgl.NID
    ''')


def test_the_imports_it_adds_go_where_isort_puts_them() -> None:
    """numpy (the runtime's .npy files) between dgl and torch, a module of the standard library
    into the user's standard-library section, and one section of their own where there is none
    (issue 37: `import numpy` sat after torch)."""
    helpers = "def _helper(g):\n    return numpy.prod(os.sep, time.time(), dgl.NID)\n"
    before = dedent('''\
        import math

        import dgl.nn as dglnn
        import torch.nn as nn
        import torch.nn.functional as F
        from dgl.nn import GraphConv


        class Model(nn.Module):
            def forward(self, g, x):
                return F.relu(GraphConv(2, 2)(g, x) * math.pi + dglnn.SAGEConv)
    ''')
    after = splice(before, "Model", RUNNABLE, helpers, HEADER)
    assert after.split("\n\nclass")[0] == dedent('''\
        # header

        import math
        import os
        import time

        import dgl
        import dgl.nn as dglnn
        import numpy
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from dgl.nn import GraphConv
    ''')
    without = splice(before.replace("import math\n\n", "").replace(" * math.pi", ""), "Model", RUNNABLE, helpers, HEADER)
    assert without.split("\n\nclass")[0].startswith("# header\n\nimport os\nimport time\n\nimport dgl\n")


def test_the_users_module_docstring_stays_the_modules_first_statement() -> None:
    """The user's file docstring says what the model is (issue 37: it was dropped): it stays
    the generated module's docstring, below the header's comments, before the imports."""
    before = dedent('''\
        """PairNorm between GCN layers (Zhao and Akoglu, 2020)."""

        import torch.nn as nn


        class Model(nn.Module):
            """The model's own docstring."""

            def forward(self, g, x):
                return x
    ''')
    after = splice(before, "Model", METHOD, HELPERS, HEADER)
    assert after.startswith('# header\n\n"""PairNorm between GCN layers (Zhao and Akoglu, 2020)."""\n\nimport dgl\n')
    assert '    """The model\'s own docstring."""\n' in after
    namespace: dict[str, object] = {}
    exec(compile(after.replace("helper_fn(x)", "x"), "<spliced>", "exec"), namespace)
    assert namespace["__doc__"] == "PairNorm between GCN layers (Zhao and Akoglu, 2020)."


def test_the_runtimes_imports_stay_below_its_banner() -> None:
    """The runtime's section imports the modules it reads itself, below its banner: the top of
    the module holds the model's imports and those the method and the convolution helpers read
    (issue 37: ctypes, json, weakref, ... sat above the user's class as if the model's), and a
    name of the user's the class keeps (`time = 0.5`) keeps its value: the runtime imports the
    module under a name of its own."""
    from gnn_codegen.render.runtime_section import banner, split

    runtime = "import json\nimport time\n\nimport torch\n\n\nclass _Runtime:\n    def f(self):\n" \
              "        return json.dumps(time.time()), torch.zeros(1)\n"
    helpers = f"def _helper(g):\n    return dgl.NID\n\n\n{banner('0', '_Runtime')}\n\n{runtime}"
    before = dedent('''\
        import torch.nn as nn

        time = 0.5


        class Model(nn.Module):
            def forward(self, g, x):
                return x * time
    ''')
    after = splice(before, "Model", RUNNABLE, helpers, HEADER)
    head, _, below = split(after)
    assert "import json" not in head and "import time" not in head and "import dgl\n" in head
    assert "import torch\n" in head  # the method's decorator reads it
    assert below.lstrip("\n").startswith("import json\nimport time as time_2\n\nimport torch\n") and "time_2.time()" in below
    assert "time = 0.5" in head and "return x * time\n" in head

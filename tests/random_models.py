"""Random GNN models for the differential test (tests/test_differential.py).

`model_specs()` is a hypothesis strategy that draws a `ModelSpec`: a small straight-line program
(every line `hN = <piece>(earlier values)`, value 0 being the input `x`) built only of pieces that
gnn-codegen is meant to support:

* 1-3 message-passing depths, each with 1-2 convolutions: dglnn.SAGEConv (mean / gcn / pool),
  dglnn.GraphConv (norm both / left / right / none, allow_zero_in_degree=True), dglnn.GATConv
  (1-3 heads, allow_zero_in_degree=True, heads then `.flatten(1)` or `.mean(1)`, or one head
  dropped by `.squeeze()` with no dim),
  dglnn.GINConv(nn.Linear(...), sum / mean / max, learn_eps or not); two convolutions at one
  depth (reading the same value, or two values of the same depth) are summed or concatenated;
* between layers (and optionally before the first one): F.relu / torch.tanh / F.elu,
  nn.Linear, nn.BatchNorm1d, nn.LayerNorm, nn.Dropout or F.dropout(..., training=self.training);
* in the full-graph style, an optional per-edge input `w` (forward(self, g, x, w)) passed as
  `edge_weight=w` to some SAGEConv / GraphConv / GINConv layers;
* an optional input encoder (Linear + ReLU) and an optional decoder MLP;
* residual adds of equal-width values of different depths (`h + conv(g, h)`), or through a
  Linear projection (`conv(g, h) + self.skipN(x)`); jumping knowledge (concatenation of several
  depths' outputs along the last dimension, then a Linear); optionally a tuple (logits, embedding);
  optionally a fixed range of the first result's rows (`h[:17]`, `h[-9:, :]`, `h.narrow(0, 3, 20)`);
* in-place operations between layers (`h.mul_(1.5).add_(0.25)`, `F.relu(h, inplace=True)`,
  `h.clamp_(-2, 2)`), also on a value that dropout returned unchanged and that later lines read
  again, so the generated code must see the write through every alias;
* full style, one convolution of a depth applied 3 or 4 times with its weights tied (`for _ in
  range(3): h = F.relu(conv(g, h))`), which the generated code writes as one loop;
* Python tests of a value's shape or dtype after a depth's layers (`if h.shape[-1] == K: h =
  self.linN(h)`, K sometimes the width; `if h.dtype == torch.float32:`; `if h.dim() == 3:`),
  decided while tracing (static_decisions.py);
* the convolutions kept in a plain Python list (`self.conv = []`, `.append(...)`, called as
  `self.conv[i]`), as BWGNN keeps them: not registered, called as forward calls them;
* `MeanConv`, a one-hop message-passing module of the user's own (`update_all` with a mean, then
  a Linear), which gnn-codegen must prove exact on blocks rather than assume, and (full style)
  `TwoRoundMeanConv`, `dglnn.SGConv(k=2)`, `dglnn.APPNPConv(k=2)`,
  `dglnn.GatedGraphConv(n_steps=2)`, `dglnn.TAGConv(k=2)` and `dglnn.ChebConv(k=2)` (no
  lambda_max: DGL reads g.batch_size), which propagate twice in one call and must be traced into
  (APPNPConv, SGConv and TAGConv may take w, which DGL's EdgeWeightNorm normalises on the whole
  graph);
* `NdataConv` (full style, _draw_ndata_conv), a user layer as benchmarking-gnns writes one:
  `g.ndata` written, `update_all` with a Python message and a drawn reducer (a Python one
  too), `g.ndata` read;
  it fails on a block and runs on each block as a graph over its source nodes;
* message passing written inline in forward (`with g.local_scope(): g.srcdata["h"] = h;
  g.update_all(fn.copy_u("h", "m"), fn.sum / mean / max("m", "h")); h = g.dstdata["h"]`);
* `h - h.mean(0)`, a standardisation by `h.std(0)`, min-max scaling by `h.amin(0)` and
  `h.amax(0)`, a division by `h.abs().max()`, anywhere between or after layers, several in a
  row: reductions over all nodes, computed in a pass before the stage that reads them;
* module-level constants named like the generated code's own names (`device`, `batch_size`,
  `num_nodes`, `layer_1`, ...), which forward reads (`h * batch_size`): nothing may capture them;
* DGL's idioms: the graph kept on the model (`self.g = g`, `forward(self, x)`, full style), the
  inputs read from the graph (`x = g.ndata["x"]`, `blocks[0].srcdata["x"]`, `g.edata["w"]`), and
  x a table of the model (`x = self.table.weight`), and a graph derived from forward's in
  forward's first line (DERIVED_GRAPHS: `g = dgl.add_self_loop(g)`, `g.add_self_loop()`,
  `g.remove_self_loop().add_self_loop()`, `dgl.reverse(g)`, ...), then a value of that graph
  applied to x outside message passing (GRAPH_VALUES: a degree norm written by hand,
  `torch.ones(g.num_nodes(), 1)`, `torch.arange(g.num_nodes())`); a second convolution at a depth
  on `dgl.reverse(g)`, or on the edges of one type, `g.edge_subgraph(g.edata["etype"] == k,
  relabel_nodes=False)` (blocks style: of `dgl.block_to_graph(blocks[i])`, as DGL's MAG240M
  RGAT writes it; the check then hands forward real blocks of the whole graph).

`multi_round_specs()` draws the same models with one convolution replaced by `TwoRoundUDFConv`,
a user module that propagates twice in one call with a Python message function, which
gnn-codegen cannot split into rounds: those must be refused, never generated. (Its twin with
DGL's built-in functions, `TwoRoundMeanConv`, is traced into, a hop per round, and drawn by
`model_specs()` in the full-graph style.)

`user_propagation_specs()` draws full-graph models with one convolution a module of the user's own
from `USER_PROPAGATION` (one clearly delimited section below): rounds of update_all with a
post-step after each, or a layer normalised by its graph's out-degrees; both must be exact.

`render_model_source(spec)` writes a spec as a model file defining `RandomModel(nn.Module)`, with
`forward(self, g, x)` on the full graph, or `forward(self, blocks, x)` in the sampled-blocks style
(`blocks[i]` per depth, sometimes `(h, h[:blocks[i].num_dst_nodes()])` pairs, and rows of earlier
depths sliced to the current block's destination nodes where they meet later ones).

The spec is made of frozen dataclasses of plain values, so hypothesis shrinks it through its
draws and a failing example prints as a readable value; the test also notes the rendered source.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

CONV_KINDS = ("SAGEConv", "GraphConv", "GATConv", "GINConv", "MeanConv", "inline", "TwoRoundMeanConv", "SGConv",
              "APPNPConv", "GatedGraphConv", "TAGConv", "ChebConv", "NdataConv")
# convolutions of several hops in one call: full-graph style only (a sampled-training model
# would give them as many blocks)
MULTI_HOP_KINDS = ("TwoRoundMeanConv", "SGConv", "APPNPConv", "GatedGraphConv", "TAGConv", "ChebConv")
INLINE_REDUCERS = ("sum", "mean", "max")
SAGE_AGGREGATORS = ("mean", "gcn", "pool")
GRAPHCONV_NORMS = ("both", "left", "right", "none")
GIN_AGGREGATORS = ("sum", "mean", "max")
ACTIVATIONS = {"relu": "F.relu", "tanh": "torch.tanh", "elu": "F.elu"}
BETWEEN = ("act", "linear", "batchnorm", "layernorm", "dropout", "inplace", "scale")
IN_PLACE = {
    "mul_add": "{h}.mul_(1.5).add_(0.25)",
    "relu": "F.relu({h}, inplace=True)",
    "clamp": "{h}.clamp_(-2.0, 2.0)",
}
# Module-level constants forward may read, named like what generated code defines for itself.
CONSTANTS = ("device", "batch_size", "num_nodes", "max_memory", "progress", "batches", "layer_1",
             "prologue", "feat0", "out_degrees", "SCALE")
MIN_WIDTH, MAX_WIDTH = 4, 12
# Variable names forward may assign (besides h1, h2, ...): generic ones, ones the generated code
# uses itself (buffers, loop variables, inference's parameters), and `x`, which is reassigned.
VARIABLES = (
    "h", "x", "out", "emb", "z", "hidden", "feat", "rst", "logits", "h1", "h2", "h3", "h_dst",
    "out0", "out1", "e", "block", "start", "end", "input_nodes", "num_nodes", "out_degrees",
    "edge_ids", "num_edges", "batch_size", "device",
)


@dataclass(frozen=True)
class Step:
    """One line of forward, `h{index} = ...`, reading earlier values (0 is the input x)."""

    op: str  # conv | act | linear | batchnorm | layernorm | dropout | inplace | scale | add | cat
    inputs: tuple[int, ...]
    width: int  # width of the result (for GATConv: after flatten / mean over heads)
    kind: str = ""  # conv: class name; act: relu|tanh|elu; dropout: module|functional; cat: dim;
    # inplace: a key of IN_PLACE; scale: the module-level constant it multiplies by
    option: str = ""  # SAGEConv aggregator, GraphConv norm, GINConv aggregator, GATConv reduce
    heads: int = 1  # GATConv
    pair: bool = False  # blocks style: conv(block, (h, h[:block.num_dst_nodes()]))
    learn_eps: bool = False  # GINConv
    edge_weight: bool = False  # conv(g, h, edge_weight=w), w the model's per-edge input
    var: str = ""  # the variable forward assigns it to ("" or taken: h{index}), see VARIABLES
    # full style, a second convolution at its depth: on the reversed graph, `conv(dgl.reverse(g),
    # h)` (a loop of its own after the first's, cut.mp_depths)
    reversed_graph: bool = False
    # full style, the one convolution of its depth applied this many times with its weights
    # tied, `for _ in range(3): h = F.relu(conv(g, h))` (its rounds are written as one loop:
    # gnn_codegen/render/layer_loops.py)
    rounds: int = 1
    # a second convolution at its depth on forward's second graph, `conv(gs[1], h)`: see
    # _several_graphs
    second_graph: bool = False
    # a second convolution at its depth on the edges of one type, `dgl.edge_subgraph(g,
    # g.edata["etype"] == k, relabel_nodes=False)` (blocks style: of dgl.block_to_graph(block),
    # as DGL's MAG240M RGAT writes it); -1: not
    kept_edges: int = -1


@dataclass(frozen=True)
class ModelSpec:
    style: str  # "full": forward(self, g, x); "blocks": forward(self, blocks, x)
    in_width: int
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]  # one value, or (logits, embedding)
    edge_weights: bool = False  # full style only: forward(self, g, x, w), w one weight per edge
    constants: tuple[str, ...] = ()  # module-level constants forward reads (see CONSTANTS)
    # full style only: the model keeps its graph (`self.g = g` in __init__, forward(self, x))
    kept_graph: bool = False
    # forward reads x (and w) from its graph: `x = g.ndata["x"]` (blocks style:
    # `blocks[0].srcdata["x"]`), `w = g.edata["w"]`, instead of taking them as arguments
    inputs_on_graph: bool = False
    # x is a table of the model (`x = self.table.weight`, an nn.Embedding's, as DGL's RGCN entity
    # classification reads it); only where a convolution reads it through ops of one input
    table: bool = False
    # full style, no edge weights: forward derives its graph first (`g = dgl.add_self_loop(g)`,
    # `g = g.remove_self_loop().add_self_loop()`, ...): a key of DERIVED_GRAPHS, or ""
    derived_graph: str = ""
    # ...and then computes a value from that graph outside message passing, applied to x (a
    # degree norm written by hand, ones per node): a key of GRAPH_VALUES, or ""
    graph_value: str = ""
    # forward(self, gs, x) over two graphs of the same nodes side by side: see _several_graphs
    several_graphs: bool = False
    # the convolutions kept in a plain Python list, BWGNN's `self.conv = []` and `.append(...)`,
    # called as `self.conv[i]` (plain_containers.py)
    plain_list: bool = False
    # forward returns a fixed range of its first result's rows (`h[:17]`, `h[-9:]`,
    # `h.narrow(0, 3, 20)`, row_ranges.py): the suffix written after it, or ""
    row_range: str = ""

    def width(self, value: int) -> int:
        return self.in_width if value == 0 else self.steps[value - 1].width


# --- drawing ------------------------------------------------------------------------------------

widths = st.integers(MIN_WIDTH, MAX_WIDTH)


class _Builder:
    def __init__(self, draw: st.DrawFn, in_width: int):
        self.draw = draw
        self.in_width = in_width
        self.steps: list[Step] = []
        self.depth = [0]  # message-passing depth of every value
        # whether a value may be the input tensor itself (dropout and in-place ops return their
        # input): an in-place op on it would change the caller's x
        self.is_input = [True]
        self.constants: list[str] = []

    def width(self, value: int) -> int:
        return self.in_width if value == 0 else self.steps[value - 1].width

    def add(self, step: Step) -> int:
        if self.draw(st.booleans()):
            step = replace(step, var=self.draw(st.sampled_from(VARIABLES)))
        self.steps.append(step)
        self.depth.append(max(self.depth[i] for i in step.inputs) + _hops(step))
        self.is_input.append(step.op in ("dropout", "inplace") and self.is_input[step.inputs[0]])
        return len(self.steps)


def _divisors(n: int, limit: int = 3) -> list[int]:
    return [h for h in range(1, limit + 1) if n % h == 0]


def _draw_conv(draw: st.DrawFn, b: _Builder, source: int, style: str, target: int | None,
               edge_weights: bool = False) -> int:
    """A convolution reading `source`; its result has width `target` when one is given. With
    edge_weights, convolutions that accept `edge_weight=` may be drawn to take the model's w."""
    kind = draw(st.sampled_from(CONV_KINDS))
    if kind == "NdataConv":
        return _draw_ndata_conv(draw, b, source, style, target)
    if kind in MULTI_HOP_KINDS and style == "blocks":
        kind = "MeanConv"  # two hops in one call of one block is no sampled-training model
    if kind in ("inline", "APPNPConv") and target is not None and target != b.width(source):
        kind = "MeanConv"  # an inline propagation (and APPNP's) keeps its input's width
    if kind == "APPNPConv":  # with w, normalised by DGL's EdgeWeightNorm on the whole graph
        return b.add(Step("conv", (source,), b.width(source), kind, edge_weight=edge_weights and draw(st.booleans())))
    pair = style == "blocks" and kind not in ("MeanConv", "inline", *MULTI_HOP_KINDS) and draw(st.booleans())
    if kind == "inline":
        return b.add(Step("conv", (source,), b.width(source), kind, draw(st.sampled_from(INLINE_REDUCERS))))
    if target is None and draw(st.booleans()):
        target = b.width(source)  # keep the width, so residuals can add it
    if kind == "GATConv":
        reduce = draw(st.sampled_from(("flatten", "mean", "squeeze")))
        if reduce == "squeeze":  # one head, its axis dropped by `.squeeze()` with no dim (OpenHGNN's RGAT)
            return b.add(Step("conv", (source,), draw(widths) if target is None else target, kind, reduce,
                              heads=1, pair=pair))
        if target is None:
            heads = draw(st.integers(1, 3))
            per_head = draw(st.integers(2, MAX_WIDTH // heads)) if reduce == "flatten" else draw(widths)
            width = per_head * heads if reduce == "flatten" else per_head
        else:
            heads = draw(st.sampled_from(_divisors(target))) if reduce == "flatten" else draw(st.integers(1, 3))
            width = target
        return b.add(Step("conv", (source,), width, kind, reduce, heads=heads, pair=pair))
    width = draw(widths) if target is None else target
    if kind == "GatedGraphConv" and width < b.width(source):
        kind = "MeanConv"  # GatedGraphConv pads its input up to its width, never down
    weighted = edge_weights and draw(st.booleans())
    if kind in ("SGConv", "TAGConv"):
        return b.add(Step("conv", (source,), width, kind, edge_weight=weighted))
    if kind in ("MeanConv", *MULTI_HOP_KINDS):
        return b.add(Step("conv", (source,), width, kind))
    if kind == "SAGEConv":
        option = draw(st.sampled_from(SAGE_AGGREGATORS))
        return b.add(Step("conv", (source,), width, kind, option, pair=pair, edge_weight=weighted))
    if kind == "GraphConv":
        option = draw(st.sampled_from(GRAPHCONV_NORMS))
        return b.add(Step("conv", (source,), width, kind, option, pair=pair, edge_weight=weighted))
    option = draw(st.sampled_from(GIN_AGGREGATORS))
    learn_eps = draw(st.booleans())
    return b.add(Step("conv", (source,), width, kind, option, pair=pair, learn_eps=learn_eps,
                      edge_weight=weighted))


# convolutions a model may apply several times with the same weights (full style)
TIED_KINDS = ("GraphConv", "SAGEConv", "GINConv", "MeanConv", "GATConv")


# --- a user layer that writes g.ndata (gnn_codegen/analysis/block_as_graph.py) --------------------------
# "median": a Python reduce (median_of_mailbox), which DGL runs only for nodes with in-edges and
# not at all on a block without edges (the runtime's _with_companion)
NDATA_REDUCERS = ("sum", "mean", "max", "median")


def _draw_ndata_conv(draw: st.DrawFn, b: _Builder, source: int, style: str, target: int | None) -> int:
    """NdataConv reading `source`, with a drawn reducer (Step.option). Full-graph style only: a
    sampled-training model never calls such a layer on its blocks (MeanConv there instead)."""
    width = draw(widths) if target is None else target
    if style == "blocks":
        return b.add(Step("conv", (source,), width, "MeanConv"))
    return b.add(Step("conv", (source,), width, "NdataConv", draw(st.sampled_from(NDATA_REDUCERS))))


# reductions over all nodes between or after layers (node_reductions.py), as people write them
OVER_ALL_NODES = {
    "mean": "{h} - {h}.mean(0)",
    "std": "({h} - {h}.mean(0)) / ({h}.std(0) + 0.5)",
    "minmax": "({h} - {h}.amin(0)) / ({h}.amax(0) - {h}.amin(0) + 1.0)",
    "max": "{h} / ({h}.abs().max() + 1.0)",
}


def _draw_between(draw: st.DrawFn, b: _Builder, value: int) -> int:
    """A piece between convolutions, or after the last: also `h - h.mean(0)`, a mean over all
    nodes (a pass before the stage that reads it; several in one gap chain, each a pass of its
    own; after the last layer, a pass after it)."""
    piece = draw(st.sampled_from(BETWEEN + ("centre",)))
    width = b.width(value)
    if piece == "act":
        return b.add(Step("act", (value,), width, draw(st.sampled_from(tuple(ACTIVATIONS)))))
    if piece == "linear":
        return b.add(Step("linear", (value,), draw(widths)))
    if piece == "dropout":
        return b.add(Step("dropout", (value,), width, draw(st.sampled_from(("module", "functional")))))
    if piece == "inplace":
        if b.is_input[value]:
            return b.add(Step("act", (value,), width, "relu"))
        return b.add(Step("inplace", (value,), width, draw(st.sampled_from(tuple(IN_PLACE)))))
    if piece == "scale":
        constant = draw(st.sampled_from(CONSTANTS))
        if constant not in b.constants:
            b.constants.append(constant)
        return b.add(Step("scale", (value,), width, constant))
    if piece == "centre":
        return b.add(Step(piece, (value,), width, draw(st.sampled_from(tuple(OVER_ALL_NODES)))))
    return b.add(Step(piece, (value,), width))


def _ordered(draw: st.DrawFn, a: int, b: int) -> tuple[int, int]:
    """(a, b), or (b, a): `conv(g, h) + h` and `h + conv(g, h)` are both written."""
    return (b, a) if draw(st.booleans()) else (a, b)


@st.composite
def model_specs(draw: st.DrawFn) -> ModelSpec:
    style = draw(st.sampled_from(("full", "blocks")))
    edge_weights = style == "full" and draw(st.booleans())
    b = _Builder(draw, draw(widths))
    h = 0
    if draw(st.booleans()):  # input encoder: Linear + ReLU
        h = b.add(Step("linear", (h,), draw(widths)))
        h = b.add(Step("act", (h,), b.width(h), "relu"))
    for _ in range(draw(st.integers(0, 2)) if draw(st.booleans()) else 0):  # e.g. input dropout
        h = _draw_between(draw, b, h)
    depth_outputs: list[int] = []
    num_depths = draw(st.integers(1, 3))
    for d in range(num_depths):
        source = h
        first = _draw_conv(draw, b, source, style, None, edge_weights)
        h = first
        conv = b.steps[first - 1]
        if (style == "full" and conv.kind in TIED_KINDS and conv.width == b.width(source)
                and (conv.kind != "GATConv" or conv.option == "mean") and draw(st.integers(0, 5)) == 0):
            b.steps[first - 1] = replace(conv, rounds=draw(st.integers(3, 4)))  # weights tied over rounds
            b.depth[first] = b.depth[source] + b.steps[first - 1].rounds
        elif draw(st.booleans()):  # a second convolution at this depth
            # it reads the same value, or another of the same depth (say, before an activation)
            same_depth = [v for v in range(len(b.steps) + 1) if b.depth[v] == b.depth[source]]
            source2 = draw(st.sampled_from(same_depth[::-1]))
            combine = draw(st.sampled_from(("add", "cat")))
            if combine == "add":
                second = _draw_conv(draw, b, source2, style, b.width(first), edge_weights)
            else:
                second = _draw_conv(draw, b, source2, style, None, edge_weights)
            conv = b.steps[second - 1]
            plain = conv.kind not in ("inline", "NdataConv") and not conv.edge_weight
            derived = draw(st.sampled_from(("", "reverse", "edges"))) if plain else ""
            if style == "full" and derived == "reverse":
                b.steps[second - 1] = replace(conv, reversed_graph=True)
            elif derived == "edges" and (style == "full" or conv.kind not in ("MeanConv", *MULTI_HOP_KINDS)):
                # on a block's graph, as DGL's example: source and destination rows
                b.steps[second - 1] = replace(conv, kept_edges=draw(st.integers(0, 2)), pair=style == "blocks")
            if combine == "add":
                h = b.add(Step("add", _ordered(draw, first, second), b.width(first)))
            else:
                dim = draw(st.sampled_from(("-1", "1")))
                parts = _ordered(draw, first, second)
                h = b.add(Step("cat", parts, b.width(first) + b.width(second), dim))
        residual = draw(st.sampled_from(("none", "add", "skip")))
        earlier = [v for v in range(len(b.steps) + 1) if b.depth[v] < b.depth[h]]
        if residual == "add":
            same = [v for v in earlier if b.width(v) == b.width(h)]
            if same:
                other = draw(st.sampled_from(same[::-1]))  # the latest first: `h + conv(g, h)`
                h = b.add(Step("add", _ordered(draw, h, other), b.width(h)))
            else:
                residual = "skip"
        if residual == "skip":
            other = draw(st.sampled_from(earlier[::-1]))
            skip = b.add(Step("linear", (other,), b.width(h)))
            h = b.add(Step("add", _ordered(draw, h, skip), b.width(h)))
        for _ in range(draw(st.integers(0, 3))):
            h = _draw_between(draw, b, h)
        if draw(st.booleans()):
            h = _draw_static_condition(draw, b, h)
        depth_outputs.append(h)
    if len(depth_outputs) >= 2 and draw(st.booleans()):  # jumping knowledge
        chosen = [v for v in depth_outputs[:-1] if draw(st.booleans())] or depth_outputs[:1]
        parts = (*chosen, depth_outputs[-1])
        cat = b.add(Step("cat", parts, sum(b.width(v) for v in parts), draw(st.sampled_from(("-1", "1")))))
        h = b.add(Step("linear", (cat,), draw(widths)))
    if draw(st.booleans()):  # decoder MLP
        h = b.add(Step("linear", (h,), draw(widths)))
        h = b.add(Step("act", (h,), b.width(h), draw(st.sampled_from(tuple(ACTIVATIONS)))))
        h = b.add(Step("linear", (h,), draw(widths)))
    outputs: tuple[int, ...] = (h,)
    if draw(st.booleans()):  # (logits, embedding)
        embeddings = [v for v in range(1, len(b.steps) + 1) if v != h]
        if embeddings:
            outputs = (h, draw(st.sampled_from(embeddings[::-1])))
    if any(step.kind == "NdataConv" for step in b.steps):
        # an NdataConv leaves its g.ndata on forward's graph, which a reversed graph copies: that
        # combination fails the check before writing (nothing written) and is open (stop 34)
        b.steps = [replace(step, reversed_graph=False) for step in b.steps]
    edge_weights = any(step.edge_weight for step in b.steps)
    kept_graph = style == "full" and draw(st.booleans())
    home = draw(st.sampled_from(("argument", "graph", "table")))
    table = home == "table" and _convolution_reads_input_alone(b.steps)
    # edge data of a graph forward derives is not its graph's (refused): no edge types to pick
    kept_edges = any(step.kept_edges >= 0 for step in b.steps)
    derived_graph, graph_value = _draw_derived(draw, style, edge_weights or kept_edges, table, kept_graph)
    spec = ModelSpec(style, b.in_width, tuple(b.steps), outputs, edge_weights, tuple(b.constants), kept_graph,
                     home == "graph", table, derived_graph, graph_value, row_range=draw(_row_ranges()))
    # drawn last, so that the draws before it give the models they gave before
    return replace(_several_graphs(draw, spec), plain_list=draw(st.booleans()))


def _row_ranges() -> st.SearchStrategy[str]:
    """A range of rows forward returns, within the fewest nodes of the differential test's
    graphs (60), in one draw of four; else none."""
    bound = st.integers(1, 59)
    ranges = st.one_of(
        bound.map(lambda k: f"[:{k}]"), bound.map(lambda k: f"[{k}:]"), bound.map(lambda k: f"[-{k}:, :]"),
        st.tuples(bound, bound).map(lambda ab: f"[{min(ab)}:{max(ab)}]"),
        st.tuples(bound, bound).map(lambda ab: f".narrow(0, {min(ab)}, {max(ab) - min(ab)})"),
    )
    return st.sampled_from((False, False, False, True)).flatmap(lambda drawn: ranges if drawn else st.just(""))


# --- static conditions (issue 35, item 1): Python tests of a value's shape or dtype --------------

STATIC_CONDITIONS = ("shape", "dtype", "ndim")


def _draw_static_condition(draw: st.DrawFn, b: _Builder, value: int) -> int:
    """`if h.shape[-1] == K: h = self.linN(h)` with K sometimes h's width (the Linear runs, to a
    width of its own) and sometimes not (it never runs); `if h.dtype == torch.float32: h =
    torch.tanh(h)` (taken); `if h.dim() == 3: h = h.flatten(1)` (not taken). Decided while
    tracing; rendered by _render_static_condition."""
    kind = draw(st.sampled_from(STATIC_CONDITIONS))
    width = b.width(value)
    if kind != "shape":
        index = b.add(Step("static", (value,), width, kind))
    else:
        k = draw(st.sampled_from((width, width, width + 1, MAX_WIDTH + 1)))
        index = b.add(Step("static", (value,), draw(widths) if k == width else width, kind, str(k)))
    b.is_input[index] = b.is_input[value]  # untaken, the value is its input itself
    return index


def _static_condition_module(spec: ModelSpec, step: Step) -> str | None:
    """The Linear a shape condition guards: from the width it tests (never run when that is not
    the value's width)."""
    if step.kind != "shape":
        return None
    k, w_in = int(step.option), spec.width(step.inputs[0])
    return f"nn.Linear({k}, {step.width if k == w_in else k})"


def _render_static_condition(step: Step, module: str, source: str, target: str) -> list[str]:
    lines = [] if target == source else [f"        {target} = {source}"]
    if step.kind == "shape":
        return lines + [f"        if {target}.shape[-1] == {step.option}:", f"            {target} = {module}({target})"]
    if step.kind == "dtype":
        return lines + [f"        if {target}.dtype == torch.float32:", f"            {target} = torch.tanh({target})"]
    return lines + [f"        if {target}.dim() == 3:", f"            {target} = {target}.flatten(1)"]


# --- end of static conditions -------------------------------------------------------------------


# --- several graphs side by side (issue 35, item 4) ---------------------------------------------


def _several_graphs(draw: st.DrawFn, spec: ModelSpec) -> ModelSpec:
    """Sometimes, a full-graph model whose forward takes two graphs over the same nodes,
    `forward(self, gs, x)`: every first convolution of a depth runs on gs[0], every second one
    on gs[1] (the two summed or concatenated, as drawn), as HAN's GAT per metapath graph. Only
    where a depth has a second convolution (else the list is one block), and without what
    belongs to one graph: edge weights, derived graphs, a kept graph, data on the graph."""
    seconds = [i for i, step in enumerate(spec.steps) if step.op == "conv" and _is_second(spec, i)]
    if spec.style != "full" or spec.edge_weights or not seconds or not draw(st.booleans()):
        return spec
    if any(spec.steps[i].kind == "inline" or spec.steps[i].kept_edges >= 0 for i in seconds):
        return spec
    if any(step.kind == "NdataConv" for step in spec.steps):
        return spec  # traced into, such a layer's graphs side by side are refused: open (stop 34)
    steps = list(spec.steps)
    for i in seconds:
        steps[i] = replace(steps[i], second_graph=True, reversed_graph=False)
    return replace(spec, steps=tuple(steps), several_graphs=True, kept_graph=False, inputs_on_graph=False,
                   derived_graph="", graph_value="")


def _is_second(spec: ModelSpec, index: int) -> bool:
    """Whether convolution `index` (of spec.steps) is the second of its depth: an add or cat
    of two convolutions reads it after another convolution of its depth."""
    for step in spec.steps:
        if step.op in ("add", "cat") and len(step.inputs) == 2:
            convs = [v for v in step.inputs if spec.steps[v - 1].op == "conv"]
            if len(convs) == 2 and max(convs) == index + 1:
                return True
    return False


# --- end of several graphs ----------------------------------------------------------------------


def _convolution_reads_input_alone(steps: list[Step]) -> bool:
    """Whether some convolution reads x through steps of one input each (how gnn-codegen tells
    a table of the model used as node features, node_tables.py)."""
    for step in steps:
        if step.op != "conv":
            continue
        value = step.inputs[0]
        while value != 0 and len(steps[value - 1].inputs) == 1 and steps[value - 1].op != "conv":
            value = steps[value - 1].inputs[0]
        if value == 0:
            return True
    return False


@st.composite
def multi_round_specs(draw: st.DrawFn) -> ModelSpec:
    """A model_specs() model with one of its convolutions a TwoRoundUDFConv."""
    spec = draw(model_specs())
    convs = [i for i, step in enumerate(spec.steps) if step.op == "conv"]
    i = draw(st.sampled_from(convs))
    step = replace(spec.steps[i], kind="TwoRoundUDFConv", option="", heads=1, pair=False,
                   learn_eps=False, edge_weight=False)
    if spec.steps[i].kind == "GATConv":
        step = replace(step, width=spec.steps[i].width)
    steps = (*spec.steps[:i], step, *spec.steps[i + 1:])
    return replace(spec, steps=steps, edge_weights=any(s.edge_weight for s in steps))


# --- graphs and values forward derives from its graph alone (issue 35, items 3 and 5) -----------

# forward's first line, `g = ...` on its graph: functions and method forms, alone and chained
DERIVED_GRAPHS = {
    "self_loops": "dgl.add_self_loop({g})",
    "self_loops_method": "{g}.add_self_loop()",
    "reloop_methods": "{g}.remove_self_loop().add_self_loop()",
    "reloop_functions": "dgl.add_self_loop(dgl.remove_self_loop({g}))",
    "reverse": "dgl.reverse({g})",
    "simple": "dgl.to_simple({g})",
    # the graph of one relation of a heterograph of one node type (relation_graphs.py), whose
    # relations RELATIONS_METAGRAPH gives
    "relation": '{g}[("node", "cites", "node")]',
}
RELATIONS_METAGRAPH = "node:cites:node,node:links:node"
# a value of that graph, read outside message passing, applied to x before the first layer
GRAPH_VALUES = {
    "degree_norm": "x = x * torch.pow({g}.in_degrees().float().clamp(min=1), -0.5).unsqueeze(1)",
    "ones": "x = x + 0.5 * torch.ones({g}.num_nodes(), 1)",
    "ids": "x = x + 0.01 * torch.arange({g}.num_nodes()).float().unsqueeze(1)",
}


def _draw_derived(draw: st.DrawFn, style: str, edge_data: bool, table: bool, kept_graph: bool) -> tuple[str, str]:
    """(a key of DERIVED_GRAPHS or "", a key of GRAPH_VALUES or ""): full style only, and not
    where forward reads edge data, whose edges a derived graph does not have; no value where x is
    a table, which a convolution must read through ops of x alone; no relation graph of a graph
    the model keeps (the model is built on a graph of one relation)."""
    if style != "full" or edge_data:
        return "", ""
    derived = draw(st.sampled_from(("", *(d for d in DERIVED_GRAPHS if d != "relation" or not kept_graph))))
    value = "" if table else draw(st.sampled_from(("", *GRAPH_VALUES)))
    return derived, value


def _derived_lines(spec: ModelSpec, graph: str) -> tuple[list[str], str]:
    """forward's lines for spec.derived_graph and spec.graph_value, and the graph after them."""
    lines = []
    if spec.derived_graph:
        lines.append(f"        g = {DERIVED_GRAPHS[spec.derived_graph].format(g=graph)}")
        graph = "g"
    if spec.graph_value:
        lines.append(f"        {GRAPH_VALUES[spec.graph_value].format(g=graph)}")
    return lines, graph


# --- rendering ----------------------------------------------------------------------------------

_IMPORTS = '''"""A random model drawn by tests/random_models.py."""

import dgl
import dgl.function as fn
import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F
'''

# The user's own message-passing modules, written as DGL's tutorials write them.
USER_MODULES = {
    "MeanConv": '''
class MeanConv(nn.Module):
    """The mean of the in-neighbours' features, then a Linear."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)

    def forward(self, graph, feat):
        with graph.local_scope():
            graph.srcdata["h"] = feat
            graph.update_all(fn.copy_u("h", "m"), fn.mean("m", "h_neigh"))
            return self.linear(graph.dstdata["h_neigh"])
''',
    "TwoRoundMeanConv": '''
class TwoRoundMeanConv(nn.Module):
    """Two rounds of neighbour means in one call: reads two hops."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)

    def forward(self, graph, feat):
        with graph.local_scope():
            graph.ndata["h"] = feat
            for _ in range(2):
                graph.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
            return self.linear(graph.ndata["h"])
''',
    "TwoRoundUDFConv": '''
class TwoRoundUDFConv(nn.Module):
    """Two rounds of neighbour means in one call, the message a Python function."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)

    def forward(self, graph, feat):
        with graph.local_scope():
            graph.ndata["h"] = feat
            for _ in range(2):
                graph.update_all(lambda edges: {"m": edges.src["h"]}, fn.mean("m", "h"))
            return self.linear(graph.ndata["h"])
''',
    "NdataConv": '''
def median_of_mailbox(nodes):
    return {"neigh": nodes.mailbox["m"].median(dim=1).values}


class NdataConv(nn.Module):
    """g.ndata written and read without a local scope, a Python message: fails on a block."""

    def __init__(self, in_feats, out_feats, reducer):
        super().__init__()
        self.reduce = median_of_mailbox if reducer == "median" else getattr(fn, reducer)("m", "neigh")
        self.linear = nn.Linear(in_feats, out_feats)
        self.self_linear = nn.Linear(in_feats, out_feats)

    def forward(self, g, h):
        g.ndata["h"] = h
        g.update_all(lambda edges: {"m": edges.src["h"]}, self.reduce)
        return self.linear(g.ndata["neigh"]) + self.self_linear(g.ndata["h"])
''',
}

# --- the user's own propagation loops and out-degree norms (issue 35, items 6d and 7) -----------
#
# `user_propagation_specs()` draws a full-graph model_specs() model with one of its convolutions
# one of these: rounds of update_all with a post-step after each (label propagation's mix with
# the start and clamp), and a one-hop layer normalised by its graph's out-degrees and
# in-degrees. Both are traced into (pipeline.py), a hop per round, their degrees those of the
# whole graph.

USER_PROPAGATION = {
    "PostStepRounds": '''
class PostStepRounds(nn.Module):
    """Two rounds of symmetric-normalised propagation, each mixed with the start and clamped."""

    def __init__(self, in_feats, out_feats, alpha=0.7):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)
        self.alpha = alpha

    def forward(self, graph, feat):
        with graph.local_scope():
            norm = graph.in_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(-1)
            y0, y = feat, feat
            for _ in range(2):
                graph.ndata["h"] = y * norm
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                y = self.alpha * graph.ndata["h"] * norm + (1 - self.alpha) * y0
                y = y.clamp(-1.0, 1.0)
            return self.linear(y)
''',
    "OutDegreeNormConv": '''
class OutDegreeNormConv(nn.Module):
    """A GCN layer of the user's own: sources scaled by out-degree ** -0.5, destinations by
    in-degree ** -0.5."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)

    def forward(self, graph, feat):
        with graph.local_scope():
            src_norm = graph.out_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(-1)
            dst_norm = graph.in_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(-1)
            graph.srcdata["h"] = self.linear(feat) * src_norm
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            return graph.dstdata["h"] * dst_norm
''',
}
USER_MODULES.update(USER_PROPAGATION)


@st.composite
def user_propagation_specs(draw: st.DrawFn) -> ModelSpec:
    """A full-graph model_specs() model with one of its convolutions on forward's own graph one
    of USER_PROPAGATION."""
    spec = draw(model_specs().filter(lambda s: s.style == "full" and any(
        step.op == "conv" and not step.reversed_graph and step.kept_edges < 0 for step in s.steps)))
    convs = [i for i, step in enumerate(spec.steps)
             if step.op == "conv" and not step.reversed_graph and step.kept_edges < 0]
    i = draw(st.sampled_from(convs))
    step = replace(spec.steps[i], kind=draw(st.sampled_from(sorted(USER_PROPAGATION))), option="", heads=1,
                   pair=False, learn_eps=False, edge_weight=False)
    steps = (*spec.steps[:i], step, *spec.steps[i + 1:])
    return replace(spec, steps=steps, edge_weights=any(s.edge_weight for s in steps))


# --- rendering of a spec ---------------------------------------------------------------------------

_CLASS = '''
class RandomModel(nn.Module):
    def __init__(self):
        super().__init__()
'''


def _module_name(step: Step, index: int) -> str:
    prefix = {"conv": "conv", "linear": "lin", "batchnorm": "bn", "layernorm": "ln", "dropout": "drop", "static": "lin"}
    return f"{prefix[step.op]}{index}"


def _constructor(spec: ModelSpec, step: Step) -> str | None:
    w_in = spec.width(step.inputs[0])
    if step.op == "static":
        return _static_condition_module(spec, step)
    if step.op == "conv":
        if step.kind == "SAGEConv":
            return f'dglnn.SAGEConv({w_in}, {step.width}, "{step.option}")'
        if step.kind == "GraphConv":
            return f'dglnn.GraphConv({w_in}, {step.width}, norm="{step.option}", allow_zero_in_degree=True)'
        if step.kind == "GATConv":
            per_head = step.width // step.heads if step.option == "flatten" else step.width
            return f"dglnn.GATConv({w_in}, {per_head}, {step.heads}, allow_zero_in_degree=True)"
        if step.kind == "NdataConv":
            return f'NdataConv({w_in}, {step.width}, "{step.option}")'
        if step.kind in USER_MODULES:
            return f"{step.kind}({w_in}, {step.width})"
        if step.kind == "SGConv":  # two hops of DGL's own, traced into
            return f"dglnn.SGConv({w_in}, {step.width}, k=2, allow_zero_in_degree=True)"
        if step.kind == "APPNPConv":  # two hops and a teleport term, traced into
            return "dglnn.APPNPConv(k=2, alpha=0.2)"
        if step.kind == "GatedGraphConv":  # two rounds of a GRU per node, traced into
            return f"dglnn.GatedGraphConv({w_in}, {step.width}, 2, 1)"
        if step.kind == "TAGConv":  # a Linear over hops 0..2, traced into
            return f"dglnn.TAGConv({w_in}, {step.width}, k=2)"
        if step.kind == "ChebConv":  # two terms of the recurrence, lambda_max DGL's default
            return f"dglnn.ChebConv({w_in}, {step.width}, 2)"
        if step.kind == "inline":
            return None  # written in forward
        eps = ", learn_eps=True" if step.learn_eps else ""
        return f'dglnn.GINConv(nn.Linear({w_in}, {step.width}), "{step.option}"{eps})'
    if step.op == "linear":
        return f"nn.Linear({w_in}, {step.width})"
    if step.op == "batchnorm":
        return f"nn.BatchNorm1d({w_in})"
    if step.op == "layernorm":
        return f"nn.LayerNorm({w_in})"
    if step.op == "dropout" and step.kind == "module":
        return "nn.Dropout(0.5)"
    return None


def _hops(step: Step) -> int:
    return step.rounds if step.op == "conv" else 0


def _value_depths(spec: ModelSpec) -> list[int]:
    depth = [0]
    for step in spec.steps:
        depth.append(max(depth[i] for i in step.inputs) + _hops(step))
    return depth


def _variable_names(spec: ModelSpec) -> list[str]:
    """The variable holding each value: its step's `var` unless that would overwrite a value
    still to be read, then h{index} (or h{index}_, ...) under the same rule."""
    graph = "blocks" if spec.style == "blocks" else "g"
    last_read = {0: 0}
    for index, step in enumerate(spec.steps, start=1):
        for v in step.inputs:
            last_read[v] = index
    for v in spec.outputs:
        last_read[v] = len(spec.steps) + 1
    holder: dict[str, int] = {"x": 0}  # variable -> the value it holds now
    names = ["x"]
    for index, step in enumerate(spec.steps, start=1):
        candidates = [step.var] if step.var else []
        candidates += [f"h{index}" + "_" * k for k in range(len(spec.steps) + 2)]
        for var in candidates:
            if var != graph and var not in spec.constants and last_read.get(holder.get(var, -1), 0) <= index:
                break
        holder[var] = index
        names.append(var)
    return names


def _held_in_plain_list(spec: ModelSpec) -> dict[int, int]:
    """With spec.plain_list, each convolution module's step -> its place in the plain list."""
    if not spec.plain_list:
        return {}
    convs = [i for i, step in enumerate(spec.steps, start=1) if step.op == "conv" and _constructor(spec, step)]
    return {index: k for k, index in enumerate(convs)}


def render_model_source(spec: ModelSpec) -> str:
    blocks = spec.style == "blocks"
    depth = _value_depths(spec)
    lines = [_IMPORTS]
    # constants, some of them colliding with names the generated code uses, 0.5 to 1.5
    lines += [f"{c} = {0.5 + i / max(len(spec.constants), 1):.2f}" for i, c in enumerate(spec.constants)]
    kinds = {step.kind for step in spec.steps if step.op == "conv"}
    lines += [source for kind, source in USER_MODULES.items() if kind in kinds]
    lines.append((_CLASS.replace("__init__(self)", "__init__(self, g)") if spec.kept_graph else _CLASS).rstrip("\n"))
    held = _held_in_plain_list(spec)
    if held:
        lines.append("        self.conv = []")
    for index, step in enumerate(spec.steps, start=1):
        ctor = _constructor(spec, step)
        if index in held:
            lines.append(f"        self.conv.append({ctor})")
        elif ctor is not None:
            lines.append(f"        self.{_module_name(step, index)} = {ctor}")
    graph = "blocks" if blocks else "self.g" if spec.kept_graph else "gs" if spec.several_graphs else "g"
    if spec.kept_graph:  # as DGL's model zoo keeps it
        lines.append("        self.g = g")
    if spec.table:
        lines.append(f"        self.table = nn.Embedding(50, {spec.in_width})")
    inputs = [] if spec.kept_graph else [graph]
    if not spec.inputs_on_graph and not spec.table:
        inputs.append("x")
    if not spec.inputs_on_graph and spec.edge_weights:
        inputs.append("w")
    lines += ["", f"    def forward({', '.join(['self', *inputs])}):"]
    if spec.table:
        lines.append("        x = self.table.weight")
    elif spec.inputs_on_graph:
        lines.append(f'        x = {"blocks[0].srcdata" if blocks else f"{graph}.ndata"}["x"]')
    if spec.inputs_on_graph and spec.edge_weights:
        lines.append(f'        w = {graph}.edata["w"]')
    derived, graph = _derived_lines(spec, graph)
    lines += derived
    if spec.several_graphs:  # _several_graphs
        graph = "gs[0]"

    names = _variable_names(spec)

    def name(value: int) -> str:
        return names[value]

    def rows(value: int, at_depth: int) -> str:
        """`value` on the rows of a value of depth `at_depth` (blocks: a destination prefix)."""
        if not blocks or depth[value] == at_depth:
            return name(value)
        return f"{name(value)}[: blocks[{at_depth - 1}].num_dst_nodes()]"

    for index, step in enumerate(spec.steps, start=1):
        args = step.inputs
        module = f"self.conv[{held[index]}]" if index in held else \
            f"self.{_module_name(step, index)}" if _constructor(spec, step) else ""
        if step.op == "conv" and step.kind == "inline":  # as DGL's JKNet example writes it
            block = f"blocks[{depth[args[0]]}]" if blocks else graph
            lines += [
                f"        with {block}.local_scope():",
                f'            {block}.srcdata["h"] = {name(args[0])}',
                f'            {block}.update_all(fn.copy_u("h", "m"), fn.{step.option}("m", "h"))',
                f'            {name(index)} = {block}.dstdata["h"]',
            ]
            continue
        if step.op == "static":
            lines += _render_static_condition(step, module, name(args[0]), name(index))
            continue
        if step.op == "conv":
            source = name(args[0])
            block = f"blocks[{depth[args[0]]}]" if blocks else f"dgl.reverse({graph})" if step.reversed_graph else graph
            block = "gs[1]" if step.second_graph else block
            feats = f"({source}, {source}[: {block}.num_dst_nodes()])" if step.pair else source
            if step.kept_edges >= 0:
                whole = f"dgl.block_to_graph({block})" if blocks else block
                block = f'{whole}.edge_subgraph({block}.edata["etype"] == {step.kept_edges}, relabel_nodes=False)'
            weight = ", edge_weight=w" if step.edge_weight else ""
            expr = f"{module}({block}, {feats}{weight})"
            if step.kind == "GATConv":
                expr += {"flatten": ".flatten(1)", "mean": ".mean(1)", "squeeze": ".squeeze()"}[step.option]
            if step.rounds > 1:  # tied weights, a loop in forward
                running = name(index)
                lines += [f"        {running} = {source}", f"        for _ in range({step.rounds}):",
                          f"            {running} = F.relu({expr.replace(f'({block}, {source}', f'({block}, {running}')})"]
                continue
        elif step.op == "act":
            expr = f"{ACTIVATIONS[step.kind]}({name(args[0])})"
        elif step.op == "inplace":
            expr = IN_PLACE[step.kind].format(h=name(args[0]))
        elif step.op == "scale":
            expr = f"{name(args[0])} * {step.kind}"
        elif step.op == "centre":  # reductions over all nodes, which the next stage reads
            expr = OVER_ALL_NODES[step.kind].format(h=name(args[0]))
        elif step.op == "dropout" and step.kind == "functional":
            expr = f"F.dropout({name(args[0])}, p=0.5, training=self.training)"
        elif step.op in ("linear", "batchnorm", "layernorm", "dropout"):
            expr = f"{module}({name(args[0])})"
        elif step.op == "add":
            expr = " + ".join(rows(v, depth[index]) for v in args)
        elif step.op == "cat":
            expr = f"torch.cat([{', '.join(rows(v, depth[index]) for v in args)}], dim={step.kind})"
        else:
            raise ValueError(f"unknown step {step}")
        lines.append(f"        {name(index)} = {expr}")
    result = [rows(v, max(depth[o] for o in spec.outputs)) for v in spec.outputs]
    if spec.row_range:
        result[0] = f"({result[0]}){spec.row_range}" if not result[0].isidentifier() else result[0] + spec.row_range
    lines.append(f"        return {', '.join(result)}")
    return "\n".join(lines) + "\n"

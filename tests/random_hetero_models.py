"""Random heterogeneous models for the differential test (tests/test_hetero_differential.py),
built only of pieces gnn_codegen/hetero/ supports: a random schema (2-3 node types, 2-6
relations, some types perhaps without in-edges), per-type features of different widths, an
optional per-type input projection, 1-3 HeteroGraphConv layers whose relations each draw a
convolution (GraphConv with every norm, SAGEConv, GINConv; or GATConv with heads in every
relation) and whose aggregate is any of DGL's, or a layer of the user's own written as DGL's
heterograph tutorial writes one (a Linear per relation, multi_update_all with any reducer and
cross reducer), and between the layers per-type activations, skips, Linears, BatchNorm and
Dropout. forward takes the features, or reads them from the graph as DGL's examples do
(`g.nodes[ntype].data["feat"]`, `g.ndata["feat"]`), and may take the type it returns (out_key,
given with --forward-args). A HeteroGraphConv may be given edge weights per relation, read from
the graph (`mod_kwargs={etype: {"edge_weight": g.edges[etype].data["w"]}}`), or its GraphConvs
(weight=False) a weight per relation (`mod_kwargs={etype: {"weight": self.w[i]}}`, as DGL's
rgcn-hetero), and layers may scale
by the graph's node counts (`g.num_nodes(k)`), or run on forward's
`dgl.edge_type_subgraph(g, [...])` of the relations they run (perhaps without those into a type). Rendered as a model file with a fixed schema."""

from __future__ import annotations

import random
from dataclasses import dataclass

AGGREGATES = ("sum", "mean", "max", "min", "stack")
ACTIVATIONS = ("F.relu", "F.elu", "torch.tanh", "F.leaky_relu")


@dataclass(frozen=True)
class HeteroSpec:
    source: str  # the model file
    relations: tuple[tuple[str, str, str], ...]
    widths: dict[str, int]
    canonical_keys: bool  # modules keyed by canonical edge types (else --metagraph)
    forward_args: str | None = None  # --forward-args

    @property
    def metagraph(self) -> str:
        return ",".join(":".join(r) for r in self.relations)


def _schema(rng: random.Random) -> tuple[list[str], list[tuple[str, str, str]]]:
    ntypes = ["user", "item", "shop"][: rng.randint(2, 3)]
    relations: list[tuple[str, str, str]] = []
    for i in range(rng.randint(2, 6)):
        src, dst = rng.choice(ntypes), rng.choice(ntypes)
        relations.append((src, f"r{i}", dst))
    return ntypes, relations


def _conv(rng: random.Random, kind: str, in_src: int, in_dst: int, out: int, heads: int) -> str:
    pair = f"({in_src}, {in_dst})" if in_src != in_dst else str(in_src)
    if kind == "GraphConv":
        norm = rng.choice(["both", "right", "left", "none"])
        return f'dglnn.GraphConv({in_src}, {out}, norm="{norm}", bias={rng.choice([True, False])})'
    if kind == "SAGEConv":
        aggregators = ["mean", "pool"] + (["gcn"] if in_src == in_dst else [])  # gcn adds dst rows to src
        return f'dglnn.SAGEConv({pair}, {out}, "{rng.choice(aggregators)}")'
    if kind == "GINConv":
        return f'dglnn.GINConv(nn.Linear({in_src}, {out}), "{rng.choice(["sum", "max", "mean"])}")'
    residual = rng.choice([True, False])
    return f"dglnn.GATConv({pair}, {out}, num_heads={heads}, residual={residual})"


def random_hetero_spec(seed: int) -> HeteroSpec:
    rng = random.Random(seed)
    ntypes, relations = _schema(rng)
    widths = {t: rng.randint(3, 8) for t in ntypes}
    canonical = rng.random() < 0.5
    init_lines: list[str] = []
    # the features: an argument, or read from the graph
    reads = rng.choice(["x", "x", 'g.ndata["feat"]', '{t: g.nodes[t].data["feat"] for t in g.ntypes}'])
    if reads.startswith("g.ndata") and len({t for r in relations for t in (r[0], r[2])}) == 1:
        reads = "x"  # on a graph of one node type, DGL's g.ndata["feat"] is a tensor, not a dict
    body: list[str] = [f"h = {reads}"]
    current = dict(widths)  # each type's width now
    project = rng.random() < 0.4
    if project:
        hid = rng.randint(4, 8)
        items = ", ".join(f'"{t}": nn.Linear({widths[t]}, {hid})' for t in ntypes)
        init_lines.append(f"self.proj = nn.ModuleDict({{{items}}})")
        body.append(f"h = {{k: {rng.choice(ACTIVATIONS)}(self.proj[k](v)) for k, v in h.items()}}")
        current = {t: hid for t in ntypes}
    present = set(ntypes)
    layers = rng.randint(1, 3)
    for layer in range(layers):
        out = rng.randint(3, 8)
        gat = rng.random() < 0.3
        # a GraphConv per relation: what the runtime may run once per node (map_sources)
        graph_convs = not gat and rng.random() < 0.3
        heads = rng.randint(1, 3) if gat else 1
        aggregate = rng.choice(AGGREGATES[:4] if gat else AGGREGATES)
        called = [(s, r, d) for s, r, d in relations if s in present]
        if not called:
            break
        new_present = {d for _, _, d in called}
        if not gat and rng.random() < 0.25:  # a layer of the user's own, run on subgraphs
            aggregate = rng.choice(AGGREGATES)  # its cross reducer ("stack" as HeteroGraphConv's)
            linears = ", ".join(f'"{r}": nn.Linear({current[s]}, {out})' for s, r, _ in called)
            init_lines.append(f'self.conv{layer} = OwnLayer({{{linears}}}, "{rng.choice(REDUCERS)}", "{aggregate}")')
        mods = []
        for src, rel, dst in ([] if own_layer(init_lines, layer) else called):
            kind = "GATConv" if gat else "GraphConv" if graph_convs else rng.choice(["GraphConv", "SAGEConv", "GINConv"])
            if kind in ("GraphConv", "GINConv") and current[src] != current[dst]:
                kind = "SAGEConv"  # reads source and destination widths apart
            key = f'("{src}", "{rel}", "{dst}")' if canonical else f'"{rel}"'
            mods.append(f"{key}: {_conv(rng, kind, current[src], current[dst], out, heads)}")
        weighted = False
        if not own_layer(init_lines, layer):
            init_lines.append(f'self.conv{layer} = dglnn.HeteroGraphConv({{{", ".join(mods)}}}, aggregate="{aggregate}")')
            # edge weights per relation (GraphConv, SAGEConv, GINConv and GATConv all take them)
            weighted = rng.random() < 0.25
        # GraphConv(weight=False) given a weight per relation through mod_kwargs, as DGL's
        # rgcn-hetero does (drawn apart, so that the other draws of a seed stay as they were)
        given = random.Random(seed * 31 + layer)
        if graph_convs and not weighted and mods and all("GraphConv(" in m for m in mods) and given.random() < 0.5:
            mods_line = init_lines.pop()
            init_lines.append(mods_line.replace("bias=", "weight=False, bias="))
            for i, (src, _, _) in enumerate(called):  # a relation's width in: its source type's
                init_lines.append(f"self.w{layer}_{i} = nn.Parameter(torch.randn({current[src]}, {out}) * 0.4)")
            items = ", ".join(f'"{r}": {{"weight": self.w{layer}_{i}}}' for i, (_, r, _) in enumerate(called))
            body.append(f"h_new = self.conv{layer}(g, h, mod_kwargs={{{items}}})")
        elif weighted:
            keys = [f'("{s}", "{r}", "{d}")' for s, r, d in called]
            body.append(f"weights = {{k: {{\"edge_weight\": g.edges[k].data[\"w\"]}} for k in [{', '.join(keys)}]}}")
            body.append(f"h_new = self.conv{layer}(g, h, mod_kwargs={{k[1]: v for k, v in weights.items()}})")
        else:
            body.append(f"h_new = self.conv{layer}(g, h)")
        # the HeteroGraphConv on forward's subgraph of the relations it runs, perhaps (in the last
        # layer) without those into one type, as recommendation libraries write it (hetero/type_subgraphs.py):
        # drawn apart, so that the other draws of a seed stay as they were
        apart = random.Random(seed * 41 + layer)
        if body[-1] == f"h_new = self.conv{layer}(g, h)" and not own_layer(init_lines, layer) and apart.random() < 0.3:
            into = sorted({d for _, _, d in called})
            # a type left out in the last layer alone: a later one would read its features
            last = layer == layers - 1
            left_out = apart.choice(into) if last and len(into) > 1 and apart.random() < 0.5 else None
            kept = [r for r in called if r[2] != left_out]
            if aggregate == "stack":  # stacked in the subgraph's order: the graph's, as the runtime's
                kept.sort()
            spelled = ", ".join(f'("{s}", "{r}", "{d}")' for s, r, d in kept)
            body[-1] = f"h_new = self.conv{layer}(dgl.edge_type_subgraph(g, [{spelled}]), h)"
            new_present = {d for _, _, d in kept}
        # GATConv's heads, or the stack of relations, make a dimension: flattened or averaged
        expression, width = "v", out
        stacked = {d: sum(1 for _, _, dd in called if dd == d) for d in new_present}
        if gat or aggregate == "stack":
            flatten = rng.random() < 0.5 and (gat or len(set(stacked.values())) == 1)
            expression = "v.flatten(1)" if flatten else "v.mean(1)"
            if flatten:
                width = out * (heads if gat else next(iter(stacked.values())))
        if rng.random() < 0.5 and layer < layers - 1:
            expression = f"{rng.choice(ACTIVATIONS)}({expression})"
        widths_now = {current[t] for t in new_present}
        if rng.random() < 0.3 and new_present <= present and len(widths_now) == 1:
            init_lines.append(f"self.skip{layer} = nn.Linear({widths_now.pop()}, {width})")
            expression = f"{expression} + self.skip{layer}(h[k])"
        if rng.random() < 0.3:
            init_lines.append(f"self.norm{layer} = nn.BatchNorm1d({width})")
            expression = f"self.norm{layer}({expression})"
        if rng.random() < 0.3:
            init_lines.append(f"self.drop{layer} = nn.Dropout(0.5)")
            expression = f"self.drop{layer}({expression})"
        if rng.random() < 0.15:  # the full graph's counts, numbers read once by inference
            expression = f"({expression}) * (g.num_nodes(k) / g.num_nodes())"
        body.append(f"h = {{k: {expression} for k, v in h_new.items()}}")
        present = new_present
        current = {t: width for t in present}
    forward_args = None
    params = "g, x" if reads == "x" else "g"
    if rng.random() < 0.4 and present:
        if rng.random() < 0.5:  # forward(g, x, out_key) as DGL's HGT example: --forward-args
            body.append("return h[out_key]")
            params += ", out_key"
            forward_args = f'{{"out_key": "{sorted(present)[0]}"}}'
        else:
            body.append(f'return h["{sorted(present)[0]}"]')
    else:
        body.append("return h")
    # the features as a None default after a flag, given by keyword as a trainer gives them, and
    # a **kwargs forward ignores (OpenHGNN's forward(self, hg, h_dict=None, embed=False, **kwargs)):
    # drawn apart, so that the other draws of a seed stay as they were
    if params == "g, x" and random.Random(seed * 37 + 5).random() < 0.25:
        params = "g, return_all=False, x=None, **kwargs"
    init = "\n".join(f"        {line}" for line in init_lines)
    forward = "\n".join(f"        {line}" for line in body)
    owns = any(own_layer(init_lines, k) for k in range(layers))
    source = (
        "import dgl\nimport dgl.function as fn\nimport dgl.nn as dglnn\nimport torch\nimport torch.nn as nn\n"
        "import torch.nn.functional as F\n\n\n" + (OWN_LAYER if owns else "") +
        "class RandomHetero(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"{init}\n\n    def forward(self, {params}):\n{forward}\n"
    )
    # a layer of the user's is keyed by relation names: --metagraph
    return HeteroSpec(source, tuple(sorted(set(relations))), widths, canonical and not owns, forward_args)


def own_layer(init_lines: list[str], layer: int) -> bool:
    """Whether layer `layer` is drawn as OwnLayer."""
    return any(line.startswith(f"self.conv{layer} = OwnLayer(") for line in init_lines)


REDUCERS = ("sum", "mean", "max", "min")
# as DGL's heterograph tutorial writes a relational layer: a Linear per relation, then
# multi_update_all; the types it reaches read back from G.nodes[ntype].data
OWN_LAYER = '''class OwnLayer(nn.Module):
    def __init__(self, linears, reducer, cross):
        super().__init__()
        self.linears = nn.ModuleDict(linears)
        self.reducer, self.cross = reducer, cross

    def forward(self, G, feats):
        with G.local_scope():
            funcs = {}
            for srctype, etype, dsttype in G.canonical_etypes:
                if srctype in feats:
                    G.nodes[srctype].data[f"w_{etype}"] = self.linears[etype](feats[srctype])
                    reduce = getattr(fn, self.reducer)("m", "h")
                    funcs[(srctype, etype, dsttype)] = (fn.copy_u(f"w_{etype}", "m"), reduce)
            G.multi_update_all(funcs, self.cross)
            return {t: G.nodes[t].data["h"] for t in G.ntypes if "h" in G.nodes[t].data}


'''

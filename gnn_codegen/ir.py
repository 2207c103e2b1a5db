"""The torch-free program every pass after tracing works on: ops in topological order that refer
to each other by name. Frozen values only; a pass returns a new Program."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Literal, NamedTuple

# graph_value: a tensor forward computes from the graph alone (`g.out_degrees()`), computed once
# on the whole graph and read per batch like an input
OpKind = Literal["input", "graph", "graph_value", "mp", "module", "function", "method", "attr"]


@dataclass(frozen=True)
class Ref:
    """A use of another op's value inside an op's arguments."""

    name: str


class ModuleFloat(float):
    """A float fx folded from a module's attributes (GCN2Conv's `1 - self.beta`), written as the
    expression it came from (`1 - self.convs[4].beta`, module_constants.py): a float like any
    other to every pass, an expression to the renderer. The expression computes this very
    double (checked where it is made)."""

    expression: str
    atom: bool  # safe as an operand without parentheses

    def __new__(cls, value: float, expression: str, atom: bool) -> "ModuleFloat":
        made = super().__new__(cls, value)
        made.expression, made.atom = expression, atom
        return made

    def __reduce__(self) -> Any:
        return ModuleFloat, (float(self), self.expression, self.atom)


class ModuleInt(int):
    """An int fx folded from a module's int attribute named on the op's line (`self.hid_dim`
    in `torch.zeros(n, self.hid_dim)`, `self.hidden_channels` in `.view(-1, ...)`), written as
    that attribute (module_constants.py), as ModuleFloat is: an int like any other to every
    pass, so a width from --init does not read as a number from nowhere. Never a bool."""

    expression: str
    atom: bool

    def __new__(cls, value: int, expression: str, atom: bool) -> "ModuleInt":
        made = super().__new__(cls, value)
        made.expression, made.atom = expression, atom
        return made

    def __reduce__(self) -> Any:
        return ModuleInt, (int(self), self.expression, self.atom)


# the constants written as the module's attributes they were folded from
MODULE_CONSTANTS = (ModuleFloat, ModuleInt)


@dataclass(frozen=True)
class Spelled:
    """A value forward computes from its inputs alone, folded into the derived graph that reads
    it and written where that graph is made (`etype == 0` in `dgl.edge_subgraph(g, etype == 0,
    relabel_nodes=False)`, edge_masks.py): code, with the inputs it reads as Refs."""

    parts: tuple[Any, ...]  # str or Ref


@dataclass(frozen=True)
class MessagePassing:
    """Facts about one message-passing call (from known_modules)."""

    class_name: str
    source_out_degree_power: float | None = None
    verified: bool = True
    needs_pair: bool = False  # call with (src rows, dst rows), see known_modules.NEEDS_PAIR
    pair_collapses: bool = False  # (h, h[:num_dst]) may be passed as h, see known_modules
    sources_in_place: bool = False  # see known_modules.MessagePassingFacts
    # arguments after the features (by position in args, or keyword) read per node like them
    node_args: tuple[int | str, ...] = ()
    # forward passes presorted=True: its graph's nodes and edges are sorted by type
    # (lower._unsorted_on_blocks), so the check's type IDs are sorted too
    sorted_types: bool = False
    # a convolution written out (write_out.py): its template section, and the rows it reads
    # each argument after the module at ("graph", "src", "dst", "edge", or None: a constant)
    helper: str = ""
    roles: tuple[str | None, ...] = ()
    # message passing written inline in forward (inline_mp.py): args are (graph, message spec,
    # reduce spec, *the fields the message reads); `functions` spells dgl.function as the user's
    # file does (`fn`)
    inline: bool = False
    functions: str = ""
    # a user's module that fails on a block (it reads or writes g.ndata) and is proven exact on
    # the block as a graph over its source nodes (block_as_graph.py): called so per batch
    as_graph: bool = False
    # message passing written inline in a module's forward (TAGConv, APPNPConv, a user's
    # module): that module as comments name it (`self.layers[0] (TAGConv)`), and which of its
    # update_all calls this is, hop of hops, for the comment of the layer it computes (hops.py)
    within: str = ""
    hop: int = 0
    hops: int = 0


@dataclass(frozen=True)
class Op:
    name: str
    kind: OpKind
    # module path ("layers.0"), Python expression of a function ("F.relu", "operator.add"),
    # method name ("flatten") or attribute path ("bias"); empty for inputs and the graph.
    target: str = ""
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    location: str = ""  # "file.py:12 (`h = conv(g, h)`)" for messages, when known
    mp: MessagePassing | None = None
    class_name: str = ""  # for module calls: the name of the module's class, for comments
    accessor: str = ""  # for modules and attributes: how Python reaches it, `self.convs["0"]`
    var: str = ""  # the variable the user's line assigns this value to (`h1 = ...`), if any
    # for module calls: the class's qualified name (rowwise.qualified_name), for rules; a user's
    # own class never shares it with torch's or DGL's
    module_class: str = ""
    # an elementwise torch.nn.functional activation that takes inplace=True (F.relu, F.elu, ...)
    activation_in_place: bool = False
    # torch.cat(tensors, dim=1 or -1): columns side by side, for tensors of 2-D rows
    concatenates_columns: bool = False
    # a module that is exactly torch.nn.Linear: on concatenated columns, the sum of each part's
    # product with its columns of the weight
    linear: bool = False
    # as traced, the op changes a tensor in place (functionalize.py): "input" its first argument
    # (`x.add_(b)`, an nn.ReLU(inplace=True)), "inplace" the same through `inplace=True`, "out"
    # its `out=` argument; out_of_place spells the twin that makes a new value instead (`add`)
    in_place: str = ""
    out_of_place: str = ""
    # after functionalize: still changes its first argument in place (no twin: `x.copy_(y)`, a
    # module built with inplace=True); the renderer hands it a tensor nothing else holds
    mutates: bool = False
    # a function of the written-out convolutions (write_out.py): its template section
    helper: str = ""
    # the variable the op's source line assigns, for an op that is not the line's last (`h`
    # for the sum in `h = self.norm(relu2 + h)`): a name for intermediate values
    line_var: str = ""
    # the line of library code forward is traced into that made the op (`src_norm =
    # th.pow(...)` inside DGL's APPNPConv, called from the user's location), as locations()
    # gives it; "" for an op of the user's own code: with location, the line that wrote it
    library_line: str = ""
    # why gnn-codegen made the op (write_out.py), for a comment where the generated code runs it
    note: str = ""
    # a convolution's work on each source row (write_out.py): the cut places it as early as its
    # inputs allow, where it runs once per node, never on a later layer's source rows
    once_per_node: bool = False
    # a function the op's module holds and its line calls through the attribute: how the
    # generated code calls it (`self.activation`, module_callables.py), where not as `target`
    held_as: str = ""
    # the user's module whose forward the op ran in, innermost first (module_calls.py):
    # (accessor, class name), `("self.norm", "PairNorm")`; () for forward's own lines
    module_call: tuple[str, str] = ()

    @property
    def innermost_line(self) -> str:
        """The innermost line that made the op: the library line forward was traced into,
        else the user's own (a location, `path:LINE (`code`)`)."""
        return self.library_line or self.location

    def refs(self) -> Iterator[str]:
        yield from iter_refs(self.args)
        yield from iter_refs(tuple(v for _, v in self.kwargs))


@dataclass(frozen=True)
class SettingBranch:
    """A branch a module's forward took on its settings around an op's line
    (lower/setting_tests.py): `if self._bias:` in GCN2Conv, reached as `self.convs[5]`."""

    module: str  # how the generated code reaches the module, `self.convs[5]`
    class_name: str  # `GCN2Conv`
    header: str  # the branch's line as forward writes it: `if self._bias:`, `elif ...:`, `else:`
    chain: str  # the first `if ...:` of its chain (for an `else:`, which says nothing alone)
    line: int  # the `if` statement's line in forward's file: the branch's identity
    condition: str  # the test on the module as the generated code reaches it, `self.convs[5]._bias`;
    # "" for an else, or a test that reads `self` otherwise
    settings: tuple[str, ...]  # the attributes the test reads, `("mode",)`
    alone: bool  # an `if` with no else taken: written out under the same test, it reads as forward
    opens: int  # the line of the branch's first statement (of the first after it, not taken)
    # False: an `if` with no else this build skips (SGConv's `if self.norm is not None:`)
    taken: bool = True


@dataclass(frozen=True)
class Assumption:
    """What one of forward's inputs must be for a decision forward takes in Python to hold
    (static_decisions.py): its shape past the row axis, its number of dimensions, or its dtype."""

    input: str  # forward's parameter
    what: Literal["shape", "ndim", "dtype"]
    value: Any  # a tuple of ints, an int, or a dtype as torch spells it ("torch.float32")


@dataclass(frozen=True)
class StaticDecision:
    """A test forward makes in Python on what a value is (`if h.shape[-1] == self.out_dim:`),
    decided while tracing: the generated code is the branch taken, for inputs as assumed."""

    source: str  # the user's line
    where: str  # its file and line number
    taken: Any  # the test's bool, or the number Python needed (`len(h.shape)`)
    assumptions: tuple[Assumption, ...]
    # it tests a value forward computes from its inputs, which follows from theirs and the weights
    intermediate: bool = False


@dataclass(frozen=True)
class Program:
    ops: tuple[Op, ...]
    graph: str  # name of the graph op
    inputs: tuple[str, ...]  # tensor inputs of forward, in order
    output: Any  # Ref, or a tuple/list structure of Refs
    blocks_style: bool = False
    num_blocks: int = 1
    # forward's graph parameter and inputs in forward's order, each "positional" or "keyword"
    # (keyword-only): how a call of forward passes them
    signature: tuple[tuple[str, str], ...] = ()
    # where the model keeps the graph, when forward takes none (`g` for self.g): trace.Traced
    kept_graph: tuple[str, ...] = ()
    # inputs forward reads from the graph: (input's target, "ndata" or "edata", key), trace.Traced
    graph_data: tuple[tuple[str, str, str], ...] = ()
    # inputs that are tables of the model read as node features: (input's target, attribute
    # path, how the method reads it: `self.emb.weight`), trace.Traced
    tables: tuple[tuple[str, str, str], ...] = ()
    # forward's tests of the data its graph carries: (view, key, whether present), trace.Traced
    decisions: tuple[tuple[str, str, bool], ...] = ()
    # graphs (op names) that inference checks for nodes without in-edges, as forward would
    in_degree_checks: tuple[str, ...] = ()
    # forward's tests of its values' shapes and dtypes, decided while tracing: trace.Traced
    static_decisions: tuple[StaticDecision, ...] = ()
    # forward's training flags and the value eval passes (`training=False`): trace.Traced.flags
    flags: tuple[tuple[str, bool], ...] = ()
    # forward converts its blocks (dgl.block_to_graph): trace.Traced.converts_blocks
    converts_blocks: bool = False
    # forward first makes its heterograph one graph of one type: trace.Traced.homogenized
    homogenized: tuple[str, tuple[tuple[str, Any], ...]] | None = None
    # what forward does by node type around it: trace.Traced.type_offsets (type_offsets.py)
    type_offsets: Any = None
    # forward's graph is a list of this many graphs side by side: trace.Traced.graphs
    graphs: int = 0
    # forward's graph parameters when it takes several, the items of its graph: trace.Traced
    graph_params: tuple[str, ...] = ()
    # forward's None defaults that stand for a table it reads otherwise: (parameter, the table
    # input's op), trace.Traced.optional
    optional: tuple[tuple[str, str], ...] = ()
    # forward's dicts of features by node type, each type an input (dict_inputs.DictInput)
    dict_inputs: tuple[Any, ...] = ()
    # the length of each of the model's module lists, `self.convs` -> 8: lower.module_lengths
    module_lengths: tuple[tuple[str, int], ...] = ()
    # the hop count a module holds, `self.propagate._k` -> 10: lower.module_lengths.hop_counts
    hop_counts: tuple[tuple[str, int], ...] = ()
    # forward's loops and the counts of those over a count the model holds (`for j in
    # range(self.num_etypes)`): lower.loop_ranges.LoopRange, each
    loop_ranges: tuple[Any, ...] = ()
    # a function attribute some modules of a class hold and this one sets to None,
    # `self.layers[2].activation`: lower.module_lengths.unset_functions
    unset_functions: tuple[str, ...] = ()
    # a function attribute its module's forward tests before calling it: lower.module_lengths
    tested_functions: tuple[str, ...] = ()
    # the branches modules' forwards took on their settings around each op's line, by op name
    # (lower/setting_tests.py), outermost first
    setting_branches: tuple[tuple[str, tuple[SettingBranch, ...]], ...] = ()
    by_name: dict[str, Op] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {op.name: op for op in self.ops})

    def op(self, name: str) -> Op:
        return self.by_name[name]

    def module_path(self, op: Op) -> str:
        """The submodule an op calls ("layers.0"): a module call's target, or for a written-out
        convolution's function (Op.helper) the module it takes first."""
        if op.helper and op.args and isinstance(op.args[0], Ref):
            return self.op(op.args[0].name).target
        return op.target

    def with_ops(self, ops: tuple[Op, ...], output: Any = None) -> "Program":
        return replace(self, ops=ops, output=self.output if output is None else output)

    def consumers(self) -> dict[str, list[str]]:
        users: dict[str, list[str]] = {op.name: [] for op in self.ops}
        for op in self.ops:
            for r in op.refs():
                if op.name not in users[r]:
                    users[r].append(op.name)
        return users

    def output_refs(self) -> list[str]:
        return list(iter_refs(self.output))

    def unread_inputs(self) -> frozenset[str]:
        """Inputs that no op reads and forward does not return (edge features a layer hands
        through unused): forward accepts them with any rows, so inference must too."""
        read = {r for op in self.ops for r in op.refs()} | set(self.output_refs())
        return frozenset(n for n in self.inputs if n not in read)


class Location(NamedTuple):
    """A location as the tracer writes it (Op.location, Op.library_line), `path:LINE (`code`)`,
    in parts: the place before the code (`path:LINE`, or words: `APPNPConv's norm reshape`),
    its path and line where it is `path:LINE` ("" otherwise), the code ("" where none is
    quoted). The one reader of the format: its writers are trace/stack_frames.py and
    lower/spelling.py."""

    place: str
    path: str
    line: str
    code: str


def location_parts(location: str) -> Location:
    place, quoted, code = location.partition(" (`")
    path, _, line = place.rpartition(":")
    if not (path and line.isdigit()):
        path, line = "", ""
    return Location(place, path, line, code.removesuffix("`)") if quoted else "")


def quoted_code(location: str) -> str:
    """The line of code a location quotes: "file.py:12 (`h = f(h)`)" -> "h = f(h)"; "" where
    it quotes none."""
    return location_parts(location).code


def iter_refs(value: Any) -> Iterator[str]:
    if isinstance(value, Ref):
        yield value.name
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from iter_refs(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from iter_refs(v)
    elif isinstance(value, slice):
        yield from iter_refs((value.start, value.stop, value.step))
    elif isinstance(value, Spelled):
        yield from iter_refs(value.parts)


def map_refs(value: Any, fn: Any) -> Any:
    """Rebuild `value` with every Ref replaced by fn(ref)."""
    if isinstance(value, Ref):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_refs(v, fn) for v in value)
    if isinstance(value, list):
        return [map_refs(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_refs(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(map_refs(value.start, fn), map_refs(value.stop, fn), map_refs(value.step, fn))
    if isinstance(value, Spelled):
        return Spelled(map_refs(value.parts, fn))
    return value


def reads_metadata(op: Op) -> bool:
    """`h.device`, `h.dtype`, `h.shape`, `h.size(0)`, `h.dim()`, `len(h)`: a value read from a
    tensor that is none of its rows (APPNPConv's `torch.ones(...).to(feat.device)`, an edge
    weight, reads no row of feat)."""
    if op.kind == "function" and op.target == "getattr":
        return len(op.args) == 2 and op.args[1] in ("device", "dtype", "shape", "ndim")
    if op.kind == "function" and op.target == "len":
        return True
    return op.kind == "method" and op.target in ("size", "dim", "ndimension")


def reads_device(program: Program, op: Op) -> bool:
    """`h.device` of a tensor computed per node or edge (not of a parameter: `self.w.device`)."""
    return (op.kind == "function" and op.target == "getattr" and op.args[1:] == ("device",)
            and isinstance(op.args[0], Ref) and program.op(op.args[0].name).kind not in ("attr", "graph"))

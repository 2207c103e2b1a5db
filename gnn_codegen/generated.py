"""What the generator is asked (GenerateOptions) and what it gives back (Generated): the data
the pipeline passes out, in a module of its own so that the stages that read it (the check, the
heterogeneous generator, explain) need not import the pipeline that makes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gnn_codegen.cut.placement import DEFAULT_FANOUT
from gnn_codegen.load.method_name import DEFAULT_METHOD_NAME

if TYPE_CHECKING:
    from gnn_codegen.analysis.attributes import Attributes
    from gnn_codegen.ir import Program
    from gnn_codegen.load.model import LoadedModel
    from gnn_codegen.cut.plan import Plan


@dataclass(frozen=True)
class GenerateOptions:
    init: str | None = None  # JSON object of constructor keyword arguments
    output: str = "inference.py"  # only for the "regenerate with" line of the header
    feat_dims: str | None = None  # "x=602,w=1"
    leaves: tuple[str, ...] = ()  # class names to keep as row-wise leaves
    mp_modules: tuple[str, ...] = ()  # class names to treat as message passing
    fanout: float = DEFAULT_FANOUT  # cost model: source rows gathered per stored row (cut.py)
    optimize: bool = True  # False: the simple rule, a cut right after each message-passing op
    # check the module against forward on a random graph before returning it (verify.py); off
    # only with --no-verify, and the header then says so
    verify: bool = True
    # the generated method's name; by default it replaces a user method of that name (method_name.py)
    method_name: str = DEFAULT_METHOD_NAME
    # a heterogeneous graph's canonical edge types, "SRC:REL:DST,..." (hetero/schema.py)
    metagraph: str | None = None
    # JSON object of values for forward's parameters that are not features (`out_key`): forward
    # is traced, and inference computes it, for those values
    forward_args: str | None = None
    # how many blocks a blocks-style forward is called with in training (--blocks), where its
    # depth is that count rather than fixed by its layers (block_count.py)
    blocks: int | None = None
    # --runtime-module NAME: the runtime in NAME.py beside the output, imported (runtime_module.py)
    runtime_module: str | None = None


@dataclass(frozen=True)
class Generated:
    source: str
    loaded: LoadedModel
    program: Program
    attributes: Attributes
    plan: Plan
    warnings: tuple[str, ...] = field(default=())
    target: str = ""
    buffers: tuple[tuple[str, str], ...] = ()  # value -> its name in the generated code
    # (generated statement, the user's line it computes): render.Rendered.origins
    origins: tuple[tuple[str, str], ...] = ()
    verification: CheckResult | None = None  # the check before writing (None with --no-verify)
    notes: tuple[str, ...] = ()  # what the user should know that is no warning
    method_name: str = DEFAULT_METHOD_NAME  # the generated method's name in the class
    # a heterogeneous model (hetero/): its plan, the graph's schema, and --feat-dims by node
    # type; program, attributes and plan are then None
    hetero: Any = None
    schema: Any = None
    feat_dims: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # a heterogeneous model's stages as the generated code runs them (HeteroRenderer.layout)
    hetero_layout: tuple[Any, ...] = ()
    # --runtime-module: (NAME, the text of NAME.py) that the module imports
    runtime_module: tuple[str, str] | None = None


@dataclass(frozen=True)
class BatchResult:
    batch_size: int | str  # "auto" for batch_size="auto"
    sources: str  # "in place" or "gathered", see harness.gather_sources_always
    max_abs_diff: float
    seconds: float


@dataclass(frozen=True)
class CheckResult:
    num_nodes: int
    num_edges: int
    zero_in_degree_nodes: int
    forward_seconds: float
    batches: tuple[BatchResult, ...]
    atol: float
    rtol: float
    ok: bool
    notes: tuple[str, ...] = ()  # what the check had to change, e.g. self-loops for the model

    @property
    def max_abs_diff(self) -> float:
        return max(b.max_abs_diff for b in self.batches)

    @property
    def worst(self) -> BatchResult:
        return max(self.batches, key=lambda b: b.max_abs_diff)

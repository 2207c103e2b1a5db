"""Errors: one class per user mistake, each carrying a one-paragraph message for the CLI."""

from __future__ import annotations


class GnnCodegenError(Exception):
    """A problem with the user's input: the CLI prints the message (no traceback) and exits 2."""

    exit_code = 2


class TargetError(GnnCodegenError):
    """FILE:NAME does not name an importable file and a class or factory in it."""


class InitError(GnnCodegenError):
    """--init is not a JSON object, or the constructor rejected it."""


class OptionsError(GnnCodegenError):
    """Command-line options that contradict each other or are out of range."""


class OutputError(GnnCodegenError):
    """-o or --dot names a folder, a read-only file, or a place that cannot be written."""


class ExitCalledError(GnnCodegenError):
    """The model's code called sys.exit() or os._exit() while gnn-codegen ran it (importing its
    file, building or tracing the model), which would end the command before it writes."""


class FeatDimsError(GnnCodegenError):
    """Input widths could not be read from the model and were not given with --feat-dims."""


class DataDependentControlFlowError(GnnCodegenError):
    """forward branches or loops on tensor values, which a layer-wise loop cannot reproduce."""


class UnsupportedModuleError(GnnCodegenError):
    """A message-passing module whose result on a 1-hop block differs from the full graph."""


class UnsupportedOperationError(GnnCodegenError):
    """An operation that mixes rows of different nodes outside message passing, or reads the graph."""


class GraphValueError(UnsupportedOperationError):
    """A value of the whole graph (EdgeWeightNorm's normalised weights) that cannot be computed
    before the first batch. Said as it is also when it stops a multi-hop module traced into:
    the module itself could be followed."""


class GraphUseError(GnnCodegenError):
    """forward decides in Python on the graph, or passes messages inline, in a way a layer-wise
    loop cannot follow (graph_proxy.py)."""


class SignatureError(GnnCodegenError):
    """forward's parameters: no graph, several graphs, or a graph kept on the model."""


class TraceFailedError(GnnCodegenError):
    """torch.fx could not trace forward for a reason other than control flow."""


class BlockCountError(GnnCodegenError):
    """A blocks-style forward whose message-passing depth is the number of blocks it is given
    (`for i in range(len(blocks))` over no fixed layers): --blocks must say it (block_count.py)."""


class CheckFailedError(GnnCodegenError):
    """--check found that the generated inference differs from the full-graph forward."""

    exit_code = 1


class InternalError(Exception):
    """A bug in gnn-codegen itself, never the user's fault."""


def internal(message: str) -> InternalError:
    return InternalError(
        f"internal error: {message}. This is a bug in gnn-codegen; please report it with the "
        "model file and the command you ran."
    )


def first_line(exc: BaseException) -> str:
    """An exception's message for a one-line mention inside another message."""
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(".") if text else "no message"

"""Stage 3, lower, spelling: how the user's file spells a function (`F.relu`, `torch.cat`)
and a constant, and which line of the user's file each traced node comes from."""

from __future__ import annotations

import builtins
import functools
import io
import operator
import re
import tokenize
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch
import torch.fx as fx

from gnn_codegen.errors import InternalError, internal
from gnn_codegen.ir import Op
from gnn_codegen.trace.stack_frames import frames
from gnn_codegen.trace.traced import Traced


_TORCH_NAMESPACES: tuple[tuple[str, ModuleType], ...] = (
    ("torch.nn.functional", torch.nn.functional),
    ("torch", torch),
)


_OWN_DIR = str(Path(__file__).resolve().parent.parent)


@functools.lru_cache(maxsize=None)
def _resolved(filename: str) -> str:
    return str(Path(filename).resolve())


def locations(node: fx.Node, path: Path) -> tuple[str, str]:
    """Where the node was made, from its recorded stack trace: the innermost line of the user's
    file (for messages), and the innermost line outside gnn-codegen's own files (for names):
    the user's line, or the line of library code forward runs through (`src_norm =
    th.pow(...)` inside DGL's APPNPConv, traced into), whose variable names the value better
    than the user's line that called it."""
    user = naming = ""
    own = _resolved(str(path))
    for filename, line, code in reversed(frames(node)):
        resolved = _resolved(filename)
        if not naming and not resolved.startswith(_OWN_DIR):
            # the user's file as the user named it: a relative path would otherwise differ
            # from the frame's absolute one, and the user's own line read as library code
            naming = f"{path if resolved == own else filename}:{line} (`{without_comment(code)}`)"
        if resolved == own:
            user = f"{path}:{line} (`{without_comment(code)}`)"
            break
    return user, naming or user


def without_comment(line: str) -> str:
    """A line of the user's code as a message quotes it: stripped, its trailing comment gone."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip()).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return line.strip()
    comments = [t for t in tokens if t.type == tokenize.COMMENT]
    return line.strip()[: comments[0].start[1]].rstrip() if comments else line.strip()


def function_expression(fn: Callable[..., Any], namespace: dict[str, Any]) -> str:
    """How the user's file spells `fn`: `F.relu`, `torch.cat`, `relu`, or `operator.add`."""
    if getattr(operator, getattr(fn, "__name__", ""), None) is fn:
        return f"operator.{fn.__name__}"
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return fn.__name__
    for name, value in namespace.items():
        if value is fn and not name.startswith("_"):
            return name
    fn_name = getattr(fn, "__name__", None)
    if fn_name:
        for alias, value in sorted(namespace.items(), key=lambda kv: len(kv[0])):
            if isinstance(value, ModuleType) and getattr(value, fn_name, None) is fn:
                return f"{alias}.{fn_name}"
        for qualified, module in _TORCH_NAMESPACES:
            if getattr(module, fn_name, None) is fn:
                return f"{qualified}.{fn_name}"
    raise internal(f"cannot spell function {fn!r} in generated code")


_ASSIGNMENT = re.compile(r"\(`([A-Za-z_]\w*)\s*(?:[-+*/@]?=)(?!=)")


_UNPACKING = re.compile(r"\(`\(?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\)?\s*=(?!=)")


def assigned_variable(line: str) -> str:
    """The one variable a line (as locations() gives it) assigns, or ""."""
    match = _ASSIGNMENT.search(line) if line else None
    return match.group(1) if match and not _UNPACKING.search(line) else ""


def _with_user_variables(ops: list[Op], lines: dict[str, str]) -> list[Op]:
    """Name each value after the variable its source line assigns (`h1 = F.relu(...)` names the
    relu), so that generated names are the user's. The value a line assigns is the last op
    of a run of ops from that line; the others on the line know the variable as line_var.
    `lines`: each op's line (locations), where it is not the user's own."""
    named = []
    for i, op in enumerate(ops):
        line = lines.get(op.name, op.location)
        last_of_line = i + 1 == len(ops) or lines.get(ops[i + 1].name, ops[i + 1].location) != line
        match = _ASSIGNMENT.search(line) if line else None
        unpacked = _UNPACKING.search(line) if line else None
        index = op.args[1] if op.target == "operator.getitem" and len(op.args) == 2 else None
        line_var = match.group(1) if match else ""
        if unpacked and isinstance(index, int):  # `h, e = conv(g, h, e)`: name each element
            targets = [t.strip() for t in unpacked.group(1).split(",")]
            named.append(replace(op, var=targets[index]) if index < len(targets) else op)
        else:
            named.append(replace(op, var=line_var if last_of_line else "", line_var=line_var))
    return named


def _traced_constant(traced: Traced, target: str) -> torch.Tensor | None:
    """A small tensor torch.fx keeps on the traced module (`_tensor_constant0`) that the model
    itself lacks: written out as numbers where it is read."""
    try:
        traced.model.get_parameter(target) if "." in target else getattr(traced.model, target)
        return None
    except AttributeError:
        pass
    value = getattr(traced.graph_module, target, None)
    if isinstance(value, torch.Tensor) and value.numel() <= 64 and not value.requires_grad:
        return value
    return None


def _spelled(fn: Any, namespace: dict[str, Any]) -> str | None:
    """How the user's file writes `fn`, or None when it does not (a lambda, a module object)."""
    try:
        return function_expression(fn, namespace)
    except InternalError:
        return None

"""Stage 3, lower, the branches a module's forward took on its settings (issue 37): for each op
traced inside a module's forward, the `if self.<setting> ...:` statements of that forward around
the op's line, each with the side this build took, read from the forward's source with `ast`
and evaluated on the instance. The trace keeps only the side taken (GCN2Conv's `rst = rst +
self.bias` under `if self._bias:`, PairNorm's `if self.mode == "PN":` body), so the code
written out from it would read as if the module had no such test; render/setting_branches.py
keeps the test, or says which branch this is, where it writes the op.

Only tests of settings count: conditions made of `self.<attribute>` reads and constants alone
(`not`, `and`, `or`, comparisons), whose every attribute is one the build digest covers
(templates/built.py.j2: a bool, number, string or function the module holds, a submodule, a
parameter or buffer, or None where the constructor takes a parameter of its name: SGConv's
`norm=None`, against which a module is a submodule more), so that another value is refused by
check_built at inference's entry. A test of anything else (an argument, a tensor, a cache such
as SGConv's `_cached_h`) is no setting, and nothing is said of it."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch.nn as nn

from gnn_codegen.ir import Op, SettingBranch, location_parts
from gnn_codegen.lower.accessors import accessor


@dataclass(frozen=True)
class _If:
    """One `if`/`elif` of a forward whose test is over `self` and constants alone."""

    header: str  # `if self.mode == "PN":` / `elif self.mode == "PN-SI":`
    text: str  # the test as forward writes it, `self.mode == "PN"`
    chain_header: str  # the chain's first `if ...:`, for its `else:`
    test: ast.expr
    attributes: tuple[str, ...]  # `self.<name>` the test reads
    body: tuple[int, int]  # the lines of its body, and of what runs otherwise (0, 0: nothing)
    orelse: tuple[int, int]
    orelse_is_elif: bool
    line: int  # the `if` statement's own line (its identity)
    within: tuple[tuple[int, int], ...]  # the sides of the `if`s it is in (of any test)
    expression: bool = False  # `a if self.x else b`: its header is the expression


def setting_branches(model: nn.Module, ops: tuple[Op, ...]) -> tuple[tuple[str, tuple[SettingBranch, ...]], ...]:
    """(op name, the setting branches around its line, outermost first) for each op traced in
    a module's forward under a test of that module's settings."""
    paths = {path: accessor(model, path) if path else "self" for path, _ in model.named_modules()}
    modules = {paths[path]: module for path, module in model.named_modules()}

    def reached(op: Op) -> str:
        """The module whose forward the op's line is in: the one it ran within, or for a call
        of a submodule from that forward (SGConv's `self.fc(feat)`) the submodule's owner."""
        if op.module_call:
            return op.module_call[0]
        owner = op.target.rpartition(".")[0] if op.kind == "module" else ""
        return paths.get(owner, "") if owner else ""

    def line(op: Op) -> tuple[str, int]:
        where = location_parts(op.innermost_line)
        return (where.path, int(where.line)) if where.line else ("", 0)

    traced: dict[tuple[str, str], list[int]] = {}  # (module, file) -> the lines traced there
    for op in ops:
        module, (path, number) = reached(op), line(op)
        if module and number:
            traced.setdefault((module, path), []).append(number)
    found = []
    for op in ops:
        module, (path, number) = reached(op), line(op)
        if not module or not number or module not in modules:
            continue
        branches = tuple(_branches(modules[module], module, Path(path), number))
        branches += tuple(_skipped(modules[module], module, Path(path), number, sorted(set(traced[(module, path)]))))
        if branches:
            found.append((op.name, branches))
    return tuple(found)


def _skipped(module: nn.Module, reached_as: str, path: Path, line: int, lines: list[int]) -> list[SettingBranch]:
    """The `if`s with no else whose test this build fails (SGConv's `if self.norm is not
    None:`, GCN2Conv's `if self._bias:` built with bias=False), for the op at `line`: the
    first line of the module's forward traced after one (lines: those of all its ops). Only
    an `if` forward reached: every side of an `if` it is in holds a line traced."""
    source_path, tests = _tests(type(module))
    if source_path is None or not _same_file(source_path, path):
        return []
    skipped = []
    for test in tests:
        after = [n for n in lines if n > test.body[1]]
        if test.expression or test.orelse != (0, 0) or not after or after[0] != line:
            continue
        if not all(any(a <= n <= b for n in lines) for a, b in test.within):
            continue
        if not all(_covered(module, a) for a in test.attributes) or _evaluated(test, module) is not False:
            continue
        skipped.append(SettingBranch(
            module=reached_as, class_name=type(module).__name__, header=test.header, chain=test.chain_header,
            line=test.line, condition="", settings=test.attributes, alone=False, opens=line, taken=False))
    return skipped


def _evaluated(test: "_If", module: nn.Module) -> bool | None:
    """The test's value on the module; None where it fails."""
    try:
        return bool(eval(compile(ast.Expression(test.test), "<test>", "eval"), {}, {"self": module}))
    except Exception:  # a test that fails on the instance: nothing said of it
        return None


def branches_around(module: nn.Module, reached_as: str, path: Path, line: int) -> tuple[SettingBranch, ...]:
    """The setting branches of the module's forward around its line `line` of file `path`,
    outermost first, the module reached as `reached_as` (`self.layers[0]`): for a renderer
    that has no Program's ops (the heterogeneous one)."""
    return tuple(_branches(module, reached_as, path, line))


def _branches(module: nn.Module, reached_as: str, path: Path, line: int) -> list[SettingBranch]:
    source_path, tests = _tests(type(module))
    if source_path is None or not _same_file(source_path, path):
        return []
    branches = []
    for test in tests:
        inside_body = test.body[0] <= line <= test.body[1]
        inside_orelse = test.orelse[0] <= line <= test.orelse[1]
        if not (inside_body or inside_orelse) or not all(_covered(module, a) for a in test.attributes):
            continue
        if inside_orelse and test.orelse_is_elif:
            continue  # the elif's own entry says it
        taken = _evaluated(test, module)
        if taken is None or taken != inside_body:  # the op's line is on the other side: not what ran
            continue
        condition = re.sub(r"\bself\.", f"{reached_as}.", test.text) if _reads_self_only(test.test) else ""
        branches.append(SettingBranch(
            module=reached_as, class_name=type(module).__name__,
            header=test.header if inside_body else "else:", chain=test.chain_header, line=test.line,
            condition=condition if inside_body else "", settings=test.attributes,
            alone=inside_body and test.orelse == (0, 0), opens=test.body[0] if inside_body else test.orelse[0]))
    return branches


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _reads_self_only(test: ast.expr) -> bool:
    """Whether `self` appears in the test only as `self.<attribute>` (so that replacing
    `self.` by the module's accessor spells the same test)."""
    names = [n for n in ast.walk(test) if isinstance(n, ast.Name)]
    return all(n.id == "self" for n in names)


def _covered(module: nn.Module, name: str) -> bool:
    """Whether the build digest covers the attribute (templates/built.py.j2), so that a module
    built with another value is refused: a parameter, buffer or submodule (None ones marked or
    absent), or a setting in its __dict__ of a bool, number, string or function. A None
    attribute only where the constructor takes it (a module or function there is one the
    digest counts): otherwise it may be a cache (SGConv's `_cached_h`) the digest leaves out."""
    if name in module._parameters or name in module._buffers or name in module._modules:
        return True
    value = vars(module).get(name)
    if "device" in name.lower():
        return False
    if value is None:  # a setting where the constructor takes it (SGConv's norm=None), not a cache
        return name.lstrip("_") in _constructor_parameters(type(module))
    return isinstance(value, (bool, int, float, str)) or callable(value) and not isinstance(value, nn.Module)


@lru_cache(maxsize=None)
def _constructor_parameters(cls: type) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(cls.__init__).parameters)
    except (TypeError, ValueError):
        return frozenset()


@lru_cache(maxsize=None)
def _tests(cls: type) -> tuple[Path | None, tuple[_If, ...]]:
    """The class's forward's file and its `if` statements over settings, each with its lines."""
    forward = getattr(cls, "forward", None)
    try:
        lines, first = inspect.getsourcelines(forward)  # type: ignore[arg-type]
        path = Path(inspect.getsourcefile(forward))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return None, ()
    text = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None, ()
    offset = first - 1
    found: list[_If] = []

    def visit(node: ast.AST, chain: str = "", elif_: bool = False, within: tuple[tuple[int, int], ...] = ()) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If):
                attributes = _setting_attributes(child.test)
                # on one line, as a comment quotes it (a test over several lines is rare)
                written = " ".join((ast.get_source_segment(text, child.test) or "").split())
                header = f"{'elif' if elif_ else 'if'} {written}:"
                first_header = chain if elif_ else header
                if attributes:
                    found.append(_If(header, written, first_header, child.test, attributes, _span(child.body, offset),
                                     _span(child.orelse, offset), _is_elif(text, child), child.lineno + offset,
                                     within))
                body, orelse = _span(child.body, offset), _span(child.orelse, offset)
                for statement in child.body:
                    visit_one(statement, within=(*within, body))
                if _is_elif(text, child):  # the elif is in the if's other side
                    visit_one(child.orelse[0], first_header, True, within)
                else:
                    for statement in child.orelse:
                        visit_one(statement, within=(*within, orelse))
            else:
                if isinstance(child, (ast.Return, ast.Assign)) and isinstance(child.value, ast.IfExp):
                    chosen = _chosen_expression(child, child.value, text, offset, within)
                    found.extend([chosen] if chosen else [])
                visit(child, within=within)

    def visit_one(statement: ast.AST, chain: str = "", elif_: bool = False,
                  within: tuple[tuple[int, int], ...] = ()) -> None:
        holder = ast.Module(body=[statement], type_ignores=[])  # type: ignore[list-item]
        visit(holder, chain, elif_, within)

    visit(tree)
    return path, tuple(found)


def _chosen_expression(statement: ast.stmt, chosen: ast.IfExp, text: str, offset: int,
                       within: tuple[tuple[int, int], ...]) -> _If | None:
    """`return self.activation(h) if self.activation else h` (DGL-style MLP layers): a test of
    settings whose other side is the value as it was, read as `if self.activation:` around the
    statement (its ops are its body's where the test holds)."""
    attributes = _setting_attributes(chosen.test)
    if not attributes or not isinstance(chosen.orelse, ast.Name):
        return None
    written = " ".join((ast.get_source_segment(text, chosen) or "").split())
    test = " ".join((ast.get_source_segment(text, chosen.test) or "").split())
    lines = (statement.lineno + offset, (statement.end_lineno or statement.lineno) + offset)
    return _If(written, test, written, chosen.test, attributes, lines, (0, 0), False, statement.lineno + offset,
               within, expression=True)


def _is_elif(text: str, node: ast.If) -> bool:
    """Whether the If's orelse is an `elif` (one If written on the `elif` line), not an `else:`
    holding an if."""
    if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
        return False
    line = text.splitlines()[node.orelse[0].lineno - 1]
    return line.lstrip().startswith("elif")


def _span(statements: list[ast.stmt], offset: int) -> tuple[int, int]:
    if not statements:
        return 0, 0
    return statements[0].lineno + offset, (statements[-1].end_lineno or statements[-1].lineno) + offset


def _setting_attributes(test: ast.expr) -> tuple[str, ...]:
    """The attributes of `self` a test reads, where it reads nothing but those and constants
    (`self.mode == "PN"`, `not self._allow_zero_in_degree`, `self.norm is not None`); () for
    any other test."""
    attributes: list[str] = []

    def ok(node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            attributes.append(node.attr)
            return True
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(ok(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ok(node.operand)
        if isinstance(node, ast.BoolOp):
            return all(ok(v) for v in node.values)
        if isinstance(node, ast.Compare):
            return ok(node.left) and all(ok(c) for c in node.comparators)
        return False

    return tuple(dict.fromkeys(attributes)) if ok(test) and attributes else ()

"""Render, the branches a written-out module's forward took on its settings, shown where its
code is written (issue 37: "wherever a module is written out, branches get dropped silently").
The trace keeps only the side of `if self.<setting>:` that this build takes
(lower/setting_tests.py), so GCN2Conv's `rst = rst + self.bias` would read as unconditional
where DGL tests `self._bias`. Two forms, one line per branch:

- an `if` with no else around statements that rebind names already bound keeps forward's test:
  `if self.convs[i]._bias:  # as the module's forward tests it`, the statements under it;
- a branch that chooses between bodies (PairNorm's `mode`), or statements the test cannot
  wrap, gets one comment before its first statement that says which branch this is and that
  check_built, at inference's entry, refuses another setting (every attribute such a test reads
  is one the build digest covers, lower/setting_tests._covered).

A loop whose last layer's module lacks the function a test guards (TAGCN's last TAGConv,
`activation=None`) keeps the test before the last layer's return (render/activation_test.py)."""

from __future__ import annotations

import re
import textwrap

from typing import Protocol

from gnn_codegen.ir import Op, Program, SettingBranch, location_parts

_ASSIGNED = re.compile(r"(\s*)(\w+(?:, \w+)*) = ")
# a comment in a function nested in inference's body (indented up to 20: in a loop's last
# layer's ending), and a statement
_COMMENT_WIDTH = 88 - 20 - 2
_STATEMENT_WIDTH = 88 - 16
_TESTED = "  # as the module's forward tests it"


class Renderer(Protocol):
    """What this reads of the module's renderer (render.Renderer; a protocol, so that this
    module need not import the layer writer that imports it)."""

    program: Program

    def note_origins(self, lines: list[str], op: Op | None) -> None: ...


class SettingBranches:
    """Per function written: each op's lines, as the layer writer appends them, kept under
    forward's tests or said to be its branch."""

    def __init__(self, r: Renderer, params: dict[str, list[tuple[str, str]]]):
        self.r = r
        self.by_op = dict(r.program.setting_branches)
        # the function's parameters, then every name its lines bind
        self.bound = {local for bound in params.values() for _, local in bound}
        self.said: set[tuple[str, int]] = set()
        self.pending: list[str] = []  # comments for the next statement written
        # the tests the last statements written are under, and where they end: statements right
        # after under the same tests join them
        self.open: tuple[tuple[str, ...], int] = ((), -1)
        self.start = 0  # where the lines of the op begun last start
        self.op: Op | None = None

    def noted(self, lines: list[str], op: Op | None) -> None:
        """The lines since the last call are the op's noted then: under its tests, or after its
        branch's line; their origins noted (Renderer.note_origins); `op`'s lines follow (None:
        the function's statements end)."""
        self.settle(lines)
        self.r.note_origins(lines, op)
        self.start, self.op = len(lines), op

    def settle(self, lines: list[str]) -> None:
        """The lines the op begun last appended, under its tests or after its branch's line."""
        op, start = self.op, self.start
        self.op = None
        if op is None:
            return
        written = lines[start:]
        # the notes written before the op's statements (why gnn-codegen added a line) stay first
        count = next((i for i, text in enumerate(written) if not text.startswith("#")), len(written))
        leading, statements = written[:count], written[count:]
        branches = list(self.by_op.get(op.name, ()))
        wraps = [b for b in branches if b.alone and b.taken and b.condition and self._wrappable(statements)]
        line = location_parts(op.innermost_line).line
        skipped = []
        for branch in branches:
            key = (branch.module, branch.line)
            # said once, at the branch's first statement: the rest of its body follows it
            if branch in wraps or key in self.said or not line or int(line) != branch.opens:
                continue
            if branch.alone and branch.taken and not statements:
                continue  # written inside a later statement, which says or tests it
            self.said.add(key)
            if branch.taken:
                self.pending += _comment(_said(branch))
            else:
                skipped.append(branch)
        if skipped:  # the tests skipped before one statement, in one comment
            self.pending += _comment(_skipped(skipped))
        for statement in statements:
            assigned = _ASSIGNED.match(statement)
            if assigned:
                self.bound.update(assigned.group(2).split(", "))
        if not statements:
            return
        headers = tuple(f"if {b.condition}:" for b in wraps)
        if headers and self.open == (headers, start) and not leading and not self.pending:
            opened: list[str] = []  # joins the statements above, under the same tests
        else:
            opened = []
            for depth, header in enumerate(headers):
                indent = "    " * depth
                if len(f"{indent}{header}{_TESTED}") <= _STATEMENT_WIDTH:
                    opened.append(f"{indent}{header}{_TESTED}")
                else:  # black would break the test: the comment above it
                    opened += [f"{indent}#{_TESTED.split('#')[1]}", f"{indent}{header}"]
        indent = "    " * len(headers)
        lines[start:] = [*leading, *self.pending, *opened, *(indent + s for s in statements)]
        self.pending = []
        self.open = (headers, len(lines)) if headers else ((), -1)

    def _wrappable(self, statements: list[str]) -> bool:
        """Statements that rebind names already bound, each on one line: under a test, every
        name after them is bound whichever way the test goes, as in forward."""
        if not statements:
            return False
        for statement in statements:
            assigned = _ASSIGNED.match(statement)
            if statement[:1].isspace() or assigned is None or not set(assigned.group(2).split(", ")) <= self.bound:
                return False
        return True


def _said(branch: SettingBranch) -> str:
    """`GCN2Conv.forward's `if self._project_initial_features:` branch, the one this build takes
    (check_built above refuses another _project_initial_features)`."""
    settings = " or ".join(branch.settings)
    which = (f"`{branch.header}` branch" if branch.header != "else:"
             else f"`else:` branch of `{branch.chain}`")
    return (f"{branch.class_name}.forward's {which}, the one this build takes (check_built above "
            f"refuses another {settings})")


def _skipped(branches: list[SettingBranch]) -> str:
    """`SGConv.forward's `if self.norm is not None:` is false in this build, left out
    (check_built above refuses another norm)`, for one test or several."""
    tests = " and ".join(f"`{b.header}`" for b in branches)
    settings = " or ".join(dict.fromkeys(s for b in branches for s in b.settings))
    verb = "is" if len(branches) == 1 else "are"
    return (f"{branches[0].class_name}.forward's {tests} {verb} false in this build, left out "
            f"(check_built above refuses another {settings})")


def _comment(text: str) -> list[str]:
    """The comment's lines, never broken inside a quoted `...` of forward's code."""
    kept = re.sub(r"`[^`]*`", lambda quoted: quoted.group(0).replace(" ", "\0"), text)
    return [f"# {line.replace(chr(0), ' ')}" for line in textwrap.wrap(kept, _COMMENT_WIDTH)]

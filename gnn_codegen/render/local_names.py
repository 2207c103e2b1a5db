"""Stage 6, render, locals that take back their name: inside a layer's function every value
gets a name of its own, so the user's `h` written once per hop comes out `h`, `h_2`, `h_3`
(the allocator's counters). A person reuses `h` once the value it held is read no more; this
pass does the same on the written function: a counted local is renamed to its base where
the base's value is dead from the counted one's first assignment until its last use, so the
function computes what it did. A counted local that keeps its counter and is returned takes
the name the method binds it to instead: `x_skip3 = self.skips[1](x_skip)`, returned and
bound as `x_skip3`, not `x_skip_2` beside the parameter `x_skip2` (a counter that says nothing,
beside a name numbered by layer)."""

from __future__ import annotations

import ast
import textwrap


def _flat(statements: list[ast.stmt]) -> list[tuple[ast.AST, ...]] | None:
    """The statements in the order they run, each as the nodes it reads and writes (a `with`'s
    items, then its body); None where the body branches or loops (never renamed)."""
    flat: list[tuple[ast.AST, ...]] = []
    for statement in statements:
        if isinstance(statement, ast.With):
            flat.append(tuple(statement.items))
            inner = _flat(statement.body)
            if inner is None:
                return None
            flat += inner
        elif isinstance(statement, ast.If) and not statement.orelse and _of_settings(statement.test):
            # a written-out module's test of its settings (setting_branches.py): true in this
            # build, which inference's check_built holds to, so its body runs as if untested
            flat.append((statement.test,))
            inner = _flat(statement.body)
            if inner is None:
                return None
            flat += inner
        elif isinstance(statement, (ast.For, ast.While, ast.If, ast.Try, ast.FunctionDef, ast.ClassDef,
                                    ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith)):
            return None
        else:
            flat.append((statement,))
    return flat


def _of_settings(test: ast.expr) -> bool:
    return all(n.id == "self" for n in ast.walk(test) if isinstance(n, ast.Name))


def renamed(params: list[str], body: list[str], counted: dict[str, str]) -> dict[str, str]:
    """{counted local: its base} for every counted local of the function that may take its
    base's name: the base is one of the function's own locals that no statement from the
    counted one's first assignment to its last use reads or assigns, and that is assigned again
    before any later read; or a parameter no statement after the counted one's first
    assignment reads (the parameter keeps its stored tensor's name where it is read)."""
    source = "def f(" + ", ".join(p.split("=")[0] for p in params) + "):\n" + textwrap.indent("\n".join(body), "    ")
    try:
        function = ast.parse(source).body[0]
    except SyntaxError:  # not ours to report here: the module's own parse does (write/format.py)
        return {}
    assert isinstance(function, ast.FunctionDef)
    flat = _flat(function.body)
    if flat is None:
        return {}
    # per statement: the names it reads and those it assigns
    events = []
    for nodes in flat:
        names = [n for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)]
        events.append(({n.id for n in names if isinstance(n.ctx, ast.Load)},
                       {n.id for n in names if not isinstance(n.ctx, ast.Load)}))
    parameters = {p.split("=")[0] for p in params}
    renames: dict[str, str] = {}
    for local, base in counted.items():
        where = [i for i, (loads, stores) in enumerate(events) if local in loads | stores]
        assigned = [i for i, (_, stores) in enumerate(events) if local in stores]
        if not assigned or (base not in parameters and not any(base in stores for _, stores in events)):
            continue
        first, last = assigned[0], where[-1]
        # a parameter is dead once read for the last time: the statement that reads it may take
        # its name (`h = self.layers[i](block, h)`, as forward writes it; a loop's layer function
        # whose parameter is the loop's running `h`)
        if base in parameters and any(base in loads | stores for loads, stores in events[first + 1:]):
            continue
        if base in events[first][1] or any(base in loads | stores for loads, stores in events[first + 1:last + 1]):
            continue
        after = next((i for i in range(last + 1, len(events)) if base in events[i][0] | events[i][1]), None)
        if after is not None and base in events[after][0]:
            continue  # the base's old value is read later
        renames[local] = base
        for loads, stores in events:  # the base now holds this value: later candidates see it
            for names in (loads, stores):
                if local in names:
                    names.discard(local)
                    names.add(base)
    return renames


def bound_names(params: list[str], body: list[str], returned: dict[str, str],
                counted: dict[str, str]) -> dict[str, str]:
    """{counted local: the method's name for it} for each counted local in `returned` (a local
    the function returns as it is -> the name the method binds that result to) whose method
    name no statement or parameter of the function reads or writes: a new local then, which
    hides no value of the method's that the function reads. A returned local whose counted
    sibling is renamed so is renamed too (`feat, el` beside `feat_2, el_2`)."""
    source = "def f(" + ", ".join(p.split("=")[0] for p in params) + "):\n" + textwrap.indent("\n".join(body), "    ")
    try:
        function = ast.parse(source)
    except SyntaxError:
        return {}
    seen = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    # a local that took a parameter's name back (renamed: `x = F.relu(...)` after the last read
    # of the parameter x) is that parameter in the lines above: renaming it would rename them
    parameters = {p.split("=")[0] for p in params}
    seen |= parameters
    returned = {local: outer for local, outer in returned.items() if local not in parameters}
    renames: dict[str, str] = {}
    for local, outer in returned.items():
        if local in counted and local in seen and outer.isidentifier() and outer not in seen \
                and outer not in renames.values():
            renames[local] = outer
    # ...and the returned locals whose counted siblings those are (`feat` beside `feat_2`, both
    # returned): named as they are bound too, so that no result reads as the first of a count
    bases = {counted[local] for local in renames}
    for local, outer in returned.items():
        if local in bases and outer.isidentifier() and outer not in seen and outer not in renames.values():
            renames[local] = outer
    return renames


def rename(lines: list[str], renames: dict[str, str]) -> list[str]:
    """The lines with each renamed local's occurrences (names, never attributes, keywords or
    strings) replaced; one line out per line in."""
    if not renames:
        return lines
    rows = [row for line in lines for row in line.split("\n")]
    module = ast.parse("def f():\n" + textwrap.indent("\n".join(rows), "    "))
    at = sorted(((n.lineno - 2, n.col_offset, n.id) for n in ast.walk(module)
                 if isinstance(n, ast.Name) and n.id in renames), reverse=True)
    for row, offset, name in at:  # col_offset counts UTF-8 bytes of the indented line
        line = rows[row]
        column = len(("    " + line).encode()[:offset].decode()) - 4
        rows[row] = line[:column] + renames[name] + line[column + len(name):]
    out, start = [], 0
    for line in lines:
        count = line.count("\n") + 1
        out.append("\n".join(rows[start:start + count]))
        start += count
    return out

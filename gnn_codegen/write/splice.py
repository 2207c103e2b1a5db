"""Stage 7, splice: the user's file and the rendered code into the output module. libcst keeps
the user's class as written (plus the generated method) and the top-level statements it needs —
imports, helper classes and functions, constants — and drops the rest (training loops, scripts,
the `__main__` block)."""

from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass

import libcst as cst

from gnn_codegen.errors import internal
from gnn_codegen.names import NameAllocator
from gnn_codegen.write.import_order import insert_sorted
from gnn_codegen.render.runtime_imports import RUNTIME_MODULES, modules_read
from gnn_codegen.render.runtime_section import BANNER_START


@dataclass(frozen=True)
class _TopLevel:
    node: cst.CSTNode
    defines: frozenset[str]
    reads: frozenset[str]
    is_import: bool


def _global_reads(code: str) -> frozenset[str]:
    """The module-level names `code` reads: at its top level, and inside its functions and
    classes those that are not theirs, resolved as Python's compiler resolves them (symtable).
    A method's parameters `g` and `x` are its own, and must not keep a top-level `g =
    dgl.rand_graph(...)` or `x = torch.zeros(...)` of the user's script."""
    table = symtable.symtable(code, "<splice>", "exec")
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    frontier = list(table.get_children())
    while frontier:
        scope = frontier.pop()
        names.update(s.get_name() for s in scope.get_symbols() if s.is_global())
        frontier.extend(scope.get_children())
    return frozenset(names)


def _source_reads(code: str) -> frozenset[str]:
    return _global_reads(code)


def _reads(trees: list[ast.stmt]) -> frozenset[str]:
    return _global_reads("\n".join(ast.unparse(tree) for tree in trees))


def _class_reads(tree: ast.stmt, method_name: str) -> frozenset[str]:
    """What the class reads, less the user's method that the generated one replaces."""
    assert isinstance(tree, ast.ClassDef)
    body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name == method_name)]
    kept = ast.ClassDef(name=tree.name, bases=tree.bases, keywords=tree.keywords, body=body or [ast.Pass()],
                        decorator_list=tree.decorator_list)
    return _reads([ast.fix_missing_locations(kept)]) | {tree.name}


def _binds(trees: list[ast.stmt]) -> frozenset[str]:
    """The module-level names a compound statement binds (`try: import x except: x = None`,
    a table filled in a loop), and those whose value it changes (`os.environ[...] = ...`,
    `ACTS[name] = ...`): it is kept where one of them is needed."""
    table = symtable.symtable("\n".join(ast.unparse(tree) for tree in trees), "<splice>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    changed = [t for tree in trees for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign))
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
               if isinstance(t, (ast.Attribute, ast.Subscript))]
    return frozenset(bound) | _assigned_roots(changed)


def _assigned_roots(targets: list[ast.expr]) -> frozenset[str]:
    roots = set()
    for target in targets:
        while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
            target = target.value
        if isinstance(target, ast.Name):
            roots.add(target.id)
    return frozenset(roots)


def _statement_trees(module: cst.Module, source: str) -> dict[int, list[ast.stmt]]:
    """Each top-level libcst statement's ast statements (a line `a = 1; b = 2` holds two), by
    the libcst node's id: both parsers read the same source in the same order."""
    trees = iter(ast.parse(source).body)
    matched: dict[int, list[ast.stmt]] = {}
    for node in module.body:
        count = len(node.body) if isinstance(node, cst.SimpleStatementLine) else 1
        matched[id(node)] = [next(trees) for _ in range(count)]
    return matched


def _import_binding(alias: cst.ImportAlias, from_import: bool) -> str:
    if alias.asname is not None:
        return cst.ensure_type(alias.asname.name, cst.Name).value
    dotted = cst.Module([]).code_for_node(alias.name)
    return dotted if from_import else dotted.split(".")[0]


def _assigned_names(trees: list[ast.stmt]) -> frozenset[str]:
    """The names an assignment binds (`a, b = ...`), or changes the value of (`os.environ[k] =`)."""
    targets: list[ast.expr] = []
    for tree in trees:
        if isinstance(tree, ast.Assign):
            targets += tree.targets
        elif isinstance(tree, (ast.AnnAssign, ast.AugAssign)):
            targets.append(tree.target)
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return frozenset(names) | _assigned_roots([t for t in targets if isinstance(t, (ast.Attribute, ast.Subscript))])


def _is_main_guard(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.If):
        return False
    test = cst.Module([]).code_for_node(node.test).replace("'", '"').replace(" ", "")
    return test in ('__name__=="__main__"', '"__main__"==__name__')


def _classify(node: cst.CSTNode, trees: list[ast.stmt]) -> _TopLevel | None:
    if isinstance(node, (cst.ClassDef, cst.FunctionDef)):
        return _TopLevel(node, frozenset({node.name.value}), _reads(trees), False)
    if isinstance(node, cst.SimpleStatementLine):
        first = node.body[0]
        if isinstance(first, (cst.Import, cst.ImportFrom)):
            from_import = isinstance(first, cst.ImportFrom)
            if from_import and isinstance(first.names, cst.ImportStar):
                return _TopLevel(node, frozenset({"*"}), frozenset(), True)
            names = frozenset(_import_binding(a, from_import) for a in first.names)  # type: ignore[union-attr]
            return _TopLevel(node, names, frozenset(), True)
        defines = _assigned_names(trees)
        return _TopLevel(node, defines, _reads(trees) - defines, False) if defines else None
    if _is_main_guard(node):
        return None
    if isinstance(node, (cst.If, cst.Try, cst.With, cst.For, cst.While)):
        # e.g. `try: import x except ImportError: x = None`, a table filled in a loop: keep when
        # it binds or changes a needed name
        defines = _binds(trees)
        return _TopLevel(node, defines, _reads(trees), False) if defines else None
    return None


def _binds_module(item: _TopLevel, module: str) -> bool:
    """Whether the statement binds `module`'s name to that module itself (`import os`,
    `import os.path`), the only binding of it the generated code may share with the user's."""
    if not item.is_import or not isinstance(item.node, cst.SimpleStatementLine) or len(item.node.body) != 1:
        return False  # `import os; os = 0.5` binds it twice
    statement = item.node.body[0]
    if not isinstance(statement, cst.Import):
        return False  # `from x import os` (the package's own os, say)
    for alias in statement.names:
        dotted = cst.Module([]).code_for_node(alias.name)
        if _import_binding(alias, False) == module and alias.asname is not None and dotted != module:
            return False  # `import pandas as numpy`, `import numpy.linalg as numpy`
    return True


class _Rename(cst.CSTTransformer):
    """Renames variables (never attributes, keywords or imported modules' names)."""

    def __init__(self, names: dict[str, str]):
        super().__init__()
        self.names = names

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.names.get(updated.value, updated.value))

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_ImportAlias(self, original: cst.ImportAlias, updated: cst.ImportAlias) -> cst.ImportAlias:
        return original


def _renamed(code: str, names: dict[str, str]) -> str:
    if not names or not code.strip():
        return code
    return cst.parse_module(code).visit(_Rename(names)).code


def _trim_import(node: cst.SimpleStatementLine, needed: set[str]) -> cst.SimpleStatementLine:
    statement = node.body[0]
    if isinstance(statement, cst.ImportFrom) and statement.module and cst.Module([]).code_for_node(
        statement.module
    ) == "__future__":
        return node
    if not isinstance(statement, (cst.Import, cst.ImportFrom)) or isinstance(statement.names, cst.ImportStar):
        return node
    from_import = isinstance(statement, cst.ImportFrom)
    kept = [a for a in statement.names if _import_binding(a, from_import) in needed]
    kept = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in kept]
    return node.with_changes(body=[statement.with_changes(names=kept)])


def _is_future(item: _TopLevel) -> bool:
    return item.is_import and "__future__" in cst.Module([]).code_for_node(item.node)


def _with_method(cls: cst.ClassDef, method_def: cst.FunctionDef) -> cst.ClassDef:
    """The class with the generated method last, and without its own methods of that name:
    method_name.py has decided that the generated one replaces them, and two definitions would
    silently keep only the last."""
    block = cst.ensure_type(cls.body, cst.IndentedBlock)
    name = method_def.name.value
    body = [s for s in block.body if not (isinstance(s, cst.FunctionDef) and s.name.value == name)]
    return cls.with_changes(body=block.with_changes(body=[*body, method_def]))


def _moved_import(node: cst.CSTNode) -> cst.CSTNode:
    # An import that stood below other code keeps its comments but not the blank lines that
    # separated it from that code.
    line = cst.ensure_type(node, cst.SimpleStatementLine)
    return line.with_changes(leading_lines=[ll for ll in line.leading_lines if ll.comment is not None])


def splice(source: str, class_name: str, method: str, helpers: str, header: str,
           method_name: str = "inference", imports: tuple[str, ...] = (), after_imports: str = "") -> str:
    module = cst.parse_module(source)
    trees = _statement_trees(module, source)
    items = [c for c in (_classify(s, trees[id(s)]) for s in module.body) if c is not None]
    target = [i for i in items if isinstance(i.node, cst.ClassDef) and class_name in i.defines]
    if not target:
        raise internal(f"class {class_name} not found at the top level of its file")
    method_def = cst.ensure_type(cst.parse_module(method).body[0], cst.FunctionDef)
    method_def = method_def.with_changes(name=cst.Name(method_name))
    # what the class reads without the user's method it replaces (its imports need not come along)
    cls = _with_method(cst.ensure_type(target[-1].node, cst.ClassDef), method_def)
    # The runtime's section (below its banner) imports the modules it reads itself: only what
    # the method and the convolution helpers read is imported at the top, among the user's.
    model_part, runtime_part = _runtime_section(helpers)
    section_imports = frozenset(modules_read(runtime_part))
    generated_reads = (_source_reads(method) | _source_reads(model_part)
                       | (_source_reads(runtime_part) - section_imports))
    # The modules the generated code imports (RUNTIME_MODULES) are the user's only where the
    # user's file binds their names to nothing but those modules: another binding of `os`
    # (`os = 0.5`, `from x import *`) is not pulled in for the generated code, and where the
    # class keeps one, the generated code imports the module under a name of its own (the
    # runtime's section too, so that its import leaves the user's binding alone).
    runtime = [m for m in RUNTIME_MODULES if m in generated_reads or m in section_imports]
    shared = {m for m in runtime
              if all(_binds_module(i, m) for i in items if m in i.defines or "*" in i.defines)}
    needed = set(_class_reads(trees[id(target[-1].node)][0], method_name))
    needed |= generated_reads - (set(runtime) - shared)
    keep: set[int] = {id(target[-1].node)}
    changed = True
    while changed:  # the closure of what the class and the generated code read
        changed = False
        for item in items:
            if id(item.node) not in keep and (item.defines & needed or _is_future(item)):
                keep.add(id(item.node))
                needed |= item.reads
                changed = True
    kept = [i for i in items if id(i.node) in keep]
    bound = set().union(*(i.defines for i in kept))
    captured = [m for m in runtime
                if any((m in i.defines or "*" in i.defines) and not _binds_module(i, m) for i in kept)]
    allocator = NameAllocator(_source_reads(source) | generated_reads)
    aliases = {m: allocator.take(m) for m in captured}
    if aliases:
        method_def = cst.ensure_type(cst.parse_module(_renamed(method, aliases)).body[0], cst.FunctionDef)
        cls = _with_method(cst.ensure_type(target[-1].node, cst.ClassDef),
                           method_def.with_changes(name=cst.Name(method_name)))
        helpers = _renamed(helpers, aliases)
        for m in section_imports & set(aliases):  # its line, which the renaming leaves as it was
            helpers = re.sub(rf"^import {m}$", f"import {m} as {aliases[m]}", helpers, count=1, flags=re.MULTILINE)
    missing = [f"import {m} as {aliases[m]}" if m in aliases else f"import {m}"
               for m in runtime if m in generated_reads and (m in aliases or m not in bound)]

    # The user's statements keep their order (an `os.environ[...] = ...` before an import may
    # matter), but the generated method's decorator (`@torch.no_grad()`) runs when the class is
    # defined: an import of torch the user wrote below the class moves to the top (or one is
    # added), before the class.
    early = {"torch"} & generated_reads - set(aliases)
    futures: list[cst.CSTNode] = []
    hoisted: list[cst.CSTNode] = []
    body: list[cst.CSTNode] = []
    imported: set[str] = set()
    seen_class, insert_at = False, 0  # insert_at: after the last import above the class
    for item in items:
        if id(item.node) not in keep:
            continue
        node = item.node
        if item.is_import:
            node = _trim_import(cst.ensure_type(node, cst.SimpleStatementLine), needed)
            if _is_future(item):
                futures.append(node)
                continue
            if seen_class and item.defines & early:
                hoisted.append(_moved_import(node))
                continue
            imported |= item.defines
            insert_at = insert_at if seen_class else len(body) + 1
        if node is target[-1].node:
            node, seen_class = cls, True
            early -= imported
        body.append(node)
    # where isort would put them among the user's imports above the class (import_order.py)
    head = body[:insert_at]
    for line in (*missing, *imports):
        head = insert_sorted(head, line)
    rest = body[insert_at:]
    if (missing or imports) and rest and not hoisted and not getattr(rest[0], "leading_lines", True):
        rest[0] = rest[0].with_changes(leading_lines=[cst.EmptyLine()])  # a blank line after the imports
    docstring = _docstring(module)
    body = futures + head + hoisted + _statements(after_imports) + rest
    if docstring and body and not getattr(body[0], "leading_lines", [None]):
        body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine()])  # a blank line after the docstring
    body = docstring + body
    if body and all(line.comment is None for line in getattr(body[0], "leading_lines", [None])):
        body[0] = body[0].with_changes(leading_lines=[])  # one blank line after the header, as ever
    # the runtime helpers after everything else, as written (they are ours): a reader meets the
    # model and its inference first; the method calls them only when it runs
    code = header + "\n" + cst.Module(body=body).code
    if helpers.strip():
        code = code.rstrip("\n") + "\n\n\n" + helpers.strip("\n") + "\n"
    ast.parse(code)  # a bug of ours must not produce a module that does not parse
    return code


def _runtime_section(helpers: str) -> tuple[str, str]:
    """(the helpers above the runtime's banner, the banner and the runtime below it); all of
    `helpers` is above where they hold no runtime (--runtime-module: it is imported)."""
    at = helpers.find(BANNER_START)
    return (helpers, "") if at < 0 else (helpers[:at], helpers[at:])


def _docstring(module: cst.Module) -> list[cst.CSTNode]:
    """The user's module docstring, kept as the generated module's (below the header's comments
    it is still the module's first statement): it says what the model is, which a reader of the
    generated module wants as much as one of the user's file."""
    first = module.body[0] if module.body else None
    if not isinstance(first, cst.SimpleStatementLine) or len(first.body) != 1:
        return []
    statement = first.body[0]
    if isinstance(statement, cst.Expr) and isinstance(statement.value, (cst.SimpleString, cst.ConcatenatedString)):
        return [first.with_changes(body=[statement.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])]
    return []


def _statements(code: str) -> list[cst.CSTNode]:
    """`code`'s statements, a blank line and its opening comment before the first (the
    runtime module's check, after the imports: runtime_module.py)."""
    if not code.strip():
        return []
    module = cst.parse_module(code)
    first = module.body[0]
    return [first.with_changes(leading_lines=[cst.EmptyLine(), *module.header, *first.leading_lines]),
            *module.body[1:]]


def ends_with_helpers(code: str, helpers: str) -> bool:
    """Whether the spliced module ends with the helpers as rendered: not where splice renamed
    the modules they import (the user's file binds those names), and black formats them too."""
    return code.rstrip("\n").endswith(helpers.strip("\n"))

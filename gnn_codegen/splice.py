"""Stage 7, splice: the user's file and the rendered code into the output module. libcst keeps
the user's class as written (plus the generated method) and the top-level statements it needs —
imports, helper classes and functions, constants — and drops the rest (training loops, scripts,
the `__main__` block)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from gnn_codegen.errors import internal

# Names the generated code reads that a plain import provides when the user's file lacks it.
# The runtime keeps results out of core in numpy memory maps, and tells the kernel which of
# their pages it reads (ctypes: madvise), templates/batches.py.j2; it times batches to choose
# their threads (time), templates/threads.py.j2.
_STANDARD_LIBRARY = frozenset({"ctypes", "os", "tempfile", "time", "weakref"})
_IMPORTS = {
    "ctypes": "import ctypes", "os": "import os", "tempfile": "import tempfile", "time": "import time",
    "weakref": "import weakref",
    "numpy": "import numpy", "torch": "import torch", "dgl": "import dgl",
}


@dataclass(frozen=True)
class _TopLevel:
    node: cst.CSTNode
    defines: frozenset[str]
    reads: frozenset[str]
    is_import: bool


def _names(nodes: list[ast.AST]) -> frozenset[str]:
    """Every identifier the statements spell: names, attributes, parameters, keywords, defined
    and imported names (a superset of what they read, which only keeps a statement or two too
    many). Python's own parser: libcst's visitors took most of the command's time here."""
    names: set[str] = set()
    for tree in nodes:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.alias):
                names.update(node.name.split("."))
                if node.asname:
                    names.add(node.asname)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
    return frozenset(names)


def _source_reads(code: str) -> frozenset[str]:
    return _names([ast.parse(code)])


def _class_reads(tree: ast.stmt, method_name: str) -> frozenset[str]:
    """What the class reads, less the user's method that the generated one replaces."""
    assert isinstance(tree, ast.ClassDef)
    body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name == method_name)]
    return _names([*body, *tree.decorator_list, *tree.bases, *tree.keywords]) | {tree.name}


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
    targets: list[ast.AST] = []
    for tree in trees:
        if isinstance(tree, ast.Assign):
            targets += tree.targets
        elif isinstance(tree, (ast.AnnAssign, ast.AugAssign)):
            targets.append(tree.target)
    return _names(targets)


def _is_main_guard(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.If):
        return False
    test = cst.Module([]).code_for_node(node.test).replace("'", '"').replace(" ", "")
    return test in ('__name__=="__main__"', '"__main__"==__name__')


def _classify(node: cst.CSTNode, trees: list[ast.stmt]) -> _TopLevel | None:
    if isinstance(node, (cst.ClassDef, cst.FunctionDef)):
        return _TopLevel(node, frozenset({node.name.value}), _names(trees), False)
    if isinstance(node, cst.SimpleStatementLine):
        first = node.body[0]
        if isinstance(first, (cst.Import, cst.ImportFrom)):
            from_import = isinstance(first, cst.ImportFrom)
            if from_import and isinstance(first.names, cst.ImportStar):
                return _TopLevel(node, frozenset({"*"}), frozenset(), True)
            names = frozenset(_import_binding(a, from_import) for a in first.names)  # type: ignore[union-attr]
            return _TopLevel(node, names, frozenset(), True)
        defines = _assigned_names(trees)
        return _TopLevel(node, defines, _names(trees) - defines, False) if defines else None
    if _is_main_guard(node):
        return None
    if isinstance(node, (cst.If, cst.Try, cst.With)):
        # e.g. `try: import x except ImportError: x = None`: keep when it binds a needed name.
        names = _names(trees)
        return _TopLevel(node, names, names, False)
    return None


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
           method_name: str = "inference") -> str:
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
    generated_reads = _source_reads(method) | _source_reads(helpers)
    needed = set(_class_reads(trees[id(target[-1].node)][0], method_name)) | generated_reads
    keep: set[int] = {id(target[-1].node)}
    changed = True
    while changed:  # the closure of what the class and the generated code read
        changed = False
        for item in items:
            if id(item.node) not in keep and (item.defines & needed or _is_future(item)):
                keep.add(id(item.node))
                needed |= item.reads
                changed = True
    bound = set().union(*(i.defines for i in items if id(i.node) in keep))
    missing = [_IMPORTS[n] for n in _IMPORTS if n in generated_reads and n not in bound]

    # The user's statements keep their order (an `os.environ[...] = ...` before an import may
    # matter), but the generated method's decorator (`@torch.no_grad()`) runs when the class is
    # defined: an import of torch the user wrote below the class moves to the top (or one is
    # added), before the class.
    early = {"torch"} & generated_reads
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
    # the standard library's first, in a group of their own (as isort would place them), the
    # others after the user's imports
    standard = [cst.parse_statement(line) for line in missing if line.split()[1] in _STANDARD_LIBRARY]
    extra = [cst.parse_statement(line) for line in missing if line.split()[1] not in _STANDARD_LIBRARY]
    if standard and body:
        first = body[0]
        spaced = any(line.comment is None for line in getattr(first, "leading_lines", ()))
        if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and not spaced:
            body[0] = first.with_changes(leading_lines=[cst.EmptyLine(), *first.leading_lines])
    body = futures + standard + body[:insert_at] + hoisted + extra + body[insert_at:]
    # the runtime helpers after everything else, as written (they are ours): a reader meets the
    # model and its inference first; the method calls them only when it runs
    code = header + "\n" + cst.Module(body=body).code
    if helpers.strip():
        code = code.rstrip("\n") + "\n\n\n" + helpers.strip("\n") + "\n"
    ast.parse(code)  # a bug of ours must not produce a module that does not parse
    return code

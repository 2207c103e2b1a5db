"""Render, which binding each name of a piece of generated code reads: the proof that code whose
names were changed (a loop's rounds written once, round_loops.py) reads what it read before.
Each read of a name is resolved to the binding it reads at that point (the n-th binding made
while the code runs, in the order Python evaluates it) or to a name the code reads from outside;
two pieces of code alike but for their names read alike where their resolutions agree, the
names read from outside renamed. A function's locals are its parameters and every name it
binds, as Python decides them before it runs; a name a function reads from around it is
resolved where the function is made (the method's layer functions run as soon as they are
made, by the runtime's map)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# a read: ("bound", n) the n-th binding, ("free", name) a name from outside, ("unbound", name) a
# local read before it is bound
Read = tuple[str, object]


class _Unsupported(Exception):
    """Code whose scopes this module does not model (global, nonlocal, classes)."""


@dataclass
class _Scope:
    locals: frozenset[str] | None  # None: the code's own level, whose names bind in order
    current: dict[str, int] = field(default_factory=dict)


@dataclass
class Resolution:
    reads: list[Read]  # in the order the code runs
    free: list[str]  # the names read from outside, in order of first read
    bound: list[str]  # the names the code binds at its own level, in order
    # per function the code makes at its own level: the names it reads from around it
    functions_free: dict[str, list[str]]


class _Resolver(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scopes = [_Scope(None)]
        self.reads: list[Read] = []
        self.free: list[str] = []
        self.bound: list[str] = []
        self.bindings = 0
        self.functions_free: dict[str, list[str]] = {}
        self._function_free: list[str] | None = None

    def _bind(self, name: str) -> None:
        self.bindings += 1
        self.scopes[-1].current[name] = self.bindings
        if len(self.scopes) == 1 and name not in self.bound:
            self.bound.append(name)

    def _read(self, name: str) -> None:
        for depth in range(len(self.scopes) - 1, -1, -1):
            scope = self.scopes[depth]
            if scope.locals is not None and name in scope.locals:
                found = scope.current.get(name)
                self.reads.append(("bound", found) if found is not None else ("unbound", name))
                return
            if scope.locals is None and name in scope.current:
                self.reads.append(("bound", scope.current[name]))
                if depth == 0 and self._function_free is not None and name not in self._function_free:
                    self._function_free.append(name)
                return
        self.reads.append(("free", name))
        if name not in self.free:
            self.free.append(name)
        if self._function_free is not None and name not in self._function_free:
            self._function_free.append(name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._read(node.id)
        elif isinstance(node.ctx, ast.Store):
            self._bind(node.id)
        else:  # del: reads the binding, then unbinds it
            self._read(node.id)
            self.scopes[-1].current.pop(node.id, None)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self._read(node.target.id)
        self.visit(node.target)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)

    def _scoped(self, params: list[str], body: list[ast.AST], own: set[str]) -> None:
        self.scopes.append(_Scope(frozenset(params) | own))
        for param in params:
            self._bind(param)
        for statement in body:
            self.visit(statement)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for expression in (*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)):
            self.visit(expression)
        outer = self._function_free
        top = len(self.scopes) == 1
        if top:
            self._function_free = []
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
        own = {n.id for statement in node.body for n in ast.walk(statement)
               if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        own |= {n.name for statement in node.body for n in ast.walk(statement) if isinstance(n, ast.FunctionDef)}
        self._scoped(params, node.body, own)
        if top:
            self.functions_free[node.name] = self._function_free or []
        self._function_free = outer if not top else None
        self._bind(node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expression in (*node.args.defaults, *(d for d in node.args.kw_defaults if d)):
            self.visit(expression)
        self._scoped([a.arg for a in node.args.args], [node.body], set())

    def _comprehension(self, node: ast.AST, results: list[ast.AST]) -> None:
        generators = node.generators  # type: ignore[attr-defined]
        self.visit(generators[0].iter)
        own = {n.id for g in generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.scopes.append(_Scope(frozenset(own)))
        for k, generator in enumerate(generators):
            if k:
                self.visit(generator.iter)
            self.visit(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        for result in results:
            self.visit(result)
        self.scopes.pop()

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_ListComp  # type: ignore[assignment]
    visit_GeneratorExp = visit_ListComp  # type: ignore[assignment]

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])

    def _unsupported(self, node: ast.AST) -> None:
        raise _Unsupported(type(node).__name__)

    visit_Global = visit_Nonlocal = visit_ClassDef = visit_AsyncFunctionDef = _unsupported  # type: ignore[assignment]
    visit_NamedExpr = _unsupported  # type: ignore[assignment]


def resolution(code: str) -> Resolution | None:
    """The code's reads, resolved; None where it does not parse or uses a scope this module
    does not model."""
    try:
        module = ast.parse(code)
    except SyntaxError:
        return None
    resolver = _Resolver()
    try:
        for statement in module.body:
            resolver.visit(statement)
    except _Unsupported:
        return None
    return Resolution(resolver.reads, resolver.free, resolver.bound, resolver.functions_free)


def reads_alike(before: str, after: str, renamed: dict[str, str]) -> bool:
    """Whether `after` (before with names renamed) reads every name from the binding `before`
    reads it from, the names it reads from outside renamed as `renamed` says."""
    old, new = resolution(before), resolution(after)
    if old is None or new is None or len(old.reads) != len(new.reads):
        return False
    for (kind, what), (new_kind, new_what) in zip(old.reads, new.reads):
        if kind != new_kind:
            return False
        if kind == "bound" and what != new_what:
            return False
        if kind != "bound" and renamed.get(str(what), str(what)) != new_what:
            return False
    return True

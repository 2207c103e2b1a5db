"""Render, the method's names against the module's: which module-level names the generated method
reads (reserved from the name allocator), and a safety net that no name it assigns captures one."""

from __future__ import annotations

import ast

from gnn_codegen.errors import internal
from gnn_codegen.ir import Program


def globals_read(program: Program) -> set[str]:
    """The module-level names the generated method reads: torch, dgl, self, and the first name
    of every function the user's forward calls (F in F.relu, a helper of the user's file)."""
    names = {"torch", "dgl", "self"}
    for op in program.ops:
        if op.mp is not None and op.mp.inline:
            names.add(op.mp.functions.split(".")[0])
        if op.kind == "function" and not op.helper and op.target != "getattr" and not op.target.startswith("operator."):
            names.add((op.held_as or op.target).split(".")[0])
    return names


def check_no_capture(method: str, reserved: set[str]) -> None:
    """A safety net for the name allocation: no name the method assigns is a module-level name
    it reads (a local would capture it)."""
    tree = ast.parse(method)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    assigned |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in (*n.args, *n.kwonlyargs)}
    captured = assigned & (reserved - {"self"})
    if captured:
        raise internal(f"generated names {sorted(captured)} would capture module-level names")

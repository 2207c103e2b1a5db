"""The modules the generated code imports (the runtime's out-of-core storage, its madvise, the
clock it times batches by, torch and dgl), read by the splice stage (splice.py) and by the
in-process runtime (templating.py); and the runtime section's own import lines, which open the
section below its banner (runtime_section.py): they are the runtime's, not the model's, and a
reviewer reading the model's imports at the top of the module should not meet them there."""

from __future__ import annotations

import symtable
import sys

# Each module's name, as the generated code spells it where the user's file does not bind
# that name to something else. The standard library's first: isort's order.
STANDARD_LIBRARY = ("ctypes", "errno", "hashlib", "json", "os", "shutil", "tempfile", "threading", "time", "weakref")
RUNTIME_MODULES = (*STANDARD_LIBRARY, "numpy", "torch", "dgl")


def modules_read(source: str) -> list[str]:
    """The RUNTIME_MODULES whose names `source` reads as globals (anywhere in it: at its top
    level or inside its functions and classes, as Python's compiler resolves them), in isort's
    order: the standard library's, then the others, each by name."""
    table = symtable.symtable(source, "<runtime>", "exec")
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    frontier = list(table.get_children())
    while frontier:
        scope = frontier.pop()
        names.update(s.get_name() for s in scope.get_symbols() if s.is_global())
        frontier.extend(scope.get_children())
    read = [m for m in RUNTIME_MODULES if m in names]
    return sorted(m for m in read if m in sys.stdlib_module_names) + sorted(
        m for m in read if m not in sys.stdlib_module_names)


def import_block(source: str) -> str:
    """The import lines of the modules `source` reads (modules_read), in isort's sections (a
    blank line between the standard library's and the others'), without a trailing newline."""
    read = modules_read(source)
    standard = [f"import {m}" for m in read if m in sys.stdlib_module_names]
    others = [f"import {m}" for m in read if m not in sys.stdlib_module_names]
    return "\n\n".join("\n".join(group) for group in (standard, others) if group)

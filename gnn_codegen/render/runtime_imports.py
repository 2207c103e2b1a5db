"""The modules the generated code imports (the runtime's out-of-core storage, its madvise, the
clock it times batches by, torch and dgl), read by the splice stage (splice.py) and by the
in-process runtime (templating.py)."""

from __future__ import annotations

# Each module's name, as the generated code spells it where the user's file does not bind
# that name to something else. The standard library's first: isort's order.
STANDARD_LIBRARY = ("ctypes", "errno", "hashlib", "json", "os", "shutil", "tempfile", "threading", "time", "weakref")
RUNTIME_MODULES = (*STANDARD_LIBRARY, "numpy", "torch", "dgl")

"""The Jinja environment for templates/: found inside the installed package (the wheel ships
them as gnn_codegen/templates) or, in a source checkout, at the repository's top level."""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from gnn_codegen.errors import internal
from gnn_codegen.render.runtime_imports import RUNTIME_MODULES


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "inference.py.j2").is_file():
            return candidate
    raise internal(f"templates not found next to {here}")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_template(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def exec_template(name: str, module: str, **context: Any) -> dict[str, Any]:
    """The namespace a rendered Python template defines, with the modules it imports in it, its
    functions spelled as `module`'s (torch.fx names a function it calls by its module)."""
    namespace: dict[str, Any] = {name: importlib.import_module(name) for name in RUNTIME_MODULES}
    namespace["__name__"] = module
    exec(compile(render_template(name, **context), f"<gnn-codegen {name}>", "exec"), namespace)
    return namespace

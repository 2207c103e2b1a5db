"""The generated method's name (--method-name) against what the user's class already has: a
user method of the default name is replaced, with a warning (splice drops it); any other clash is
refused, because two definitions of one name in a class silently keep only the last."""

from __future__ import annotations

import ast
import keyword

import torch

from gnn_codegen.errors import OptionsError
from gnn_codegen.load.model import LoadedModel

DEFAULT_METHOD_NAME = "inference"
_SUGGESTIONS = ("layerwise_inference", "generated_inference", "full_neighbour_inference")


def check_method_name(loaded: LoadedModel, name: str) -> tuple[str, ...]:
    """Warnings about the name; raises OptionsError where the generated method cannot take it."""
    cls, model = type(loaded.model), loaded.model
    explicit = name != DEFAULT_METHOD_NAME
    other = next((s for s in _SUGGESTIONS if not hasattr(cls, s)), _SUGGESTIONS[0])
    option = f"--method-name {name}: " if explicit else ""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise OptionsError(
            f"--method-name {name!r} is not a Python identifier, so it cannot name the generated "
            f"method; give a name such as --method-name {other}."
        )
    if hasattr(torch.nn.Module, name):
        raise OptionsError(
            f"--method-name {name}: every torch.nn.Module has `{name}`, which {cls.__name__} needs as it "
            f"is; a generated method of that name would replace it. Choose another name, e.g. "
            f"--method-name {other}."
        )
    if any(name in d for d in (vars(model), model._modules, model._parameters, model._buffers)):
        raise OptionsError(
            f"{option}{cls.__name__} instances have an attribute `{name}` (assigned to `self.{name}`), "
            f"which a method of that name would hide or be hidden by. Name the generated method with "
            f"--method-name NAME, e.g. --method-name {other}."
        )
    member = _class_member(loaded.source, cls.__name__, name)
    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
        defined = f"{loaded.path}:{member.lineno}: {cls.__name__} already defines {name}({ast.unparse(member.args)})"
        if explicit:
            raise OptionsError(
                f"{option}{defined}, which the generated method would replace. Choose a name the "
                f"class does not use, e.g. --method-name {other}."
            )
        caller = _reader(loaded.source, cls.__name__, name)
        if caller is not None:
            raise OptionsError(
                f"{defined}, and {loaded.path}:{caller.lineno} calls it (`self.{name}`), so the generated "
                f"method cannot replace it. Name the generated method with --method-name NAME, e.g. "
                f"--method-name {other}."
            )
        return (
            f"{defined}; the generated module replaces it with the generated one (keep yours with "
            "--method-name NAME, which names the generated method NAME instead).",
        )
    if member is not None:
        raise OptionsError(
            f"{option}{loaded.path}:{member.lineno}: {cls.__name__} assigns `{name}` in its class body, "
            f"and the generated method would replace it. Name the generated method with --method-name "
            f"NAME, e.g. --method-name {other}."
        )
    owner = next((c for c in cls.__mro__[1:] if name in vars(c)), None)
    if owner is not None:
        if explicit:
            raise OptionsError(
                f"{option}{cls.__name__} inherits {name} from {owner.__name__}, and the generated "
                f"method would override it. Choose a name the class does not use, e.g. --method-name "
                f"{other}."
            )
        return (
            f"{cls.__name__} inherits {name} from {owner.__name__}; the generated {name} overrides it "
            "(keep it with --method-name NAME, which names the generated method NAME instead).",
        )
    return ()


def _class_body(source: str, class_name: str) -> list[ast.stmt]:
    """The class as splice finds it: the last top-level definition of that name."""
    classes = [s for s in ast.parse(source).body if isinstance(s, ast.ClassDef) and s.name == class_name]
    return classes[-1].body if classes else []


def _reader(source: str, class_name: str, name: str) -> ast.Attribute | None:
    """The first `self.<name>` in the class outside the methods called `name`: code that the
    user's method serves and the generated one would not."""
    for statement in _class_body(source, class_name):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            continue
        for node in ast.walk(statement):
            if (isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name)
                    and node.value.id == "self"):
                return node
    return None


def _class_member(source: str, class_name: str, name: str) -> ast.stmt | None:
    """The last statement of the class body that binds `name`: a def, an assignment or a nested
    class."""
    found = None
    for statement in _class_body(source, class_name):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = {statement.name}
        elif isinstance(statement, ast.Assign):
            bound = {n.id for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and isinstance(statement.target, ast.Name):
            bound = {statement.target.id}
        else:
            bound = set()
        if name in bound:
            found = statement
    return found

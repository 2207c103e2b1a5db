"""Stage 1, load: `FILE:NAME` and --init JSON into the model instance and its file's source (and
a warning when importing the file runs a script)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from gnn_codegen.errors import ExitCalledError, InitError, TargetError
from gnn_codegen.load.import_guard import ExitCalled, exit_call, exit_raises, notice_when_slow
from gnn_codegen.load.json_options import json_object


@dataclass(frozen=True)
class LoadedModel:
    target: str  # FILE:NAME exactly as the user wrote it (goes into the generated header)
    path: Path
    class_name: str  # the nn.Module subclass the generated module re-defines
    source: str
    module: ModuleType
    model: torch.nn.Module
    init: tuple[tuple[str, Any], ...]
    warnings: tuple[str, ...] = ()  # e.g. the file runs work when imported (import_time_work)
    # constructor parameters that take a graph (`GCN(g, in_feats, ...)`, DGL's model zoo) and
    # were given a stand-in graph, which nothing but __init__ sees (kept_graph.py)
    stand_in_graphs: tuple[str, ...] = ()


def parse_target(target: str) -> tuple[Path, str]:
    file_part, sep, name = target.rpartition(":")
    if not sep or not file_part or not name.isidentifier():
        raise TargetError(
            f"'{target}' is not of the form FILE:NAME. Name the model file and the class (or "
            "factory function) in it, for example `gnn-codegen models/sage.py:SAGE -o out.py`."
        )
    path = Path(file_part)
    if not path.is_file():
        raise TargetError(f"model file '{file_part}' (from '{target}') does not exist or is not a file.")
    if path.suffix != ".py":
        raise TargetError(f"model file '{file_part}' is not a Python (.py) file.")
    return path, name


def parse_init(init_json: str | None) -> dict[str, Any]:
    return json_object("--init", init_json, "--init '{\"in_size\": 128, \"hid_size\": 64}'",
                       "the constructor's keyword arguments", InitError)


def _import_file(path: Path) -> ModuleType:
    # The user's file may import siblings (`from layers import MyConv`), so its folder goes first
    # on sys.path while it is imported, as it would when the user runs it as a script.
    module_name = f"_gnn_codegen_user_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import '{path}' as a Python module.")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        with exit_raises(), notice_when_slow(path):
            spec.loader.exec_module(module)
    except (SystemExit, ExitCalled) as exc:
        raise ExitCalledError(
            f"importing '{path}' called {exit_call(exc)} ({_user_frame(exc, path)}), which would end "
            "gnn-codegen before it writes anything. Put the training script under "
            "`if __name__ == \"__main__\":` so that importing the file only defines the model."
        ) from None
    except Exception as exc:
        raise TargetError(
            f"importing '{path}' raised {type(exc).__name__}: {exc} ({_user_frame(exc, path)}). "
            "The file must import cleanly; keep training code under `if __name__ == \"__main__\":`."
        ) from None
    finally:
        sys.path.remove(folder)
    return module


def _user_frame(exc: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path.resolve()]
    if not frames:
        return f"in {path}"
    return f"{path}:{frames[-1].lineno} (`{(frames[-1].line or '').strip()}`)"


def load(target: str, init_json: str | None = None, metagraph: str | None = None) -> LoadedModel:
    """metagraph: --metagraph, the relations of the heterograph a constructor that takes a
    graph is built with (DGL's rgcn-hetero example reads its relation names and node counts)."""
    path, name = parse_target(target)
    init = parse_init(init_json)
    source = path.read_text()
    work = import_time_work(source, path)  # before the import: the warning is about what it runs
    module = _import_file(path)
    obj = getattr(module, name, None)
    if obj is None:
        found = sorted(
            n for n, v in vars(module).items()
            if inspect.isclass(v) and issubclass(v, torch.nn.Module) and v.__module__ == module.__name__
        )
        raise TargetError(
            f"'{path}' defines no '{name}'. Model classes defined there: {', '.join(found) or 'none'}."
        )
    if not callable(obj):
        raise TargetError(f"'{name}' in '{path}' is a {type(obj).__name__}, not a class or a factory function.")
    stand_ins = _graph_parameters(obj, init)
    init.update({name: stand_in_graph(metagraph) for name in stand_ins})
    try:
        # seeded, so that the same command builds the same weights and says the same numbers
        with torch.random.fork_rng(devices=[]), exit_raises():
            torch.manual_seed(0)
            model = obj(**init)
    except TypeError as exc:
        raise InitError(
            f"building {name}(**init) from '{path}' failed: {exc}. Pass the constructor's keyword "
            f"arguments with --init, e.g. --init '{{\"in_size\": 128}}'; signature: {name}{_signature(obj)}."
        ) from None
    except (SystemExit, ExitCalled) as exc:
        raise ExitCalledError(f"building {name} from '{path}' called {exit_call(exc)} ({_user_frame(exc, path)}), which "
                        "would end gnn-codegen before it writes anything.") from None
    except Exception as exc:
        raise InitError(f"building {name} from '{path}' raised {type(exc).__name__}: {exc} ({_user_frame(exc, path)}).") from None
    if not isinstance(model, torch.nn.Module):
        raise TargetError(
            f"'{name}' in '{path}' returned a {type(model).__name__}, not a torch.nn.Module. NAME must "
            "be an nn.Module class or a function that returns one."
        )
    _check_weights_have_values(model, name, path)
    cls = type(model)
    if cls.__module__ != module.__name__:
        raise TargetError(
            f"{name}() returned a {cls.__qualname__} defined in {cls.__module__}, not in '{path}'. "
            "The generated module re-defines the model class, so the class must be written in the file you name."
        )
    return LoadedModel(
        target=target,
        path=path,
        class_name=cls.__name__,
        source=source,
        module=module,
        model=model,
        init=tuple(init.items()),
        warnings=(work,) if work else (),
        stand_in_graphs=stand_ins,
    )


def _check_weights_have_values(model: torch.nn.Module, name: str, path: Path) -> None:
    """A model built on the meta device (`with torch.device("meta"):`, to size it cheaply) has
    weights with shapes but no values: forward cannot run, so nothing can be traced or checked."""
    meta = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if meta:
        more = f" and {len(meta) - 1} more" if len(meta) > 1 else ""
        raise InitError(
            f"{name} from '{path}' has its weights on the meta device ({meta[0]}{more}), where tensors have "
            "a shape but no values, so gnn-codegen cannot run forward to trace and check it. Build the "
            "model with real weights: outside `with torch.device(\"meta\")`, or, in a factory function, "
            "call model.to_empty(device=\"cpu\") and load its weights before returning it."
        )


# What people call a constructor's graph parameter: g, graph, G, hg, g_
_GRAPH_PARAMETER = ("g", "graph", "G", "hg", "g_")


def _graph_parameters(obj: Any, init: dict[str, Any]) -> tuple[str, ...]:
    """The constructor's required parameters that take a graph and that --init cannot give
    (JSON holds no graph): named like one, or annotated DGLGraph."""
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(
        p.name for p in params
        if p.name not in init and p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and (p.name in _GRAPH_PARAMETER or "DGLGraph" in str(p.annotation))
    )


def stand_in_graph(metagraph: str | None = None) -> Any:
    """What a constructor that takes a graph gets: a small graph of self-loops and a ring, or
    with --metagraph a random heterograph of its relations, 64 nodes per type (what the
    constructor sizes by them, embeddings per type, the check's graphs are then sized by). The
    generated inference takes the graph as an argument, and forward is traced and checked with
    graphs of gnn-codegen's own in its place."""
    import dgl

    if metagraph:
        from gnn_codegen.load.hetero_schema import parse_metagraph, random_heterograph

        schema = parse_metagraph(metagraph)
        return random_heterograph(schema, {t: 64 for t in schema.ntypes})
    n = 8
    nodes = torch.arange(n)
    return dgl.graph((torch.cat([nodes, nodes]), torch.cat([nodes, (nodes + 1) % n])), num_nodes=n)


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


# Calls whose name says they do a script's work: building a data set (dgl.data's CoraGraphDataset,
# ogb's DglNodePropPredDataset, ...), reading the command line, loading saved graphs.
_WORK_SUFFIXES = ("Dataset",)
_WORK_NAMES = frozenset({"parse_args", "load_graphs", "download"})


def import_time_work(source: str, path: Path) -> str | None:
    """A warning naming the first top-level statement that does a script's work when the file is
    imported (calls one of the file's functions for its effect, builds a data set, reads the
    command line, loops over calls), or None. Deliberately narrow: configuration such as
    `logger = logging.getLogger(__name__)`, `DEVICE = torch.device(...)`, seeds and
    `os.environ` settings is not work, and a false warning costs more than a missed one."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # importing the file reports it
    functions = frozenset(s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
    statement = first_work(tree.body, functions)
    if statement is None:
        return None
    text = (ast.get_source_segment(source, statement) or "").strip().splitlines()[0]
    text = text if len(text) <= 60 else text[:57] + "..."
    return (
        f"{path}:{statement.lineno} runs `{text}` when the file is imported; gnn-codegen imports the "
        "file to build the model, so that work runs too: put scripts under `if __name__ == \"__main__\":`."
    )


def first_work(statements: list[ast.stmt], functions: frozenset[str]) -> ast.stmt | None:
    for statement in statements:
        if isinstance(statement, ast.If):
            if is_main_guard(statement.test):
                continue
            inner = statement.body + statement.orelse
        elif isinstance(statement, ast.Try):
            handlers = [s for h in statement.handlers for s in h.body]
            inner = statement.body + handlers + statement.orelse + statement.finalbody
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            inner = statement.body
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            # a loop that calls something for its effect (`optimizer.step()`, `train(...)`); one
            # that only fills a table of names is not work
            if any(isinstance(n, ast.Expr) and isinstance(n.value, (ast.Call, ast.Await))
                   for s in statement.body for n in walk_executed(s)):
                return statement
            continue
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            callee = statement.value.func
            if (isinstance(callee, ast.Name) and callee.id in functions) or _calls_work(statement.value):
                return statement  # `main()`, `train(model, g)`: run for their effect
            continue
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if statement.value is not None and _calls_work(statement.value):
                return statement
            continue
        else:
            continue
        found = first_work(inner, functions)
        if found is not None:
            return found
    return None


def is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and any(
        isinstance(n, ast.Name) and n.id == "__name__" for n in [test.left, *test.comparators]
    )


def _calls_work(expression: ast.AST) -> bool:
    for node in walk_executed(expression):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _WORK_NAMES or name.endswith(_WORK_SUFFIXES):
                return True
    return False


def walk_executed(node: ast.AST) -> list[ast.AST]:
    """ast.walk without the bodies of functions, classes and lambdas, which do not run here."""
    found: list[ast.AST] = []
    frontier = [node]
    while frontier:
        current = frontier.pop()
        found.append(current)
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        frontier.extend(ast.iter_child_nodes(current))
    return found

"""The `gnn-codegen` command: parse arguments, run the pipeline, write the output atomically,
optionally --check it; user mistakes become one paragraph and a non-zero exit, never a traceback.
stdout carries only what was asked for (the module with -o -, the plan with --explain): whatever
the model's file prints goes to stderr."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import stat
import sys
import tempfile
import textwrap
import traceback
from pathlib import Path
from typing import NoReturn, TextIO

from gnn_codegen.cut.placement import DEFAULT_FANOUT
from gnn_codegen.errors import (
    CheckFailedError, ExitCalledError, GnnCodegenError, InternalError, OptionsError, OutputError, TargetError,
)
from gnn_codegen.explain.plan_text import (
    DEFAULT_NODES,
    explain_data,
    explain_dot,
    explain_json,
    explain_text,
    render_dot,
)
from gnn_codegen.load.import_guard import ExitCalled, exit_call, exit_raises
from gnn_codegen.load.method_name import DEFAULT_METHOD_NAME
from gnn_codegen.generated import GenerateOptions
from gnn_codegen.pipeline import VERSION, generate_all
from gnn_codegen.render.runtime_module import check_name, existing_matches, hashes_line, runtime_module_source


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gnn-codegen",
        description="Write exact, readable layer-wise full-neighbour inference for a DGL model: "
        "the model's class plus an `inference(self, g, x, batch_size, device)` method.",
    )
    parser.add_argument("target", metavar="FILE:NAME", help="model file and the nn.Module class (or factory function) in it")
    parser.add_argument("-o", "--output", help="where to write the generated module ('-' for stdout); optional with --explain")
    parser.add_argument("--init", metavar="JSON", help="constructor keyword arguments as a JSON object")
    parser.add_argument("--check", action="store_true", help="compare the generated inference with the full-graph forward on a random graph")
    parser.add_argument("--check-nodes", type=int, default=1000, metavar="N", help="nodes of the --check graph (default 1000)")
    parser.add_argument("--no-verify", action="store_true",
                        help="write the module without first checking it against forward on a small random graph (not recommended)")
    parser.add_argument("--feat-dims", metavar="NAME=WIDTH,...", help="widths of forward's inputs when the model does not reveal them, e.g. x=602")
    parser.add_argument("--metagraph", metavar="SRC:REL:DST,...",
                        help="a heterogeneous graph's canonical edge types, when the model's HeteroGraphConv modules are keyed by relation names")
    parser.add_argument("--forward-args", metavar="JSON",
                        help="values for forward's parameters that are not the graph or features, as a JSON "
                        "object, e.g. '{\"out_key\": \"paper\"}': inference computes forward for them")
    parser.add_argument("--blocks", type=int, metavar="N",
                        help="forward takes a list of blocks and runs as many layers as it is given: it is traced "
                        "with N blocks, as you call it in training")
    parser.add_argument("--leaf", action="append", default=[], metavar="CLASS", help="treat modules of this class as row-wise leaves (repeatable)")
    parser.add_argument("--mp-module", action="append", default=[], metavar="CLASS", help="treat modules of this class as message passing (repeatable)")
    parser.add_argument("--method-name", default=DEFAULT_METHOD_NAME, metavar="NAME",
                        help=f"name of the generated method (default {DEFAULT_METHOD_NAME}); it replaces a method "
                        "of that name in your class, so give another NAME to keep yours")
    parser.add_argument("--fanout", type=float, default=DEFAULT_FANOUT, metavar="F",
                        help=f"cost model: source rows a layer gathers per stored row, and edges per node (default {DEFAULT_FANOUT:g})")
    parser.add_argument("--simple-cut", action="store_true", help="cut right after each message-passing layer instead of the cheapest placement")
    parser.add_argument("--explain", action="store_true", help="print the plan: stages, stored tensors and their bytes, the cost against the simple rule")
    parser.add_argument("--json", action="store_true", help="with --explain: print the plan as JSON (schema in gnn_codegen/explain/plan_text.py)")
    parser.add_argument("--dot", metavar="FILE", help="with --explain: write the traced graph coloured by stage as Graphviz DOT (and SVG/PNG beside it when `dot` is installed)")
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES, metavar="N", help=f"with --explain: node count for the byte totals (default {DEFAULT_NODES:,})")
    parser.add_argument("--runtime-module", metavar="NAME",
                        help="write the runtime once, as its own module NAME.py beside the output, and import it: "
                        "one NAME.py for homogeneous and heterogeneous models (reused where an identical one is "
                        "there; another version's is refused, never overwritten); the generated module raises "
                        "ImportError when imported with another runtime than its own. By default each module "
                        "holds its runtime. NAME.py is the one file written besides -o")
    parser.add_argument("--version", action="version", version=f"gnn-codegen {VERSION}")
    return parser


def write_atomically(path: Path, text: str, option: str = "-o") -> None:
    """Write to a temporary file beside `path`, then rename: never a half-written output. The file
    gets the mode open() would give it (0o666 less the umask; mkstemp's 0o600 would hide it from
    everyone else), or keeps the mode of the file it replaces. `option` names the path in errors."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0o666 & ~_umask()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _unwritable(option, path, exc) from None
    try:
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), mode)
            f.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _unwritable(option, path, exc) from None
        raise


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def _unwritable(option: str, path: Path, exc: OSError) -> OutputError:
    return OutputError(
        f"{option} {path}: cannot write there ({exc.strerror or exc}). Choose a path in a folder you "
        "can write."
    )


def check_output_path(option: str, path: Path) -> None:
    """Refuse, before any work, what the write at the end would refuse or get wrong."""
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder; give a file name, e.g. {option} {path / 'inference.py'}.")
    if path.exists():
        if not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222:
            # renaming over it would succeed (that needs only the folder's permission): refuse
            # instead of replacing a file its owner made read-only
            raise OutputError(
                f"{option} {path} exists and is read-only, so gnn-codegen does not replace it. Make it "
                f"writable (chmod u+w {path}) or choose another path."
            )
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # write_atomically creates the missing folders below it
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{option} {path}: {folder} is a file, not a folder. Choose another path.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(
            f"{option} {path}: you cannot write in the folder {folder} (permission denied). Choose a "
            "path in a folder you can write."
        )


def _paragraph(prefix: str, message: str) -> str:
    return textwrap.fill(f"{prefix}: {message}", width=100, break_on_hyphens=False, break_long_words=False)


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    _check_options(args)
    stdout = sys.stdout
    try:
        # the model's code runs while the pipeline traces and checks it: an exit it calls there
        # (load.py names one at import) must not end the command with nothing written
        with contextlib.redirect_stdout(sys.stderr), exit_raises():
            return _run(args, stdout)
    except (SystemExit, ExitCalled) as exc:
        raise ExitCalledError(
            f"the model's code called {exit_call(exc)} while gnn-codegen ran it, which would end "
            "gnn-codegen before it writes anything; nothing was written. Keep exits out of the model's "
            "constructor and forward."
        ) from None


def _run(args: argparse.Namespace, stdout: TextIO) -> int:
    """The command, with sys.stdout sent to stderr: only `stdout` receives the module or the plan."""
    options = GenerateOptions(
        init=args.init,
        output=args.output or "inference.py",
        feat_dims=args.feat_dims,
        leaves=tuple(args.leaf),
        mp_modules=tuple(args.mp_module),
        fanout=args.fanout,
        optimize=not args.simple_cut,
        verify=not args.no_verify,
        method_name=args.method_name,
        metagraph=args.metagraph,
        forward_args=args.forward_args,
        blocks=args.blocks,
        runtime_module=args.runtime_module,
    )
    if args.output not in (None, "-") and ":" in args.target:
        model_file = Path(args.target.rpartition(":")[0])
        if model_file.exists() and Path(args.output).resolve() == model_file.resolve():
            raise TargetError(
                f"-o {args.output} is the model file itself; writing there would replace your model. "
                "Choose another output path, e.g. -o inference.py."
            )
    generated = generate_all(args.target, options)
    for warning in generated.warnings:
        print(_paragraph("warning", warning), file=sys.stderr)
    for note in generated.notes:
        print(_paragraph("note", note), file=sys.stderr)
    if args.no_verify:
        print(_paragraph("warning", "--no-verify: the module was not checked against forward before it was "
                         "written; its header says so. Check it with --check."), file=sys.stderr)
    if args.explain and generated.hetero is not None:
        _explain_hetero(generated, args, stdout)
    elif args.explain:
        _explain(generated, args, stdout)
    if args.check:
        # imports the generated module: only when asked
        if generated.hetero is not None:
            from gnn_codegen.verify.hetero import check_hetero as check
        else:
            from gnn_codegen.verify.check import check

        result = check(generated, num_nodes=args.check_nodes)
        print(
            f"check: random graph with {result.num_nodes} nodes, {result.num_edges} edges, "
            f"{result.zero_in_degree_nodes} without in-edges; full-graph forward {result.forward_seconds:.3f}s",
            file=sys.stderr,
        )
        for note in result.notes:
            if note not in generated.notes:
                print(_paragraph("note", note), file=sys.stderr)
        for b in result.batches:
            print(f"check: batch_size={b.batch_size}, source rows {b.sources}: inference {b.seconds:.3f}s, max |difference| {b.max_abs_diff:.3g}", file=sys.stderr)
        if not result.ok:
            worst = result.worst
            raise CheckFailedError(
                f"the generated inference differs from {generated.loaded.class_name}'s full-graph "
                f"forward by up to {result.max_abs_diff:.3g} (tolerance atol={result.atol}, rtol={result.rtol}) "
                f"with batches of {worst.batch_size} nodes and source rows {worst.sources}; nothing was "
                f"written to {args.output}. This is a bug in gnn-codegen: please report it with the model "
                "file and the command you ran."
            )
        print(f"check: OK (atol={result.atol}, rtol={result.rtol})", file=sys.stderr)
    if args.output is None:
        return 0  # --explain only
    if args.output == "-":
        stdout.write(generated.source)
    else:
        if generated.runtime_module is not None:
            path = _runtime_path(args)
            if not existing_matches(path, generated.runtime_module[1]):
                write_atomically(path, generated.runtime_module[1], "--runtime-module")
                print(f"wrote {path}", file=sys.stderr)
            else:
                print(f"reused {path}: the same runtime ({hashes_line(generated.runtime_module[1])})",
                      file=sys.stderr)
        write_atomically(Path(args.output), generated.source, "-o")
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _check_options(args: argparse.Namespace) -> None:
    if args.output is None and not args.explain:
        raise OptionsError("no output file: give -o OUT (or -o - for stdout), or --explain to only print the plan.")
    if (args.json or args.dot) and not args.explain:
        raise OptionsError("--json and --dot describe the plan that --explain prints; add --explain.")
    if args.explain and args.output == "-":
        raise OptionsError("--explain prints the plan on stdout, where -o - would also write the module; "
                           "write the module to a file with -o OUT.")
    if not args.fanout >= 1 or math.isinf(args.fanout):
        raise OptionsError(f"--fanout {args.fanout:g}: a layer gathers at least one source row per stored row; give a number >= 1.")
    if args.nodes < 1:
        raise OptionsError(f"--nodes {args.nodes}: give the number of nodes of your graph (>= 1).")
    if args.check_nodes < 2:
        raise OptionsError(f"--check-nodes {args.check_nodes}: the check runs on a random graph of that many "
                           "nodes and needs at least 2; give e.g. --check-nodes 1000 (the default).")
    if args.output not in (None, "-"):
        check_output_path("-o", Path(args.output))
    if args.dot:
        check_output_path("--dot", Path(args.dot))
    if args.runtime_module is not None:
        check_name(args.runtime_module, args.output)
        # before any work: NAME.py there is this version's runtime or absent
        existing_matches(_runtime_path(args), runtime_module_source(VERSION))


def _runtime_path(args: argparse.Namespace) -> Path:
    """--runtime-module NAME: NAME.py in the output's folder."""
    return Path(args.output).parent / f"{args.runtime_module}.py"


def _explain(generated, args: argparse.Namespace, stdout: TextIO) -> None:
    data = explain_data(generated, args.nodes)
    if args.dot:  # first: a --dot that cannot be written is refused before anything is printed
        path = Path(args.dot)
        write_atomically(path, explain_dot(generated, data), "--dot")
        pictures = render_dot(path)
        wrote = ", ".join(str(p) for p in [path, *pictures])
        print(f"wrote {wrote}" + ("" if pictures else " (install Graphviz's `dot` to render it)"), file=sys.stderr)
    stdout.write(explain_json(data) if args.json else explain_text(data))


def _explain_hetero(generated, args: argparse.Namespace, stdout: TextIO) -> None:
    from gnn_codegen.explain.hetero import explain_hetero, explain_hetero_text

    if args.dot:
        raise OptionsError("--dot draws the traced graph of a model on a homogeneous graph; for a heterogeneous "
                           "model, --explain prints each layer and node type (and --json the same as JSON).")
    data = explain_hetero(generated, args.nodes)
    stdout.write(explain_json(data) if args.json else explain_hetero_text(data))


def main(argv: list[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except GnnCodegenError as exc:
        print(_paragraph("error", str(exc)), file=sys.stderr)
        return exc.exit_code
    except InternalError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except Exception:
        traceback.print_exc()
        print("internal error: gnn-codegen failed unexpectedly (traceback above). This is a bug in "
              "gnn-codegen; please report it with the model file and the command you ran.", file=sys.stderr)
        return 3


def console_main() -> NoReturn:
    """The `gnn-codegen` command: main(), then end the process at once. Tearing the interpreter
    down after importing torch and dgl (module finalizers, thread pools) took 0.6-0.7 s, a
    quarter of the command's time; everything it wrote is closed by then (outputs are renamed
    into place), so only the standard streams need flushing."""
    try:
        code = main()
    except SystemExit as exc:  # argparse: --help, --version, usage errors (already printed)
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    console_main()

"""The `gnn-codegen` command: parse arguments, run the pipeline, write the output atomically,
optionally --check it; user mistakes become one paragraph and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import traceback
from pathlib import Path

from gnn_codegen.errors import CheckFailedError, GnnCodegenError, InternalError, TargetError
from gnn_codegen.pipeline import VERSION, GenerateOptions, generate_all


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gnn-codegen",
        description="Write exact, readable layer-wise full-neighbour inference for a DGL model: "
        "the model's class plus an `inference(self, g, x, batch_size, device)` method.",
    )
    parser.add_argument("target", metavar="FILE:NAME", help="model file and the nn.Module class (or factory function) in it")
    parser.add_argument("-o", "--output", required=True, help="where to write the generated module ('-' for stdout)")
    parser.add_argument("--init", metavar="JSON", help="constructor keyword arguments as a JSON object")
    parser.add_argument("--check", action="store_true", help="compare the generated inference with the full-graph forward on a random graph")
    parser.add_argument("--check-nodes", type=int, default=1000, metavar="N", help="nodes of the --check graph (default 1000)")
    parser.add_argument("--feat-dims", metavar="NAME=WIDTH,...", help="widths of forward's inputs when the model does not reveal them, e.g. x=602")
    parser.add_argument("--leaf", action="append", default=[], metavar="CLASS", help="treat modules of this class as row-wise leaves (repeatable)")
    parser.add_argument("--mp-module", action="append", default=[], metavar="CLASS", help="treat modules of this class as message passing (repeatable)")
    parser.add_argument("--version", action="version", version=f"gnn-codegen {VERSION}")
    return parser


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: never a half-written output."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _paragraph(prefix: str, message: str) -> str:
    return textwrap.fill(f"{prefix}: {message}", width=100, break_on_hyphens=False, break_long_words=False)


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    options = GenerateOptions(
        init=args.init,
        output=args.output,
        feat_dims=args.feat_dims,
        leaves=tuple(args.leaf),
        mp_modules=tuple(args.mp_module),
    )
    if args.output != "-" and ":" in args.target:
        model_file = Path(args.target.rpartition(":")[0])
        if model_file.exists() and Path(args.output).resolve() == model_file.resolve():
            raise TargetError(
                f"-o {args.output} is the model file itself; writing there would replace your model. "
                "Choose another output path, e.g. -o inference.py."
            )
    generated = generate_all(args.target, options)
    for warning in generated.warnings:
        print(_paragraph("warning", warning), file=sys.stderr)
    if args.check:
        from gnn_codegen.verify import check  # imports the generated module: only when asked

        result = check(generated, num_nodes=args.check_nodes)
        print(
            f"check: random graph with {result.num_nodes} nodes, {result.num_edges} edges, "
            f"{result.zero_in_degree_nodes} without in-edges; full-graph forward {result.forward_seconds:.3f}s",
            file=sys.stderr,
        )
        for b in result.batches:
            print(f"check: batch_size={b.batch_size}: inference {b.seconds:.3f}s, max |difference| {b.max_abs_diff:.3g}", file=sys.stderr)
        if not result.ok:
            raise CheckFailedError(
                f"the generated inference differs from {generated.loaded.class_name}'s full-graph "
                f"forward by up to {result.max_abs_diff:.3g} (tolerance atol={result.atol}, rtol={result.rtol}); "
                f"nothing was written to {args.output}. A module gnn-codegen has not verified is the "
                "usual cause (see the warnings above); please report the model if none was printed."
            )
        print(f"check: OK (atol={result.atol}, rtol={result.rtol})", file=sys.stderr)
    if args.output == "-":
        sys.stdout.write(generated.source)
    else:
        write_atomically(Path(args.output), generated.source)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


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


if __name__ == "__main__":
    raise SystemExit(main())

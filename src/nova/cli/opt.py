"""nova-opt: parse MLIR, run a pass pipeline, print the result (Nova's mlir-opt).

    nova-opt in.mlir -p outline-kernels[,pass...] [-o out] [--split-input-file]
             [--mlir-print-op-generic]
    nova-opt in.mlir --outline-kernels          # one flag per registered pass, run in flag order
    nova-opt in.mlir --gpu-kernel-outlining     # mlir-opt's names for the same passes
    nova-opt in.mlir --pass-pipeline='builtin.module(outline-kernels)'
    nova-opt in.mlir -p outline-kernels --split-input-file --verify-diagnostics

With --split-input-file the input is cut at `// -----` lines and each part is processed on its own
(diagnostics keep the line numbers of the whole file); outputs are joined by `// -----` lines and
the exit status is 1 if any part failed, as with mlir-opt. With --verify-diagnostics, errors are
checked against `// expected-error {{...}}` comments instead (nova.cli.verify_diagnostics).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from nova.cli.toolmain import EXIT_ERROR, EXIT_OK, format_error, read_input, run_tool, write_output
from nova.errors import NovaError

PROG = "nova-opt"
SPLIT_MARKER = "// -----"
_SPLIT_RE = re.compile(r"^// -----.*$\n?", re.MULTILINE)


def split_input(text: str) -> list[str]:
    """Cut `text` at `// -----` lines; each part is padded with newlines so that its line numbers
    stay those of the whole file."""
    parts: list[str] = []
    start = 0
    for match in [*_SPLIT_RE.finditer(text), None]:
        end = len(text) if match is None else match.start()
        parts.append("\n" * text.count("\n", 0, start) + text[start:end])
        if match is not None:
            start = match.end()
    return parts


class _AppendPass(argparse.Action):
    """`--<pass-name>` flags append their pass to the pipeline in command-line order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        namespace.pipeline.append(self.const)


def build_parser() -> argparse.ArgumentParser:
    from nova.passes.registry import PASSES, UPSTREAM_NAMES

    parser = argparse.ArgumentParser(prog=PROG, description="Run Nova passes on MLIR text.")
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file ('-': stdin)")
    parser.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    parser.add_argument("-p", "--passes", "--pass-pipeline", default="",
                        help="comma-separated pass pipeline, e.g. outline-kernels (mlir-opt's "
                        "'builtin.module(...)' wrapper is accepted)")
    parser.add_argument("--split-input-file", action="store_true",
                        help=f"process each '{SPLIT_MARKER}'-separated part on its own")
    parser.add_argument("--mlir-print-op-generic", action="store_true",
                        help="print operations in generic form")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against the input's expected-error comments")
    parser.add_argument("--allow-unregistered-dialect", action="store_true",
                        help="parse ops of unregistered dialects (generic form) instead of "
                        "rejecting them, as mlir-opt does")
    parser.set_defaults(pipeline=[])
    for name, cls in sorted(PASSES.items()):
        doc = (cls.__doc__ or "").strip().splitlines()
        parser.add_argument(f"--{name}", action=_AppendPass, nargs=0, const=name,
                            help=doc[0] if doc else None)
    for upstream, name in sorted(UPSTREAM_NAMES.items()):
        parser.add_argument(f"--{upstream}", action=_AppendPass, nargs=0, const=name,
                            help=f"mlir-opt's name for --{name}")
    return parser


def process(text: str, filename: str, pipeline: str, generic: bool,
            allow_unregistered: bool = False) -> str:
    """Parse one input, run `pipeline` on it and print it; NovaErrors propagate."""
    printed, failures = process_all(text, filename, pipeline, generic, allow_unregistered)
    if failures:
        raise failures[0]
    return printed


def process_all(text: str, filename: str, pipeline: str, generic: bool,
                allow_unregistered: bool = False) -> tuple[str, list[NovaError]]:
    """As `process`, but returns the printed result ('' on failure) and every error: all the
    verifier errors mlir-opt would report (one per isolated-from-above op, nova.ir.verify),
    else the parse or pass error."""
    from nova.ir.parser import parse_mlir, print_mlir
    from nova.ir.verify import verify_all
    from nova.passes.registry import run_pipeline

    try:
        module = parse_mlir(text, filename, verify=False, allow_unregistered=allow_unregistered)
        errors: list[NovaError] = list(verify_all(module))
        if errors:
            return "", errors
        if pipeline:
            run_pipeline(module, pipeline)
    except NovaError as exc:
        return "", [exc]
    printed = print_mlir(module, generic=generic)
    return (printed if printed.endswith("\n") else printed + "\n"), []


_ANCHOR = re.compile(r"^\s*builtin\.module\s*\((.*)\)\s*$", re.DOTALL)


def unwrap_pipeline(pipeline: str) -> str:
    """`builtin.module(a,b)` (mlir-opt's anchored form) -> `a,b`; other text unchanged."""
    match = _ANCHOR.match(pipeline)
    return match.group(1) if match else pipeline


def _run(args: argparse.Namespace) -> int:
    from nova.cli.verify_diagnostics import check
    from nova.passes.registry import parse_pipeline

    pipeline = ",".join(p for p in [unwrap_pipeline(args.passes), *args.pipeline] if p)
    parse_pipeline(pipeline)  # report a bad pipeline once, before any input is read
    text, filename = read_input(args.input)
    parts = split_input(text) if args.split_input_file else [text]
    outputs: list[str] = []
    status = EXIT_OK
    for part in parts:
        printed, failures = process_all(part, filename, pipeline, args.mlir_print_op_generic,
                                        args.allow_unregistered_dialect)
        outputs.append(printed)
        if args.verify_diagnostics:
            problems = check(part, filename, failures)
            for problem in problems:
                print(problem, file=sys.stderr)
            status = EXIT_ERROR if problems else status
        elif failures:
            for failure in failures:
                print(format_error(failure), file=sys.stderr)
            status = EXIT_ERROR
    if status == EXIT_OK or args.split_input_file:
        write_output(args.output, f"\n{SPLIT_MARKER}\n".join(outputs))
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_tool(PROG, lambda: _run(args))


if __name__ == "__main__":
    raise SystemExit(main())

"""nova-translate: compile MLIR text into a .nova bundle, or stop at an intermediate stage.

    nova-translate in.mlir -o out.nova [--emit=outlined|device-llvm|ptx|cubin|cpu-llvm|cpu-obj|
                   host-llvm|obj|nova] [--arch sm_90] [--no-ptx] [--no-cubin] [--no-cpu-image]
                   [-O N]
                   [--timings]

Text outputs go to stdout without -o; a bundle or object is written to stdout only when it is not
a terminal. --timings prints the per-stage wall times to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nova.cli.toolmain import EXIT_OK, InputError, read_input, run_tool, write_output

PROG = "nova-translate"


def build_parser() -> argparse.ArgumentParser:
    from nova.driver import EMIT_ALIASES, STAGES

    emits = [*(s.name for s in STAGES), *EMIT_ALIASES]
    parser = argparse.ArgumentParser(prog=PROG, description="Compile MLIR into a .nova bundle.")
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file ('-': stdin)")
    parser.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    parser.add_argument("--emit", default="nova", choices=emits, metavar="STAGE",
                        help=f"stop after this stage and write its output ({', '.join(emits)})")
    parser.add_argument("--arch", default=None, help="GPU architecture (default: NOVA_ARCH or "
                        "sm_90)")
    parser.add_argument("--no-ptx", action="store_true",
                        help="build no GPU images (PTX, cubin): a bundle for the CPU device only")
    parser.add_argument("--no-cubin", action="store_true", help="do not run ptxas")
    parser.add_argument("--no-cpu-image", action="store_true",
                        help="do not build the CPU-device image of the kernels")
    parser.add_argument("-O", dest="opt_level", type=int, default=3, choices=range(4),
                        help="LLVM optimisation level (default 3)")
    parser.add_argument("--timings", action="store_true", help="print per-stage times to stderr")
    return parser


def format_timings(timings: dict[str, float], cache_hit: bool) -> str:
    """A small table of stage wall times in milliseconds."""
    width = max((len(name) for name in timings), default=5)
    lines = [f"{'stage':<{width}}  ms"]
    lines += [f"{name:<{width}}  {seconds * 1e3:8.2f}" for name, seconds in timings.items()]
    lines.append(f"{'total':<{width}}  {sum(timings.values()) * 1e3:8.2f}"
                 + ("  (cache hit)" if cache_hit else ""))
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from nova.driver import CompileOptions, compile_source, join_outputs

    text, filename = read_input(args.input)
    fields: dict[str, object] = {"emit": args.emit, "ptx": not args.no_ptx,
                                 "cubin": not args.no_cubin,
                                 "cpu_image": not args.no_cpu_image,
                                 "opt_level": args.opt_level}
    if args.arch:
        fields["arch"] = args.arch
    result = compile_source(text, filename, CompileOptions(**fields))  # type: ignore[arg-type]
    output = join_outputs(result.output)
    if isinstance(output, bytes) and args.output in (None, "-") and sys.stdout.isatty():
        raise InputError(f"refusing to write binary output of --emit={args.emit} to a "
                         "terminal; use -o FILE")
    write_output(args.output, output)
    if args.timings:
        print(format_timings(result.timings, result.cache_hit), file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_tool(PROG, lambda: _run(args))


if __name__ == "__main__":
    raise SystemExit(main())

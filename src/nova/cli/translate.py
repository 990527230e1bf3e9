"""nova-translate: compile MLIR text into a .nova bundle, or stop at an intermediate stage.

    nova-translate in.mlir -o out.nova [--emit=outlined|device-llvm|ptx|cubin|cpu-llvm|cpu-obj|
                   host-llvm|obj|nova] [--arch sm_90] [--no-ptx] [--no-cubin] [--no-cpu-image]
                   [-O N] [--check-bounds] [--sign KEY]
                   [--timings] [--split-input-file]
    nova-translate --gen-key KEY      write a new Ed25519 key pair: KEY (private) and KEY.pub

Text outputs go to stdout without -o; a bundle or object is written to stdout only when it is not
a terminal. --timings prints the per-stage wall times to stderr.

A bundle compile to a file with only the common options (`in.mlir -o out.nova`, --arch, -O,
--no-ptx/--no-cubin/--no-cpu-image, --check-bounds, --emit=nova) is first looked up in the compile
cache without argparse or the compiler (`_cache_hit`): a hit costs little more than starting
Python. Anything else, or a miss, takes the full path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import SimpleNamespace

from nova.cli.toolmain import (
    EXIT_ERROR,
    EXIT_OK,
    InputError,
    format_error,
    read_input,
    run_tool,
    write_output,
)
from nova.errors import NovaError

TYPE_CHECKING = False  # not `from typing`: a cache hit of nova-translate never imports typing
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from nova.compiler.driver import CompileOptions

PROG = "nova-translate"


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from nova.compiler.driver import EMIT_ALIASES, STAGES

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
    parser.add_argument("--allow-unregistered-dialect", action="store_true",
                        help="parse ops of unregistered dialects (generic form); compiling one "
                        "is a located error")
    parser.add_argument("--check-bounds", action="store_true",
                        help="check every memref load/store/atomic index against its memref's "
                        "sizes (kernels and host code; default: NOVA_CHECK_BOUNDS)")
    parser.add_argument("--sign", metavar="KEY", default=None,
                        help="sign the bundle with this Ed25519 private key (PEM); loaders with "
                        "a trust policy (NOVA_TRUSTED_KEYS) accept only signed bundles")
    parser.add_argument("--gen-key", metavar="KEY", default=None,
                        help="write a new Ed25519 private key to KEY and its public key to "
                        "KEY.pub (PEM), then exit")
    parser.add_argument("--timings", action="store_true", help="print per-stage times to stderr")
    parser.add_argument("--split-input-file", action="store_true",
                        help="compile each '// -----'-separated part on its own (text outputs "
                        "only); exit 1 if any part fails, as mlir-translate does")
    return parser


def format_timings(timings: dict[str, float], cache_hit: bool) -> str:
    """A small table of stage wall times in milliseconds."""
    width = max((len(name) for name in timings), default=5)
    lines = [f"{'stage':<{width}}  ms"]
    lines += [f"{name:<{width}}  {seconds * 1e3:8.2f}" for name, seconds in timings.items()]
    lines.append(f"{'total':<{width}}  {sum(timings.values()) * 1e3:8.2f}"
                 + ("  (cache hit)" if cache_hit else ""))
    return "\n".join(lines)


def _gen_key(path: str) -> int:
    from nova.bundle.signature import fingerprint, generate_key, load_public_key

    if os.path.exists(path):
        raise InputError(f"'{path}' exists; not overwriting a key")
    private, public = generate_key(path)
    print(f"wrote {private} (private key: keep it secret) and {public} (public key, "
          f"{fingerprint(load_public_key(public))})", file=sys.stderr)
    return EXIT_OK


def _options(args: Any) -> CompileOptions:
    """The CompileOptions of parsed arguments (argparse's, or `_quick_args`' namespace)."""
    from nova.compiler.stages import CompileOptions

    fields: dict[str, object] = {"emit": args.emit, "ptx": not args.no_ptx,
                                 "cubin": not args.no_cubin,
                                 "cpu_image": not args.no_cpu_image,
                                 "opt_level": args.opt_level}
    if args.arch:
        fields["arch"] = args.arch
    if args.allow_unregistered_dialect:
        fields["allow_unregistered"] = True
    if args.check_bounds:
        fields["check_bounds"] = True
    return CompileOptions(**fields)  # type: ignore[arg-type]


def _quick_option_values(ns: SimpleNamespace) -> dict[str, object]:
    """`asdict(_options(ns))` for `_quick_args`' namespaces, without importing the compiler's
    stage table (CompileOptions' module: dataclasses, threading, pathlib): the cache key of a
    quick lookup. tests/unit/test_cold_start.py checks both agree."""
    from nova import config

    cfg = config.get()
    return {"arch": ns.arch or cfg.arch, "emit": ns.emit, "ptx": not ns.no_ptx,
            "cubin": not ns.no_cubin, "cpu_image": not ns.no_cpu_image,
            "opt_level": ns.opt_level, "check_bounds": bool(ns.check_bounds or cfg.check_bounds),
            "allow_unregistered": bool(ns.allow_unregistered_dialect), "manifest_extra": ()}


_NOT_HANDLED = -1
_QUICK_FLAGS = {"--no-ptx": "no_ptx", "--no-cubin": "no_cubin", "--no-cpu-image": "no_cpu_image",
                "--check-bounds": "check_bounds"}
_QUICK_VALUES = {"-o": "output", "--output": "output", "--arch": "arch", "-O": "opt_level",
                 "--emit": "emit"}


def _quick_args(argv: list[str]) -> SimpleNamespace | None:
    """The arguments of a plain bundle compile to a file, parsed without argparse (defaults as
    `build_parser`'s), or None for anything else (argparse then parses, and reports errors)."""
    ns = SimpleNamespace(input=None, output=None, emit="nova", arch=None, no_ptx=False,
                         no_cubin=False, no_cpu_image=False, opt_level=3,
                         allow_unregistered_dialect=False, check_bounds=False)
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if arg in _QUICK_FLAGS:
            setattr(ns, _QUICK_FLAGS[arg], True)
        elif name in _QUICK_VALUES and (eq or rest):
            setattr(ns, _QUICK_VALUES[name], value if eq else rest.pop(0))
        elif not arg.startswith("-") and ns.input is None:
            ns.input = arg
        else:
            return None
    if ns.opt_level not in ("0", "1", "2", "3", 3) or ns.emit not in ("nova", "bundle"):
        return None
    ns.opt_level = int(ns.opt_level)
    if ns.input is None or ns.output in (None, "-") or ns.arch == "":
        return None
    return ns


def _cache_hit(argv: list[str]) -> bool:
    """Answer a plain bundle compile from the compile cache (see the module docstring); False
    when it is not one, the cache is off or bypassed, or misses."""
    from nova import config

    cfg = config.get()
    ns = _quick_args(argv)
    if ns is None or not cfg.cache_enabled or cfg.dump_dir or cfg.override_dir:
        return False
    try:
        text, filename = read_input(ns.input)
    except InputError:
        return False  # the full path reports it
    from nova.compiler.cache import BundleCache, cache_key

    data = BundleCache(cfg.cache_path()).get(cache_key(text, filename, _quick_option_values(ns)))
    if data is None:
        return False
    write_output(ns.output, data)
    return True


def _run(args: argparse.Namespace) -> int:
    from nova.compiler.driver import compile_source, join_outputs

    if args.gen_key:
        return _gen_key(args.gen_key)
    if args.sign and (args.emit not in ("nova", "bundle") or args.split_input_file):
        raise InputError("--sign applies to bundles (--emit=nova), one input at a time")
    text, filename = read_input(args.input)
    options = _options(args)
    if args.split_input_file:
        return _run_split(args, text, filename, options)
    result = compile_source(text, filename, options)
    output = join_outputs(result.output)
    if args.sign:
        from nova.bundle.signature import sign_bundle

        assert isinstance(output, bytes)
        output = sign_bundle(output, args.sign)
    if isinstance(output, bytes) and args.output in (None, "-") and sys.stdout.isatty():
        raise InputError(f"refusing to write binary output of --emit={args.emit} to a "
                         "terminal; use -o FILE")
    write_output(args.output, output)
    if args.timings:
        print(format_timings(result.timings, result.cache_hit), file=sys.stderr)
    return EXIT_OK


def _run_split(args: argparse.Namespace, text: str, filename: str,
               options: CompileOptions) -> int:
    """--split-input-file: each part compiled on its own, errors reported per part, the text
    outputs joined by `// -----` lines."""
    from nova.cli.opt import SPLIT_MARKER, split_input
    from nova.compiler.driver import compile_source, join_outputs

    outputs: list[str] = []
    status = EXIT_OK
    for part in split_input(text):
        try:
            output = join_outputs(compile_source(part, filename, options).output)
        except NovaError as exc:
            print(format_error(exc), file=sys.stderr)
            status, output = EXIT_ERROR, ""
        if isinstance(output, bytes):
            raise InputError(f"--split-input-file needs a text output; --emit={args.emit} is "
                             "binary")
        outputs.append(output)
    write_output(args.output, f"\n{SPLIT_MARKER}\n".join(outputs))
    return status


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    quick = run_tool(PROG, lambda: EXIT_OK if _cache_hit(arguments) else _NOT_HANDLED)
    if quick != _NOT_HANDLED:
        return quick
    args = build_parser().parse_args(arguments)
    return run_tool(PROG, lambda: _run(args))


if __name__ == "__main__":
    raise SystemExit(main())

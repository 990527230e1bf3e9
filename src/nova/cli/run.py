"""nova-run: compile (if MLIR) and run one entry of a program, like upstream's mlir-runner.

    nova-run prog.mlir|prog.nova [--device cuda|cpu] [-e main] [--arch sm_90] [--check-bounds]

MLIR run on the cpu device (`--device cpu`, or the default when no GPU is usable) is compiled
for it alone: no PTX, no ptxas. The entry runs without arguments; what the program prints
(runner utilities, kernel printf) goes to stdout in program order. Failures exit with status 1
and one message on stderr: source errors as `file:line:col: error: ...` with the line and a
caret, everything else as `nova-run: error: ...`. Never a traceback (NOVA_DEBUG=1 adds one for
internal errors). `--entry-point-result=void` and `--shared-libs=...` are accepted for
mlir-runner command lines (the runner utilities are built in). The common command lines
(`prog [--device D] [-e NAME] [--arch A] [--check-bounds]`) are parsed without argparse
(`_quick_args`), which a cached program's start-up would otherwise pay for.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from nova.cli.toolmain import EXIT_ERROR, EXIT_OK, InputError, run_tool
from nova.errors import ArgumentError, DiagnosticError, NovaError

if TYPE_CHECKING:
    import argparse

    from nova.runtime.device import Device

PROG = "nova-run"


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog=PROG, description="Run an entry of an MLIR program or "
                                     "a .nova bundle on a CUDA GPU or the CPU device.")
    parser.add_argument("input", help="an .mlir source file, a .nova bundle, or '-' (MLIR on "
                        "stdin)")
    parser.add_argument("--device", choices=("cuda", "cpu", "auto"), default=None,
                        help="where to run (default: NOVA_DEVICE, else cuda when usable)")
    parser.add_argument("-e", "--entry", "--entry-point", default="main",
                        help="the entry function to run (default: main)")
    parser.add_argument("--arch", default=None, help="GPU architecture to compile for "
                        "(default: NOVA_ARCH or sm_90)")
    parser.add_argument("--check-bounds", action="store_true",
                        help="compile MLIR with every memref load/store/atomic index checked "
                        "against its memref's sizes (default: NOVA_CHECK_BOUNDS; no effect on a "
                        ".nova bundle, which is run as it was built)")
    parser.add_argument("--entry-point-result", "-entry-point-result", default="void",
                        choices=("void", "i32", "i64", "f32", "f64"),
                        help="accepted for mlir-runner compatibility; results are printed")
    parser.add_argument("--shared-libs", "-shared-libs", default=None,
                        help="accepted for mlir-runner compatibility (ignored)")
    parser.add_argument("--input", action="append", default=[], metavar="X.npy",
                        dest="input_arrays",
                        help="run a model saved by nova.models (CompiledModel.save) on these "
                        "NumPy files, in input order")
    parser.add_argument("--output", default=None, metavar="OUT.npz",
                        help="with --input: also save the model's outputs to this .npz file")
    return parser


def _read(path: str) -> tuple[bytes, str]:
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        return Path(path).read_bytes(), path
    except OSError as exc:
        raise InputError(f"cannot read '{path}': {exc.strerror or exc}") from None


def _bundle(data: bytes, name: str, arch: str | None, device: Device | None,
            check_bounds: bool = False) -> bytes:
    """The bundle to run: `data` itself, or `data` compiled (bounds-checked with
    `check_bounds`, else as NOVA_CHECK_BOUNDS says). For the cpu device only the CPU images
    are built (no PTX, no ptxas): the bundle then runs on cpu only."""
    if data.startswith(b"\x7fELF") or name.endswith(".nova"):
        return data  # a bundle (the reader reports a damaged one)
    from nova.compiler.driver import compile_to_bundle, make_options

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"'{name}' is neither a .nova bundle nor UTF-8 MLIR text") from None
    fields: dict[str, object] = {} if arch is None else {"arch": arch}
    if check_bounds:
        fields["check_bounds"] = True
    from nova.runtime.device import DeviceKind

    if device is not None and device.kind is DeviceKind.CPU:
        fields.update(ptx=False, cubin=False)
    return compile_to_bundle(text, name, make_options(**fields))


def _device_for_compiling(spec: str | None) -> Device | None:
    """The run device when it is known to be the cpu device without touching CUDA's error
    path first: `--device cpu`, or the default/auto choice when that resolves to cpu. A
    `--device cuda` (or a failing default) is resolved after compiling, as before, so source
    errors are reported ahead of device errors."""
    from nova.runtime.selection import get_device

    if spec == "cuda":
        return None
    try:
        return get_device(spec)
    except NovaError:
        return None


def _print_result(value: object) -> None:
    from nova.runtime.runner_utils import flush_stdout, format_float, write_stdout

    if value is None:
        return
    text = format_float(value) if isinstance(value, float) else str(value)
    write_stdout(text + "\n")
    flush_stdout()


_QUICK_VALUES = {"--device": "device", "-e": "entry", "--entry": "entry",
                 "--entry-point": "entry", "--arch": "arch"}


def _quick_args(argv: list[str]) -> SimpleNamespace | None:
    """The common command lines (module docstring) parsed without argparse, with `_parser`'s
    defaults; None for anything else (argparse then parses, and reports errors)."""
    ns = SimpleNamespace(input=None, device=None, entry="main", arch=None, check_bounds=False,
                         entry_point_result="void", shared_libs=None, input_arrays=[],
                         output=None)
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if arg == "--check-bounds":
            ns.check_bounds = True
        elif name in _QUICK_VALUES and (eq or rest):
            setattr(ns, _QUICK_VALUES[name], value if eq else rest.pop(0))
        elif ns.input is None and (arg == "-" or not arg.startswith("-")):
            ns.input = arg
        else:
            return None
    if ns.input is None or ns.device not in (None, "cuda", "cpu", "auto") or ns.arch == "" \
            or ns.entry.startswith("-"):
        return None
    return ns


def _run(args: Any) -> int:
    from nova.runtime.executor import NovaModule
    from nova.runtime.selection import get_device

    if args.input_arrays:
        from nova.models.cli import run_saved_model

        return run_saved_model(args.input, args.input_arrays, args.device, args.output)
    data, name = _read(args.input)
    device = _device_for_compiling(args.device)
    bundle = _bundle(data, name, args.arch, device, args.check_bounds)
    # a bundle compiled here from the source given needs no signature; a .nova file read from
    # disk is held to the trust policy (NOVA_TRUSTED_KEYS)
    trusted = None if bundle is data else ()
    with NovaModule(bundle, device or get_device(args.device), name, trusted) as module:
        try:
            entry = module[args.entry]
        except KeyError:
            raise ArgumentError(f"{name} has no entry '{args.entry}' (entries: "
                                f"{', '.join(module.entries) or 'none'})") from None
        if entry.entry.args:
            raise ArgumentError(f"entry '{args.entry}' takes {len(entry.entry.args)} "
                                "argument(s); nova-run runs entries without arguments")
        _print_result(entry())
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `nova-run` and `python -m nova run`."""
    args = _quick_args(list(sys.argv[1:] if argv is None else argv)) or _parser().parse_args(argv)

    def body() -> int:
        try:
            return _run(args)
        except DiagnosticError as exc:
            print(exc.render(), file=sys.stderr)
            return EXIT_ERROR
        except NovaError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return EXIT_ERROR

    sys.stdout.flush()
    return run_tool(PROG, body)


if __name__ == "__main__":
    raise SystemExit(main())

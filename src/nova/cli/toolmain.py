"""What every Nova command-line tool shares: reading inputs, writing outputs, reporting errors.

`run_tool` is the one top-level handler: a NovaError prints as an MLIR-style diagnostic
(`file:line:col: error: ...`, the source line and a caret) and exits 1; any other exception is an
internal error that exits 2 with a one-line message (and a traceback when NOVA_DEBUG is set).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from nova.errors import DiagnosticError, InputError, NovaError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INTERNAL = 2


def format_error(exc: NovaError) -> str:
    """The text a tool prints for a NovaError: the located diagnostic, or `error: message`."""
    if isinstance(exc, DiagnosticError):
        return exc.render()
    return f"error: {exc}"


def read_input(path: str) -> tuple[str, str]:
    """Read a source file ('-' is stdin); returns (text, name used in diagnostics)."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:  # Path.read_text, without pathlib's import
            return f.read(), path
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read '{path}': {_reason(exc)}") from None


def write_output(path: str | None, data: str | bytes) -> None:
    """Write a result to `path`, or to stdout when `path` is None or '-'."""
    if path is None or path == "-":
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(data)
            sys.stdout.flush()
        return
    try:
        if isinstance(data, bytes):
            with open(path, "wb") as out:
                out.write(data)
        else:
            with open(path, "w", encoding="utf-8") as text_out:
                text_out.write(data)
    except OSError as exc:
        raise InputError(f"cannot write '{path}': {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


RECURSION_LIMIT = 10_000
"""Python's recursion limit while a tool runs: parsing, verifying and lowering recurse once or a
few times per level of region nesting, and Python's default (1000) stops at ~300 levels, where
MLIR has no limit. 10 000 frames fit the main thread's 8 MiB stack."""


def run_tool(prog: str, body: Callable[[], int]) -> int:
    """Run a tool's body and turn every failure into a message on stderr and an exit status."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        return _run_body(prog, body)
    finally:
        sys.setrecursionlimit(previous)


def _run_body(prog: str, body: Callable[[], int]) -> int:
    try:
        return body()
    except RecursionError:
        print(f"{prog}: error: the input is nested too deeply (regions inside regions beyond "
              "about 2000 levels)", file=sys.stderr)
        return EXIT_ERROR
    except NovaError as exc:
        print(format_error(exc), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:
        from nova import config

        if config.get().debug:
            import traceback

            traceback.print_exc(file=sys.stderr)
        hint = "" if config.get().debug else " (set NOVA_DEBUG=1 for a traceback)"
        print(f"{prog}: internal error: {type(exc).__name__}: {exc}{hint}", file=sys.stderr)
        return EXIT_INTERNAL

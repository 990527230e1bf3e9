"""Nova's one error hierarchy.

Every failure a user can cause or meet (bad source, bad bundle, device faults) raises a subclass of
`NovaError`. Errors about source input carry a `SourceLocation` and render MLIR-style:
``file:line:col: error: message`` followed by the source line and a caret.

All of them are `nova.errors.<Name>`. The ones a cached kernel's first call never needs (`RARE`:
compiler, backend and CUDA driver errors, scalar conversions) are
defined in `nova.errors.rare` and made on first use through this module's `__getattr__`, so
`from nova.errors import ParseError` works as for the others (creating an exception class costs
more than its code: ~0.1 million instructions each).
"""

from __future__ import annotations

from nova.records import Record

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from nova.errors.rare import BackendError as BackendError
    from nova.errors.rare import CudaError as CudaError
    from nova.errors.rare import CudaOutOfMemoryError as CudaOutOfMemoryError
    from nova.errors.rare import LoweringError as LoweringError
    from nova.errors.rare import ParseError as ParseError
    from nova.errors.rare import PassError as PassError
    from nova.errors.rare import ScalarConversionError as ScalarConversionError
    from nova.errors.rare import UnsupportedError as UnsupportedError
    from nova.errors.rare import VerifyError as VerifyError

RARE = frozenset({"ParseError", "VerifyError", "UnsupportedError", "LoweringError", "PassError",
                  "BackendError", "CudaError", "CudaOutOfMemoryError", "ScalarConversionError"})
"""The classes of nova.errors.rare, served by `__getattr__`."""


class SourceLocation(Record):
    """A point in a source file (1-based line and column), with the file's text for excerpts."""

    __match_args__ = ("filename", "line", "column", "source")
    _fields = __match_args__
    filename: str
    line: int
    column: int
    source: str | None

    def __init__(self, filename: str, line: int, column: int, source: str | None = None) -> None:
        object.__setattr__(self, "filename", filename)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "source", source)

    def excerpt(self) -> str:
        """The source line and a caret under the column, or '' when the text is unknown."""
        if self.source is None:
            return ""
        lines = self.source.splitlines()
        if not 1 <= self.line <= len(lines):
            return ""
        text = lines[self.line - 1]
        return f"{text}\n{' ' * max(self.column - 1, 0)}^"

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


class NovaError(Exception):
    """Base class of every error Nova raises on purpose."""


class DiagnosticError(NovaError):
    """An error located in source input; `str()` gives the full MLIR-style diagnostic."""

    def __init__(self, message: str, location: SourceLocation | None = None,
                 notes: tuple[tuple[str, SourceLocation | None], ...] = ()) -> None:
        self.message = message
        self.location = location
        self.notes = notes
        super().__init__(self.render())

    def render(self) -> str:
        parts = [_render_one("error", self.message, self.location)]
        parts += [_render_one("note", text, loc) for text, loc in self.notes]
        return "\n".join(parts)


def _render_one(severity: str, message: str, location: SourceLocation | None) -> str:
    if location is None:
        return f"error: {message}" if severity == "error" else f"{severity}: {message}"
    head = f"{location}: {severity}: {message}"
    excerpt = location.excerpt()
    return f"{head}\n{excerpt}" if excerpt else head


class BundleFormatError(NovaError):
    """A .nova file that is truncated, corrupt, tampered with, or of another version or arch."""


class RuntimeFailure(NovaError):
    """A failure while running a program (device fault, failed copy, host-side assert)."""


class DeviceError(RuntimeFailure):
    """The device layer failed (no device, out of memory, invalid handle)."""


class KernelFault(RuntimeFailure):
    """A kernel trapped or failed an assertion (on the GPU or on the CPU device)."""


class OutOfMemoryError(DeviceError):
    """An allocation exceeded the device's memory or the pool's limit."""


CUDA_ERROR_OUT_OF_MEMORY = 2


def cuda_error(call: str, error_name: str, code: int, detail: str = "",
               kernel: str | None = None, context_lost: bool = False) -> CudaError:
    """The CudaError subclass for a failed driver call (one place maps codes to classes)."""
    from nova.errors.rare import CudaError, CudaOutOfMemoryError

    cls = CudaOutOfMemoryError if code == CUDA_ERROR_OUT_OF_MEMORY else CudaError
    return cls(call, error_name, code, detail, kernel=kernel, context_lost=context_lost)


class ArgumentError(NovaError, TypeError):
    """A Python call passed arguments of the wrong number, type, dtype, rank or shape."""


class InputError(NovaError):
    """An input file that cannot be read or an output file that cannot be written (the command-line
    tools import it at start-up)."""


def __getattr__(name: str) -> type[NovaError]:
    if name not in RARE:
        raise AttributeError(f"module 'nova.errors' has no attribute {name!r}")
    from nova.errors import rare  # the import lock makes each class once

    globals().update({n: getattr(rare, n) for n in RARE})  # later reads are dict hits
    return getattr(rare, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *RARE})

"""Nova's one error hierarchy.

Every failure a user can cause or meet (bad source, bad bundle, device faults) raises a subclass of
`NovaError`. Errors about source input carry a `SourceLocation` and render MLIR-style:
``file:line:col: error: message`` followed by the source line and a caret.
"""

from __future__ import annotations

from nova.records import Record


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


class ParseError(DiagnosticError):
    """Malformed MLIR text."""


class VerifyError(DiagnosticError):
    """Well-formed text that breaks an op's rules (types, operands, regions)."""


class UnsupportedError(DiagnosticError):
    """An op, type or attribute Nova does not compile (yet); names what is supported instead."""


class LoweringError(DiagnosticError):
    """A failure while lowering a (verified) program to LLVM IR."""


class PassError(DiagnosticError):
    """A pass found input it cannot transform (e.g. an ill-formed kernel for outlining)."""


class BackendError(NovaError):
    """LLVM, ptxas or object emission failed."""


class BundleFormatError(NovaError):
    """A .nova file that is truncated, corrupt, tampered with, or of another version or arch."""


class RuntimeFailure(NovaError):
    """A failure while running a program (device fault, failed copy, host-side assert)."""


class DeviceError(RuntimeFailure):
    """The device layer failed (no device, out of memory, invalid handle)."""


class CudaError(DeviceError):
    """A CUDA driver call failed; names the call, the CUDA error and, for launches, the kernel."""

    def __init__(self, call: str, error_name: str, code: int, detail: str = "",
                 kernel: str | None = None, context_lost: bool = False) -> None:
        self.call = call
        self.error_name = error_name
        self.code = code
        self.kernel = kernel
        self.context_lost = context_lost
        text = f"{call} failed: {error_name} ({code})"
        if kernel:
            text += f" in kernel @{kernel}"
        if detail:
            text += f": {detail}"
        if context_lost:
            text += (". The CUDA context is lost: device memory and modules of this process are "
                     "invalid; start a new process to use the GPU again.")
        super().__init__(text)


class KernelFault(RuntimeFailure):
    """A kernel trapped or failed an assertion (on the GPU or on the CPU device)."""


class OutOfMemoryError(DeviceError):
    """An allocation exceeded the device's memory or the pool's limit."""


CUDA_ERROR_OUT_OF_MEMORY = 2


class CudaOutOfMemoryError(CudaError, OutOfMemoryError):
    """The driver ran out of device memory (CUDA_ERROR_OUT_OF_MEMORY); also an OutOfMemoryError,
    so `except OutOfMemoryError` catches it whichever path (pool or compiled code) allocated."""


def cuda_error(call: str, error_name: str, code: int, detail: str = "",
               kernel: str | None = None, context_lost: bool = False) -> CudaError:
    """The CudaError subclass for a failed driver call (one place maps codes to classes)."""
    cls = CudaOutOfMemoryError if code == CUDA_ERROR_OUT_OF_MEMORY else CudaError
    return cls(call, error_name, code, detail, kernel=kernel, context_lost=context_lost)


class ArgumentError(NovaError, TypeError):
    """A Python call passed arguments of the wrong number, type, dtype, rank or shape."""


class ScalarConversionError(ArgumentError, ValueError, OverflowError):
    """`nova.int8(x)`, `nova.float32(x)`, ... on the host with a value the type cannot hold or
    convert (still a TypeError, ValueError or OverflowError, as NumPy's conversion raised)."""


class InputError(NovaError):
    """An input file that cannot be read or an output file that cannot be written."""

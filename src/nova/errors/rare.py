"""The rarer classes of Nova's error hierarchy, made on first use (see nova.errors).

They are errors of the compiler and the CUDA driver and host-side scalar conversions: nothing a
cached kernel's first call imports. Making a class is the costly
part of defining an exception (its type slots are looked up along the MRO), so `nova.errors`
creates these only when one is named: `from nova.errors import ParseError` and
`nova.errors.ParseError` load this module through the package's `__getattr__`. Each class names
`nova.errors` as its module, where it is documented, printed in tracebacks and found by pickle.
"""

from __future__ import annotations

from nova.errors import (
    ArgumentError,
    DeviceError,
    DiagnosticError,
    NovaError,
    OutOfMemoryError,
)


class ParseError(DiagnosticError):
    """Malformed MLIR text."""

    __module__ = "nova.errors"


class VerifyError(DiagnosticError):
    """Well-formed text that breaks an op's rules (types, operands, regions)."""

    __module__ = "nova.errors"


class UnsupportedError(DiagnosticError):
    """An op, type or attribute Nova does not compile (yet); names what is supported instead."""

    __module__ = "nova.errors"


class LoweringError(DiagnosticError):
    """A failure while lowering a (verified) program to LLVM IR."""

    __module__ = "nova.errors"


class PassError(DiagnosticError):
    """A pass found input it cannot transform (e.g. an ill-formed kernel for outlining)."""

    __module__ = "nova.errors"


class BackendError(NovaError):
    """LLVM, ptxas or object emission failed."""

    __module__ = "nova.errors"


class CudaError(DeviceError):
    """A CUDA driver call failed; names the call, the CUDA error and, for launches, the kernel."""

    __module__ = "nova.errors"

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


class CudaOutOfMemoryError(CudaError, OutOfMemoryError):
    """The driver ran out of device memory (CUDA_ERROR_OUT_OF_MEMORY); also an OutOfMemoryError,
    so `except OutOfMemoryError` catches it whichever path (pool or compiled code) allocated."""

    __module__ = "nova.errors"


class ScalarConversionError(ArgumentError, ValueError, OverflowError):
    """`nova.int8(x)`, `nova.float32(x)`, ... on the host with a value the type cannot hold or
    convert (still a TypeError, ValueError or OverflowError, as NumPy's conversion raised)."""

    __module__ = "nova.errors"

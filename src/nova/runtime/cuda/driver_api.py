"""The one checked wrapper over the CUDA driver API (cuda-bindings' `cuda.bindings.driver`).

Every driver call Nova makes goes through `CudaDriver.call`, which
- makes the device's primary context current on the calling thread (once per thread),
- turns a failed CUresult into `nova.errors.CudaError` naming the call, the CUDA error name and
  code, a detail (cuGetErrorString) and, for launches, the kernel,
- recognizes *sticky* errors (illegal address, launch failure, device assert, ...) that destroy the
  context: it marks the context lost, and every later call fails fast with one clear message
  ("start a new process") instead of a cascade of secondary failures from destructors.

`probe()` (nova.runtime.cuda.probe) answers, without raising, whether a usable CUDA device exists
(cuda-bindings missing, no libcuda, no device all mean "no", with the reason).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any

from nova.errors import cuda_error

# the probe behind the 'auto' device lives in nova.runtime.cuda.probe (which imports this module
# only where the driver library opens); its names are kept here
from nova.runtime.cuda.probe import (  # noqa: F401
    DRIVER_LIBRARY,
    CudaStatusProbe,
    driver_library_missing,
    probe,
)

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_OUT_OF_MEMORY = 2

STICKY_ERRORS: frozenset[int] = frozenset({
    214,  # CUDA_ERROR_ECC_UNCORRECTABLE
    700,  # CUDA_ERROR_ILLEGAL_ADDRESS
    702,  # CUDA_ERROR_LAUNCH_TIMEOUT
    710,  # CUDA_ERROR_ASSERT
    714,  # CUDA_ERROR_HARDWARE_STACK_ERROR
    715,  # CUDA_ERROR_ILLEGAL_INSTRUCTION
    716,  # CUDA_ERROR_MISALIGNED_ADDRESS
    717,  # CUDA_ERROR_INVALID_ADDRESS_SPACE
    718,  # CUDA_ERROR_INVALID_PC
    719,  # CUDA_ERROR_LAUNCH_FAILED
})
"""Errors after which the CUDA context is unusable for the rest of the process."""


def load_bindings() -> Any:
    """The cuda-bindings driver module (ImportError when cuda-bindings is not installed)."""
    from cuda.bindings import driver

    return driver


def _error_name(drv: Any, err: Any) -> str:
    try:
        return str(drv.CUresult(int(err)).name)
    except Exception:
        return f"CUDA error {int(err)}"


def _error_string(drv: Any, err: Any) -> str:
    try:
        res, text = drv.cuGetErrorString(drv.CUresult(int(err)))
        if int(res) == CUDA_SUCCESS and text:
            return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:
        pass
    return ""


class CudaDriver:
    """Checked access to the driver for one device's primary context.

    `call(name, *args)` calls `cuda.bindings.driver.<name>(*args)` and returns its results
    (None, one value, or a tuple). `raw` is the bindings module itself, for types and enums.
    """

    def __init__(self, raw: Any, label: str) -> None:
        self.raw = raw
        self.label = label
        self.context: Any = None  # the CUcontext, once retained
        self.context_lost = False
        self.lost_word = ctypes.c_int64(0)
        """`context_lost` as a native word (1 once lost), for native launch paths that check
        it without a Python attribute read (nova.runtime.cuda.py_checked); `mark_lost` sets
        both, and is the only way to lose the context."""
        self._lost_by: str = ""
        self._lost_error: tuple[str, int] = ("", 0)
        self._tls = threading.local()

    # --- the checked call ----------------------------------------------------------------------
    def call(self, name: str, *args: Any, kernel: str | None = None, current: bool = True,
             allow: tuple[int, ...] = ()) -> Any:
        """Call a driver function; raise CudaError on failure (codes in `allow` are returned as
        the first result instead, e.g. CUDA_ERROR_NOT_READY for queries)."""
        if self.context_lost:
            self.fail_fast(name, kernel)
        if current and self.context is not None:
            self.make_current()
        out = getattr(self.raw, name)(*args)
        return self._check(name, out, kernel, allow)

    def fail_fast(self, name: str, kernel: str | None = None) -> None:
        """Raise the CudaError of a call not attempted because the context is lost."""
        raise cuda_error(name, *self._lost_error,
                        f"not attempted: {self._lost_by} destroyed the context",
                        kernel=kernel, context_lost=True)

    def _check(self, name: str, out: Any, kernel: str | None, allow: tuple[int, ...]) -> Any:
        err = out[0]
        code = int(err)
        rest = out[1:]
        if code == CUDA_SUCCESS or code in allow:
            if allow:
                return (code, *rest)
            if not rest:
                return None
            return rest[0] if len(rest) == 1 else rest
        err_name = _error_name(self.raw, err)
        lost = code in STICKY_ERRORS
        if lost:
            where = f" in kernel @{kernel}" if kernel else ""
            self.mark_lost(f"an earlier {err_name} from {name}{where}", err_name, code)
        raise cuda_error(name, err_name, code, _error_string(self.raw, err), kernel=kernel,
                         context_lost=lost)

    def mark_lost(self, reason: str, error_name: str, code: int) -> None:
        """Record that a sticky error destroyed the context (`reason` names the call and kernel);
        later calls fail fast with that reason instead of reaching the driver."""
        self.context_lost = True
        self.lost_word.value = 1
        self._lost_by = reason
        self._lost_error = (error_name, code)

    @property
    def lost_reason(self) -> str:
        """What destroyed the context ('' while it is usable)."""
        return self._lost_by if self.context_lost else ""

    def make_current(self) -> None:
        """Bind this device's primary context to the calling thread (cheap when it already is)."""
        if getattr(self._tls, "context", None) is self.context:
            return
        self._check("cuCtxSetCurrent", self.raw.cuCtxSetCurrent(self.context), None, ())
        self._tls.context = self.context

    def quiet(self, name: str, *args: Any) -> None:
        """A call from a finalizer: skipped once the context is lost, errors swallowed."""
        if self.context_lost:
            return
        with contextlib.suppress(Exception):
            self.call(name, *args)

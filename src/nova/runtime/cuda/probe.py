"""Whether a usable CUDA device exists (`probe()`), without raising: cuda-bindings missing, no
driver library, no device all mean "no", with the reason.

A module of its own, apart from the driver wrapper (nova.runtime.cuda.driver_api): the 'auto'
device of every process asks it first, and where the driver library cannot be opened (a machine
without a GPU) the answer needs neither cuda-bindings (about 50 ms) nor the wrapper's module (a
cached kernel's cold start); both are imported only where the library opens.
"""

from __future__ import annotations

import _thread
from typing import Any

DRIVER_LIBRARY = "libcuda.so.1"
"""The driver library cuda-bindings opens (by the system's search, as dlopen does)."""


def driver_library_missing() -> str | None:
    """Why the CUDA driver library cannot be opened, or None when it can. The 'auto' device of
    a machine without a GPU asks this first: importing cuda-bindings costs a cold start about
    50 ms, only for cuInit to fail for want of the library."""
    import ctypes

    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError as exc:
        return f"OSError: {exc}"
    return None


class CudaStatusProbe:
    """Caches the result of probing for CUDA (the probe calls cuInit once)."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._result: Any = None

    def __call__(self) -> Any:
        from nova.runtime.selection import CudaStatus

        with self._lock:
            if self._result is None:
                self._result = self._probe(CudaStatus)
            return self._result

    @staticmethod
    def _probe(status: type) -> Any:
        missing = driver_library_missing()
        if missing is not None:  # cuInit could only fail: spare importing cuda-bindings (~50 ms)
            return status(False, 0, f"the CUDA driver library cannot be loaded ({missing})")
        from nova.runtime.cuda import driver_api

        try:
            drv = driver_api.load_bindings()
        except ImportError as exc:
            return status(False, 0, f"cuda-bindings is not installed ({exc}); install nova[cuda]")
        try:
            (err,) = drv.cuInit(0)
            if int(err) != driver_api.CUDA_SUCCESS:
                return status(False, 0, f"cuInit failed: {driver_api._error_name(drv, err)}")
            err, count = drv.cuDeviceGetCount()
            if int(err) != driver_api.CUDA_SUCCESS:
                return status(False, 0, f"cuDeviceGetCount failed: "
                                        f"{driver_api._error_name(drv, err)}")
        except Exception as exc:  # libcuda missing: cuda-bindings raises from its loader
            return status(False, 0, f"the CUDA driver library cannot be loaded "
                                    f"({type(exc).__name__}: {exc})")
        if count == 0:
            return status(False, 0, "the CUDA driver reports no device")
        return status(True, int(count), "")

    def reset(self) -> None:
        with self._lock:
            self._result = None


probe = CudaStatusProbe()

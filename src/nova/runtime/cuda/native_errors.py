"""The error path of the cuda device's native modules (nova.runtime.cuda.native): the callback
their code calls when a driver call fails, turning it into a recorded CudaError that names the
call, the error and the kernel.

Kept apart from nova.runtime.cuda.abi (which JIT-compiles the whole native ABI with llvmlite)
so that the launch module of Python kernels (nova.runtime.cuda.launch_module), placed by
objload from the cache, needs neither llvmlite nor the rest of the ABI.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from nova.errors import RuntimeFailure, cuda_error
from nova.runtime.native_support import record_error

STICKY_ERRORS: frozenset[int] = frozenset({214, 700, 702, 710, 714, 715, 716, 717, 718, 719})
"""CUresults after which the context is unusable (illegal address, trap, assert, ...)."""

ERROR_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p)
"""`void on_error(ptr call_name, i32 code, ptr function)`, what native code calls on failure."""

KERNEL_NAMES: dict[int, str] = {}
"""CUfunction -> kernel name, for error messages (written once per kernel, read on errors)."""


def remember_kernel_name(function: int, name: str) -> None:
    """Let native-path errors about CUfunction `function` name its kernel."""
    KERNEL_NAMES[function] = name


def error_name(code: int) -> str:
    """The CUresult's enum name (`CUDA_ERROR_ILLEGAL_ADDRESS`), without needing a GPU."""
    try:
        from cuda.bindings import driver

        return str(driver.CUresult(code).name)
    except Exception:
        return f"CUDA_ERROR_{code}"


def report(device: Any, call: bytes, code: int, function: int | None,
           last_function: int | None) -> None:
    """Record a failed driver call as a CudaError (the native error path's only Python). A fault
    found by a later call (a synchronization) names the latest launched kernel, and says the
    fault may be in work enqueued before it (one host wait covers a chain of launches)."""
    try:
        name = call.decode() if isinstance(call, bytes) else str(call)
        kernel = KERNEL_NAMES.get(function or 0) if function else None
        lost = code in STICKY_ERRORS
        driver = getattr(device, "driver", None)
        latest = (f"@{KERNEL_NAMES.get(last_function, hex(last_function))}" if last_function
                  else "")
        detail = ""
        if lost and driver is not None and driver.lost_reason:
            # a later call of a program after the fault: say so, not "the fault was found here"
            detail = f"the CUDA context was already lost: {driver.lost_reason} destroyed it"
        elif kernel is not None and lost and name.startswith("cuLaunch") \
                and os.environ.get("CUDA_LAUNCH_BLOCKING") != "1":
            # launches are asynchronous: a sticky error they return is an earlier fault's
            detail = ("the fault is in GPU work enqueued before this launch, found when "
                      "launching it")
        elif kernel is None and lost and latest:
            # host waits are deferred to the end of a chain of GPU ops (docs/async.md): the
            # fault may be in an earlier kernel of the chain, which the driver does not name
            detail = (f"the fault was found here; the latest kernel launched was {latest} (the "
                      f"fault is in it or in GPU work enqueued before it)")
        record_error(cuda_error(name, error_name(code), code, detail, kernel=kernel,
                                context_lost=lost))
        if lost and driver is not None and not driver.context_lost:
            where = (f" when launching @{kernel} (the fault is in GPU work enqueued before it)"
                     if kernel and detail
                     else f" in kernel @{kernel}" if kernel
                     else f" (the latest kernel launched was {latest})" if latest else "")
            driver.mark_lost(f"an earlier {error_name(code)} from {name}{where}",
                             error_name(code), code)
    except BaseException as exc:  # never unwind through C frames
        record_error(RuntimeFailure(f"a CUDA driver call failed ({code}); reporting it failed "
                                    f"too: {exc}"))


def error_callback(device: Any, last: list[int]) -> Any:
    """The ctypes callback for a native module of `device` (keep it alive as long as the
    module): `last` gets the address of the module's last-launched-function global once it is
    placed."""

    def on_error(call: int | None, code: int, function: int | None) -> None:
        last_function = ctypes.c_void_p.from_address(last[0]).value if last else None
        report(device, ctypes.string_at(call) if call else b"?", code, function, last_function)

    return ERROR_CALLBACK_TYPE(on_error)

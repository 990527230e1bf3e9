"""Host callbacks on cuda streams: `cuLaunchHostFunc` with one process-wide trampoline.

The trampoline is a C-callable ctypes function pointer called through libcuda directly (not through
cuda-bindings). The driver runs it on one of *its* threads, where no CUDA call is allowed, so it
only hands the callback over to Nova's dispatcher thread (nova.runtime.callbacks) and returns at
once: the stream is held up for microseconds, never for the callback itself.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from nova.errors import DeviceError
from nova.runtime.callbacks import dispatcher
from nova.runtime.cuda.native_errors import error_name
from nova.runtime.stream import Stream

_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_pending: dict[int, tuple[Callable[[], Any], Future]] = {}
_pending_lock = threading.Lock()
_tokens = itertools.count(1)
_libcuda: ctypes.CDLL | None = None


def _trampoline(user_data: int | None) -> None:
    """Runs on a CUDA driver thread: no CUDA calls here, only the hand-over."""
    try:
        with _pending_lock:
            item = _pending.pop(user_data or 0, None)
        if item is not None:
            dispatcher.post(item[0], item[1], None)
    except BaseException:  # never unwind into the driver
        pass


_TRAMPOLINE = _HOST_FN(_trampoline)


def _cuda_library() -> ctypes.CDLL:
    global _libcuda
    if _libcuda is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise DeviceError(f"cannot load libcuda.so.1 for host callbacks: {exc}") from None
        lib.cuLaunchHostFunc.restype = ctypes.c_int
        lib.cuLaunchHostFunc.argtypes = (ctypes.c_void_p, _HOST_FN, ctypes.c_void_p)
        _libcuda = lib
    return _libcuda


def add_host_callback(stream: Stream, fn: Callable[[], Any], future: Future) -> None:
    device: Any = stream.device
    live = getattr(stream, "_live", None)
    if live is not None:
        live()  # raises DeviceError for a closed stream
    if device.driver.context_lost:
        raise DeviceError(f"cannot add a callback to {stream!r}: the CUDA context is lost")
    token = next(_tokens)
    with _pending_lock:
        _pending[token] = (fn, future)
    device.driver.make_current()
    code = _cuda_library().cuLaunchHostFunc(stream.handle, _TRAMPOLINE, token)
    if code != 0:
        with _pending_lock:
            _pending.pop(token, None)
        raise DeviceError(f"cuLaunchHostFunc on {stream!r} failed: {error_name(code)} ({code})")

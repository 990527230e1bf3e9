"""The launch module of Python kernels on a cuda device: `nova_cuda_launch_packed` and
`nova_rt_launch` (nova.runtime.cuda.native.launch_ir), bound to one device's context and
default stream.

The module's x86-64 object is compiled once with llvmlite and kept in `<cache_dir>/runtime/`
(`objload.compiled_ir`), then placed by `nova.runtime.objload` with the driver entry points
bound by name (`cuCtxGetCurrent`, `cuCtxSetCurrent`, `cuLaunchKernel` from libcuda, or a test's
substitutes): a process's first kernel launch neither imports llvmlite nor JIT-compiles the
module. An object objload cannot place falls back to MCJIT (nova.runtime.cuda.abi.launch_engine).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from typing import Any

from nova.errors import DeviceError
from nova.runtime.cuda import py_checked, py_launch
from nova.runtime.cuda.native import (
    CONTEXT_GLOBAL,
    DEFAULT_STREAM_GLOBAL,
    ERROR_CALLBACK_GLOBAL,
    LAST_FUNCTION_GLOBAL,
    LAUNCH_DRIVER_FUNCTIONS,
    LAUNCH_PACKED,
    launch_ir,
)
from nova.runtime.cuda.native_errors import error_callback
from nova.runtime.cuda.py_launch import PY_API_GLOBAL, PY_LAUNCH, LaunchBuiltins

DRIVER_LIBRARY = "libcuda.so.1"


class NativeLaunch:
    """The placed launch module of one device: `launch_packed` is the address of
    `nova_cuda_launch_packed`; `engine` owns its code (an objload `LoadedObject`, or an MCJIT
    engine), `on_error` its ctypes error callback (both kept alive here); `builtins` makes its
    Python-callable launches (nova.runtime.cuda.py_launch; None where they cannot be made)."""

    __slots__ = ("builtins", "engine", "launch_packed", "on_error")

    def __init__(self, engine: object, launch_packed: int, on_error: Any,
                 builtins: LaunchBuiltins | None = None) -> None:
        self.engine = engine
        self.launch_packed = launch_packed
        self.on_error = on_error
        self.builtins = builtins


def _driver_symbols() -> dict[str, int]:
    """The launch module's driver entry points in libcuda, by name."""
    try:
        library = ctypes.CDLL(DRIVER_LIBRARY)
    except OSError as exc:
        raise DeviceError(f"cannot load the CUDA driver library {DRIVER_LIBRARY}: {exc}") from None
    symbols = {}
    for name in LAUNCH_DRIVER_FUNCTIONS:
        try:
            symbols[name] = ctypes.cast(getattr(library, name), ctypes.c_void_p).value or 0
        except AttributeError:
            raise DeviceError(f"{DRIVER_LIBRARY} has no {name}") from None
    return symbols


def _placed(prefix: str, symbols: Mapping[str, int]) -> tuple[object, Callable[[str], int]] | None:
    """(owner, address of a symbol) of the module placed by objload, or None when objload cannot
    place it."""
    from nova.bundle.verify import verify_object
    from nova.errors import BundleFormatError
    from nova.runtime.objload import LoadedObject, ObjectLoadError, compiled_ir

    name = "cuda-launch"
    try:
        loaded = LoadedObject(verify_object(compiled_ir(name, launch_ir(prefix)), name), name,
                              symbols)
    except (ObjectLoadError, BundleFormatError):
        return None
    return loaded, loaded.address


def compile_launch(device: Any, prefix: str = "",
                   driver_symbols: Mapping[str, int] | None = None) -> NativeLaunch:
    """The launch module for `device` (its context and default stream set), bound to libcuda,
    or to `driver_symbols` (`<prefix>cuX` -> address) in tests."""
    if driver_symbols is not None:
        missing = [n for n in LAUNCH_DRIVER_FUNCTIONS if prefix + n not in driver_symbols]
        if missing:
            raise DeviceError(f"driver symbols missing: {', '.join(missing)}")
        symbols = dict(driver_symbols)
    else:
        symbols = _driver_symbols()
    placed = _placed(prefix, symbols)
    if placed is None:
        from nova.runtime.cuda.abi import launch_engine

        engine: Any = launch_engine(prefix, driver_symbols)
        placed = engine, lambda name: int(engine.get_global_value_address(name))
    owner, address_of = placed
    last: list[int] = [address_of(LAST_FUNCTION_GLOBAL)]
    on_error = error_callback(device, last)
    for name, value in ((ERROR_CALLBACK_GLOBAL, ctypes.cast(on_error, ctypes.c_void_p).value),
                        (CONTEXT_GLOBAL, device.context_handle),
                        (DEFAULT_STREAM_GLOBAL, device.default_stream.handle)):
        address = address_of(name)
        if not address:
            raise DeviceError(f"the cuda launch module has no {name}")
        ctypes.c_void_p.from_address(address).value = value or None
    launch_packed = address_of(LAUNCH_PACKED)
    if not launch_packed:
        raise DeviceError(f"the cuda launch module has no {LAUNCH_PACKED}")
    native = NativeLaunch(owner, launch_packed, on_error)
    if py_launch.available():
        checked = None
        if py_checked.available():
            checked = (address_of(py_checked.CHECKED_API_GLOBAL), address_of(py_checked.PY_CHECKED))
        native.builtins = LaunchBuiltins(native, address_of(PY_API_GLOBAL), address_of(PY_LAUNCH),
                                         checked)
    return native

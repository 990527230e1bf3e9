"""The cuda device's launcher: one native call per launch, no Python in between.

The packed parameter slots (a `bytes` object), the configuration's header words and the stream
handle go to `nova_cuda_launch_packed` of the device's native ABI module
(nova.runtime.cuda.native), which makes the context current, builds the `void**` parameter array
on its stack, range-checks the dimensions and calls cuLaunchKernel, reporting a failure through
the native error path: the `CudaError` raised here names the call, the CUDA error and the kernel,
as `Device.launch`'s do. The driver copies the parameter values during cuLaunchKernel, and the
bytes belong to the launch alone, so concurrent launches need no lock.

The call itself goes through a launch builtin (nova.runtime.cuda.py_launch: the native function
bound to the configuration and stream, called like any builtin, ~0.1 us) where the device has
them, else through a ctypes call (~0.4 us more). Prepared launches and launches on the default
stream use builtins made once per configuration; a launch on another stream outside a prepared
launch takes the ctypes call (making a builtin costs more than that call).
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, cast

from nova.errors import cuda_error
from nova.runtime.checked import CheckedSpec
from nova.runtime.cuda import py_checked
from nova.runtime.cuda.native_errors import remember_kernel_name
from nova.runtime.cuda.stream import CudaStream
from nova.runtime.launcher import MAX_CONFIGS, LaunchConfig, Launcher
from nova.runtime.native_support import take_error

if TYPE_CHECKING:
    from nova.runtime.cuda.device import CudaDevice
    from nova.runtime.cuda.py_launch import LaunchBuiltins
    from nova.runtime.device import DeviceFunction
    from nova.runtime.stream import Stream

_FIXED = struct.Struct("<QQ")
_STREAM = struct.Struct("<Q")

PACKED_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int32)
"""`i32 nova_cuda_launch_packed(fixed, header, stream, slots)`, declared without argument types:
ctypes then converts nothing but passes `bytes` as pointers to their data (no copy), None as
null and ctypes objects as they are, which costs about half of a call with declared argtypes
(~0.25 us per launch). So every other argument is a prebuilt `c_void_p`: an undeclared Python
int would go as a 32-bit C int. Like any ctypes foreign call it releases the GIL:
cuLaunchKernel may block while the launch queue is full."""


class CudaLauncher(Launcher):
    """See the module docstring. `builtins` (None: ctypes calls only) makes the launch
    builtins (nova.runtime.cuda.py_launch) of bound and inlined launches and of launches on
    the default stream."""

    device: CudaDevice

    def __init__(self, device: CudaDevice, function: DeviceFunction, slot_format: str,
                 native_launch: int, builtins: LaunchBuiltins | None = None) -> None:
        super().__init__(device, function, slot_format)
        remember_kernel_name(function.handle, self.name)  # for the native path's errors
        self._fixed = (ctypes.c_uint64 * 2)(function.handle, self.slot_count)
        self._fixed_address = ctypes.c_void_p(ctypes.addressof(self._fixed))
        self._native = PACKED_LAUNCH(native_launch)
        self._builtins = builtins
        self._on_default: dict[LaunchConfig, Callable[[bytes], int]] = {}
        self._driver = device.driver
        self._default = device.default_stream

    def _check_config(self, config: LaunchConfig) -> None:
        self.device.opt_in_shared(self.function, config.shared_bytes)

    def _failed(self, status: int) -> NoReturn:
        error = take_error()
        raise error if error is not None else cuda_error(
            "cuLaunchKernel", "CUDA_ERROR_UNKNOWN", 999, "the failure reported nothing",
            kernel=self.name)

    def _builtin(self, config: LaunchConfig,
                 stream: Stream | None) -> Callable[[bytes], int] | None:
        """The launch builtin of `config` on `stream` (None: the default stream, whose
        builtins are kept per configuration), or None without builtins."""
        builtins = self._builtins
        if builtins is None:
            return None
        found = self._on_default.get(config) if stream is None else None
        if found is None:
            handle = 0 if stream is None or stream is self._default else stream.handle
            record = _FIXED.pack(self.function.handle, self.slot_count) + config.header
            found = builtins.make(record + _STREAM.pack(handle))
            if stream is None:
                if len(self._on_default) >= MAX_CONFIGS:
                    self._on_default.clear()
                self._on_default[config] = found
        return found

    def launch(self, config: LaunchConfig, stream: Stream | None, slots: bytes) -> None:
        if stream is None:
            s, handle = self._default, None  # null: the native module's default stream
        else:
            s = self.stream(stream)
            handle = ctypes.c_void_p(s.handle)
        if self._driver.context_lost:
            self._driver.fail_fast("cuLaunchKernel", self.name)
        call = self._builtin(config, None) if stream is None else None
        if call is not None:
            status = call(slots)
        else:
            status = self._native(self._fixed_address, config.header, handle, slots)
        if status:
            self._failed(status)
        s.last_kernel = self.name  # type: ignore[attr-defined]  # a CudaStream

    def bind(self, config: LaunchConfig, stream: Stream | None) -> Callable[[bytes], None]:
        lines, env = self.inline_launch(config, stream)
        source = "\n".join(["def bound(slots):", *("    " + line for line in lines), ""])
        exec(compile(source, "<nova bound launch>", "exec"), env)  # our own statements
        return cast("Callable[[bytes], None]", env["bound"])

    def inline_launch(self, config: LaunchConfig,
                      stream: Stream | None) -> tuple[list[str], dict[str, object]]:
        """The launch as statements (see Launcher.inline_launch): the fail-fast checks, one
        call of the launch builtin (or, without one, the ctypes call), the status check."""
        s = self._default if stream is None else self.stream(stream)
        assert isinstance(s, CudaStream)
        env: dict[str, object] = {
            "_L_driver": self._driver, "_L_stream": s, "_L_name": self.name,
            "_L_failed": self._failed, "_L_relaunch": self.launch, "_L_config": config,
            "_L_user_stream": stream}
        call = self._builtin(config, None if stream is None else s)
        if call is not None:
            env["_L_call"] = call
            launch = "_L_status = _L_call(slots)"
        else:
            env.update(_L_native=self._native, _L_fixed=self._fixed_address,
                       _L_header=config.header,
                       _L_handle=None if stream is None else ctypes.c_void_p(s.handle))
            launch = "_L_status = _L_native(_L_fixed, _L_header, _L_handle, slots)"
        # the default stream cannot be closed (CudaStream.close refuses): no test for it
        live = "_L_driver.context_lost" + ("" if s is self._default else " or _L_stream._closed")
        lines = [
            f"if {live}:",
            "    _L_relaunch(_L_config, _L_user_stream, slots)  # raises the launch's error",
            "    return None",
            launch,
            "if _L_status:",
            "    _L_failed(_L_status)",
            "_L_stream.last_kernel = _L_name"]
        return lines, env

    def checked_call(self, config: LaunchConfig, stream: Stream | None,
                     spec: CheckedSpec) -> Callable[..., object] | None:
        """A checked launch builtin (nova.runtime.cuda.py_checked) of `spec` with `config` on
        `stream` (checked now), or None where there are none or `spec` has too many slots."""
        builtins = self._builtins
        count = spec.slot_count()
        lost_word = getattr(self._driver, "lost_word", None)  # a substitute driver may lack it
        if (builtins is None or lost_word is None or count != self.slot_count
                or count > py_checked.MAX_SLOTS):
            return None
        s = self._default if stream is None else self.stream(stream)
        handle = 0 if s is self._default else s.handle
        head = (_FIXED.pack(self.function.handle, self.slot_count) + config.header
                + _STREAM.pack(handle))
        rec = py_checked.record(head, spec, s is not self._default, ctypes.addressof(lost_word))
        return builtins.make_checked(py_checked.objects(rec, spec, self._failed, self._driver,
                                                        s, self.name))

    def native_call(self, config: LaunchConfig,
                    slots: bytes) -> tuple[Callable[..., int], tuple[object, ...]]:
        """The native call (function, arguments) a launch of packed `slots` with `config` on
        the default stream makes, checks and bookkeeping left out: the floor of a launch's host
        cost (bench/launch_overhead.py's host section)."""
        call = self._builtin(config, None)
        if call is not None:
            return call, (slots,)
        return self._native, (self._fixed_address, config.header, None, slots)

"""The cuda device's launcher: one native call per launch, no Python in between.

The packed parameter slots (a `bytes` object), the configuration's header words and the stream
handle go to `nova_cuda_launch_packed` of the device's native ABI module
(nova.runtime.cuda.native), which makes the context current, builds the `void**` parameter array
on its stack, range-checks the dimensions and calls cuLaunchKernel, reporting a failure through
the native error path: the `CudaError` raised here names the call, the CUDA error and the kernel,
as `Device.launch`'s do. The driver copies the parameter values during cuLaunchKernel, and the
bytes belong to the launch alone, so concurrent launches need no lock.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from nova.errors import cuda_error
from nova.runtime.cuda.native_errors import remember_kernel_name
from nova.runtime.launcher import LaunchConfig, Launcher
from nova.runtime.native_support import take_error

if TYPE_CHECKING:
    from nova.runtime.cuda.device import CudaDevice
    from nova.runtime.device import DeviceFunction
    from nova.runtime.stream import Stream

PACKED_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int32)
"""`i32 nova_cuda_launch_packed(fixed, header, stream, slots)`, declared without argument types:
ctypes then converts nothing but passes `bytes` as pointers to their data (no copy), None as
null and ctypes objects as they are, which costs about half of a call with declared argtypes
(~0.25 us per launch). So every other argument is a prebuilt `c_void_p`: an undeclared Python
int would go as a 32-bit C int. Like any ctypes foreign call it releases the GIL:
cuLaunchKernel may block while the launch queue is full."""


class CudaLauncher(Launcher):
    """See the module docstring."""

    device: CudaDevice

    def __init__(self, device: CudaDevice, function: DeviceFunction, slot_format: str,
                 native_launch: int) -> None:
        super().__init__(device, function, slot_format)
        remember_kernel_name(function.handle, self.name)  # for the native path's errors
        self._fixed = (ctypes.c_uint64 * 2)(function.handle, self.slot_count)
        self._fixed_address = ctypes.c_void_p(ctypes.addressof(self._fixed))
        self._native = PACKED_LAUNCH(native_launch)
        self._driver = device.driver
        self._default = device.default_stream

    def _check_config(self, config: LaunchConfig) -> None:
        self.device.opt_in_shared(self.function, config.shared_bytes)

    def _failed(self, status: int) -> NoReturn:
        error = take_error()
        raise error if error is not None else cuda_error(
            "cuLaunchKernel", "CUDA_ERROR_UNKNOWN", 999, "the failure reported nothing",
            kernel=self.name)

    def launch(self, config: LaunchConfig, stream: Stream | None, slots: bytes) -> None:
        if stream is None:
            s, handle = self._default, None  # null: the native module's default stream
        else:
            s = self.stream(stream)
            handle = ctypes.c_void_p(s.handle)
        if self._driver.context_lost:
            self._driver.fail_fast("cuLaunchKernel", self.name)
        status = self._native(self._fixed_address, config.header, handle, slots)
        if status:
            self._failed(status)
        s.last_kernel = self.name  # type: ignore[attr-defined]  # a CudaStream

    def bind(self, config: LaunchConfig, stream: Stream | None) -> Callable[[bytes], None]:
        s = self._default if stream is None else self.stream(stream)
        handle = None if stream is None else ctypes.c_void_p(s.handle)
        native, fixed, header = self._native, self._fixed_address, config.header
        driver, name, failed = self._driver, self.name, self._failed

        def bound(slots: bytes) -> None:
            if driver.context_lost or s.closed:
                self.launch(config, stream, slots)  # raises the error a launch would
                return
            status = native(fixed, header, handle, slots)
            if status:
                failed(status)
            s.last_kernel = name  # type: ignore[attr-defined]  # a CudaStream

        return bound

    def inline_launch(self, config: LaunchConfig,
                      stream: Stream | None) -> tuple[list[str], dict[str, object]]:
        """`bound`'s body as statements (see Launcher.inline_launch)."""
        s = self._default if stream is None else self.stream(stream)
        handle = None if stream is None else ctypes.c_void_p(s.handle)
        env: dict[str, object] = {
            "_L_native": self._native, "_L_fixed": self._fixed_address,
            "_L_header": config.header, "_L_handle": handle, "_L_driver": self._driver,
            "_L_stream": s, "_L_name": self.name, "_L_failed": self._failed,
            "_L_relaunch": self.launch, "_L_config": config, "_L_user_stream": stream}
        lines = [
            "if _L_driver.context_lost or _L_stream.closed:",
            "    _L_relaunch(_L_config, _L_user_stream, slots)  # raises the launch's error",
            "    return None",
            "_L_status = _L_native(_L_fixed, _L_header, _L_handle, slots)",
            "if _L_status:",
            "    _L_failed(_L_status)",
            "_L_stream.last_kernel = _L_name"]
        return lines, env

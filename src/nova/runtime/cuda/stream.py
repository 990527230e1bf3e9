"""cuda streams and events over the driver API (non-blocking streams, never the legacy stream).

Handles are released by weakref finalizers through `CudaDriver.quiet`, which does nothing once the
context is lost, so a device fault produces one error rather than a cascade from destructors.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from nova.errors import DeviceError
from nova.runtime.cuda.driver_api import CUDA_ERROR_NOT_READY, CUDA_SUCCESS
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from nova.runtime.cuda.device import CudaDevice


class _OwnedDriverHandle:
    """The driver-handle ownership CudaStream and CudaEvent share.

    `_own` keeps the bindings handle as `.cu` and its integer value as `handle`, and registers a
    finalizer that releases it through `CudaDriver.quiet` (not at interpreter exit); `_live`
    returns `.cu`, refusing a closed handle with a DeviceError that names `what` it is.
    """

    cu: Any
    _handle: int
    _closed: bool
    _what: str
    _finalizer: weakref.finalize

    def _own(self, driver: Any, cu: Any, destroy: str, what: str) -> None:
        self.cu = cu
        self._handle = int(cu)
        self._what = what
        self._closed = False
        self._finalizer = weakref.finalize(self, driver.quiet, destroy, cu)
        self._finalizer.atexit = False

    @property
    def handle(self) -> int:
        return self._handle

    def _live(self) -> Any:
        if self._closed:
            raise DeviceError(f"use of a closed {self._what} {self._handle:#x}")
        return self.cu


class CudaStream(_OwnedDriverHandle, Stream):
    """A CUstream created with CU_STREAM_NON_BLOCKING. `.cu` is the bindings handle."""

    device: CudaDevice

    def __init__(self, device: CudaDevice) -> None:
        super().__init__(device)
        drv = device.driver
        flags = int(drv.raw.CUstream_flags.CU_STREAM_NON_BLOCKING)
        self._own(drv, drv.call("cuStreamCreate", flags), "cuStreamDestroy", "stream")
        self.last_kernel: str | None = None

    def synchronize(self) -> None:
        self.device.driver.call("cuStreamSynchronize", self._live(), kernel=self.last_kernel)

    def query(self) -> bool:
        (code,) = self.device.driver.call("cuStreamQuery", self._live(), kernel=self.last_kernel,
                                          allow=(CUDA_ERROR_NOT_READY,))
        return code == CUDA_SUCCESS

    def wait(self, event: Event) -> None:
        if not isinstance(event, CudaEvent) or event.device is not self.device:
            raise DeviceError(f"{event!r} is not an event of {self.device!r}")
        self.device.driver.call("cuStreamWaitEvent", self._live(), event._live(), 0)

    def close(self) -> None:
        if self._closed:
            return
        if self is self.device._default_stream:
            raise DeviceError("the device's default stream cannot be closed")
        try:
            self.synchronize()
            self.device.pool.forget_stream(self.pool_key)
        finally:
            self._closed = True
            self._finalizer()

    @property
    def closed(self) -> bool:
        return self._closed


class CudaEvent(_OwnedDriverHandle, Event):
    """A CUevent (CU_EVENT_DISABLE_TIMING unless `timing`). `.cu` is the bindings handle."""

    device: CudaDevice

    def __init__(self, device: CudaDevice, timing: bool) -> None:
        super().__init__(device, timing)
        drv = device.driver
        flags = 0 if timing else int(drv.raw.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        self._own(drv, drv.call("cuEventCreate", flags), "cuEventDestroy", "event")
        self._recorded = False

    def record(self, stream: Stream | None = None) -> Event:
        s = self.device._stream(stream)
        assert isinstance(s, CudaStream)
        self.device.driver.call("cuEventRecord", self._live(), s._live())
        self._recorded = True
        return self

    def query(self) -> bool:
        (code,) = self.device.driver.call("cuEventQuery", self._live(),
                                          allow=(CUDA_ERROR_NOT_READY,))
        return code == CUDA_SUCCESS

    def synchronize(self) -> None:
        self.device.driver.call("cuEventSynchronize", self._live())

    def elapsed_ms(self, other: Event) -> float:
        if not isinstance(other, CudaEvent) or other.device is not self.device:
            raise DeviceError(f"{other!r} is not an event of {self.device!r}")
        if not (self.timing and other.timing):
            raise DeviceError("elapsed_ms needs events created with timing=True")
        if not (self._recorded and other._recorded):
            raise DeviceError("elapsed_ms: an event was never recorded")
        if not (self.query() and other.query()):
            raise DeviceError("elapsed_ms: an event has not completed yet")
        return float(self.device.driver.call("cuEventElapsedTime", self._live(), other._live()))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._finalizer()

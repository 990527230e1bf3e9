"""Device selection: which `Device` a name, NOVA_DEVICE or the automatic choice means.

`get_device("cuda"|"cuda:N"|"gpu"|"cpu"|"auto")` returns the process-wide device of that kind,
creating it on first use from its device package (`nova.runtime.cuda`, `nova.runtime.cpu`): this
module is the one place in the shared runtime that names them. The default ('auto', or
NOVA_DEVICE) is cuda when a GPU is usable, else cpu; `devices()` lists every usable device.
"""

from __future__ import annotations

import _thread
import warnings

from nova import config
from nova.errors import ArgumentError, DeviceError
from nova.records import Record
from nova.runtime.device import Device, DeviceKind

_devices: dict[tuple[DeviceKind, int], Device] = {}
_devices_lock = _thread.allocate_lock()


class CudaStatus(Record):
    """Whether the CUDA driver is usable here and, if not, why."""

    __match_args__ = ("usable", "device_count", "reason")
    _fields = __match_args__

    usable: bool
    device_count: int
    reason: str

    def __init__(self, usable: bool, device_count: int, reason: str) -> None:
        object.__setattr__(self, "usable", usable)
        object.__setattr__(self, "device_count", device_count)
        object.__setattr__(self, "reason", reason)


def cuda_status() -> CudaStatus:
    """Probe (once) for a usable CUDA driver and device; never raises."""
    from nova.runtime.cuda.probe import probe  # not driver_api: see that module

    return probe()


_SPELLINGS = {"cuda": DeviceKind.CUDA, "gpu": DeviceKind.CUDA, "cpu": DeviceKind.CPU}


def _parse_spec(spec: str) -> tuple[DeviceKind, int | None]:
    text = spec.strip().lower()
    name, _, idx = text.partition(":")
    if name in ("", "auto"):
        kind = DeviceKind.CUDA if cuda_status().usable else DeviceKind.CPU
    elif name in _SPELLINGS:
        kind = _SPELLINGS[name]
    else:
        raise DeviceError(f"unknown device {spec!r}: use 'cuda', 'cuda:N', 'cpu' or 'auto'")
    if not idx:
        return kind, None
    if not idx.isdigit():
        raise DeviceError(f"bad device index in {spec!r}")
    return kind, int(idx)


def get_device(spec: str | Device | None = None) -> Device:
    """The device named by `spec` ('cuda', 'cuda:1', 'cpu', 'auto'), NOVA_DEVICE when None.

    Devices are process-wide singletons. Asking for cuda where no GPU is usable raises DeviceError
    with the reason; 'auto' (the default) falls back to cpu.
    """
    if isinstance(spec, Device):
        return spec
    if spec is None:
        spec = config.get().device or "auto"
    if not isinstance(spec, str):
        raise ArgumentError(f"device must be a str or Device, got {type(spec).__name__}")
    auto = spec.strip().lower() in ("", "auto")
    kind, index = _parse_spec(spec)
    index = index or 0
    with _devices_lock:
        device = _devices.get((kind, index))
        if device is None:
            try:
                device = _create(kind, index)
            except DeviceError as exc:
                if not (auto and kind is DeviceKind.CUDA):
                    raise
                # 'auto': a GPU that is present but cannot be initialized means cpu
                warnings.warn(f"cuda:{index} is unusable ({exc}); using the cpu device",
                              RuntimeWarning, stacklevel=2)
                return _cpu_locked()
            _devices[(kind, index)] = device
        return device


def _cpu_locked() -> Device:
    device = _devices.get((DeviceKind.CPU, 0))
    if device is None:
        device = _devices[(DeviceKind.CPU, 0)] = _create(DeviceKind.CPU, 0)
    return device


def _create(kind: DeviceKind, index: int) -> Device:
    if kind is DeviceKind.CPU:
        if index != 0:
            raise DeviceError(f"there is one cpu device (cpu:0), not cpu:{index}")
        from nova.runtime.cpu.device import CpuDevice

        return CpuDevice()
    status = cuda_status()
    if not status.usable:
        raise DeviceError(f"no usable CUDA device: {status.reason}")
    if index >= status.device_count:
        raise DeviceError(f"cuda:{index} does not exist ({status.device_count} CUDA "
                          f"device(s) found)")
    from nova.runtime.cuda.device import CudaDevice

    return CudaDevice(index)


def devices() -> list[Device]:
    """Every usable device: the CUDA GPUs (if any) then the cpu device."""
    status = cuda_status()
    found = [get_device(f"cuda:{i}") for i in range(status.device_count if status.usable else 0)]
    return [*found, get_device("cpu")]

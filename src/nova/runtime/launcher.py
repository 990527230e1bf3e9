"""Launchers: one kernel function prepared for many launches with a fixed parameter layout.

`Device.launch` validates everything on every call and accepts parameters in several forms.
A launch loop of Python kernels needs less: its parameters always have the same layout (8-byte
slots, one per expanded kernel parameter, nova.abi's order) and usually the same configuration.
A `Launcher` (from `Device.launcher(function, slot_format)`) keeps

- `pack`: the `struct` packer of the slots. A launch's parameters are one `bytes` object
  (`pack(*values)`, which also range-checks them: `pack_error` turns its struct.error, or its
  OverflowError for a float beyond float32's or float16's range, into an
  ArgumentError). Nothing is shared between launches, so launchers need no lock;
- the configurations it has validated (`config`): `Device.check_launch` runs once per distinct
  (grid, block, shared_bytes), later launches find the checked `LaunchConfig` in a dict; a
  config also holds its words gx, gy, gz, bx, by, bz, shared_bytes packed as `header` bytes.

`launch(config, stream, slots)` launches (`launch_sync` when the caller synchronizes the stream
next, so a device may run it on the calling thread); `bind(config, stream)` returns a function of
`slots` alone for a fixed configuration and stream; `inline_launch(config, stream)` returns the same
launch as Python statements on a variable `slots` (with their globals), which prepared launches
paste into their generated call so a launch runs one Python frame. This base class copies the
slots into a parameter array and hands it to the device's `_launch` (checks done, nothing
converted); the cuda device's launcher passes the bytes to one native function that calls
cuLaunchKernel (nova.runtime.cuda.launcher); the cpu device's enqueues the blocks.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from nova.errors import ArgumentError, DeviceError
from nova.records import MutableRecord

if TYPE_CHECKING:
    from nova.runtime.checked import CheckedSpec
    from nova.runtime.device import Device, DeviceFunction, Dim3
    from nova.runtime.stream import Stream


class PackedParams(MutableRecord):
    """An owned parameter array: `address` is the void** to hand to the kernel (made by
    nova.runtime.launch_params.pack_params, and by the cpu device's launcher from its slots:
    here, so that a cached kernel's first launch does not import launch_params)."""

    __match_args__ = ("storage", "pointers", "count")
    _fields = __match_args__

    storage: ctypes.Array
    pointers: ctypes.Array
    count: int

    def __init__(self, storage: ctypes.Array, pointers: ctypes.Array, count: int) -> None:
        self.storage = storage
        self.pointers = pointers
        self.count = count

    @property
    def address(self) -> int:
        return ctypes.addressof(self.pointers)


HEADER = struct.Struct("<7q")
"""A config's header words: gx, gy, gz, bx, by, bz, shared_bytes."""
MAX_CONFIGS = 256
"""Validated configurations kept per launcher (the dict is emptied when it is full)."""
MAX_SHARED_BYTES = 0xFFFFFFFF


class LaunchConfig:
    """A validated launch configuration: shapes, dynamic shared bytes, the packed header words
    and the thread count."""

    __slots__ = ("block", "grid", "header", "shared_bytes", "threads")

    def __init__(self, grid: Dim3, block: Dim3, shared_bytes: int) -> None:
        self.grid, self.block, self.shared_bytes = grid, block, shared_bytes
        self.header = HEADER.pack(*grid, *block, shared_bytes)
        self.threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]


def _plain_ints(value: object) -> bool:
    """Whether a grid/block value is an int or a tuple of ints (no bools, NumPy integers or
    lists): only those are looked up in the config cache, as `True == 1` would find `1`'s."""
    if type(value) is int:
        return True
    return type(value) is tuple and all(type(d) is int for d in value)


class Launcher:
    """See the module docstring."""

    def __init__(self, device: Device, function: DeviceFunction, slot_format: str) -> None:
        self.device = device
        self.function = function
        self.name = function.name
        slots = struct.Struct("<" + slot_format)
        self.pack = slots.pack
        self.slot_count = slots.size // 8
        self._configs: dict[object, LaunchConfig] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} @{self.name} on {self.device.kind}:{self.device.index}>"

    def pack_error(self, exc: Exception) -> ArgumentError:
        """The error of a launch whose argument does not fit its parameter's type."""
        return ArgumentError(f"launch of @{self.name}: an argument does not fit its type "
                             f"({exc})")

    def pack_values(self, values: list[object]) -> bytes:
        """`pack(*values)`, with an ArgumentError for values out of range."""
        try:
            return self.pack(*values)
        except (struct.error, OverflowError) as exc:  # OverflowError: a float out of range
            raise self.pack_error(exc) from None

    # --- configuration -------------------------------------------------------------------------
    def config(self, grid: object, block: object, shared_bytes: int = 0) -> LaunchConfig:
        """The validated configuration (ArgumentError as `Device.launch` raises it)."""
        key: object = None
        if type(shared_bytes) is int and ((type(grid) is int and type(block) is int)
                                          or (_plain_ints(grid) and _plain_ints(block))):
            key = (grid, block, shared_bytes)
            found = self._configs.get(key)
            if found is not None:
                return found
        g, b, _ = self.device.check_launch(self.function, grid, block,  # type: ignore[arg-type]
                                           shared_bytes)
        if shared_bytes > MAX_SHARED_BYTES:
            raise ArgumentError(f"kernel @{self.name}: shared_bytes {shared_bytes} does not fit "
                                "32 bits")
        config = LaunchConfig(g, b, shared_bytes)
        self._check_config(config)
        if key is not None:
            if len(self._configs) >= MAX_CONFIGS:
                self._configs.clear()
            self._configs[key] = config
        return config

    def _check_config(self, config: LaunchConfig) -> None:
        """Device-specific checks or set-up for a new configuration (run once per config)."""

    def stream(self, stream: Stream | None) -> Stream:
        """The stream a launch runs on (the device's default for None); DeviceError when it is
        closed, ArgumentError when it belongs to another device."""
        s = self.device._stream(stream)
        if s.closed:
            raise DeviceError(f"{s!r} is closed")
        return s

    # --- launching -----------------------------------------------------------------------------
    def launch(self, config: LaunchConfig, stream: Stream | None, slots: bytes) -> None:
        """Launch with the packed parameter `slots` on `stream`."""
        s = self.stream(stream)
        count = self.slot_count
        address = 0
        if count:
            storage = (ctypes.c_uint64 * count).from_buffer_copy(slots)
            base = ctypes.addressof(storage)
            pointers = (ctypes.c_void_p * count)(*(base + 8 * i for i in range(count)))
            address = ctypes.addressof(pointers)
        self.device._launch(self.function, config.grid, config.block, address,
                            config.shared_bytes, s, None)

    def launch_sync(self, config: LaunchConfig, stream: Stream | None, slots: bytes) -> None:
        """`launch`, for a caller that synchronizes `stream` right after (a launch with staged
        NumPy arrays): a device may run the kernel on the calling thread instead (the cpu
        device, for small launches on an idle stream); its errors may then raise here."""
        self.launch(config, stream, slots)

    def bind(self, config: LaunchConfig, stream: Stream | None) -> Callable[[bytes], None]:
        """A function launching packed `slots` with `config` on `stream` (checked now)."""
        if stream is not None:
            self.stream(stream)
        launch = self.launch

        def bound(slots: bytes) -> None:
            launch(config, stream, slots)

        return bound

    def inline_launch(self, config: LaunchConfig,
                      stream: Stream | None) -> tuple[list[str], dict[str, object]]:
        """Statements launching the packed parameters in variable `slots` with `config` on
        `stream` (checked now), and the globals they use (names starting with `_L_`)."""
        return ["_L_bound(slots)"], {"_L_bound": self.bind(config, stream)}

    def checked_call(self, config: LaunchConfig, stream: Stream | None,
                     spec: CheckedSpec) -> Callable[..., object] | None:
        """A native callable running the checks `spec` describes (nova.runtime.checked) and the
        launch with `config` on `stream` (the cuda device's: nova.runtime.cuda.py_checked), or
        None: the caller keeps its Python call. None here."""
        return None

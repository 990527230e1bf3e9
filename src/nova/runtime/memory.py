"""Device and pinned host buffers, and their interop with NumPy, DLPack and CUDA array interface.

A `Buffer` is device memory with a dtype and shape remembered (uint8 of `nbytes` for raw
allocations). It comes from the device's caching pool and goes back there when freed explicitly
(`free()`, `with`) or when garbage collected (a weakref finalizer). Foreign memory wrapped without
copying (`from_dlpack`, `Buffer.from_cuda_array_interface`) keeps its owner alive instead.
Using a freed buffer raises DeviceError instead of touching released memory.
"""

from __future__ import annotations

import contextlib
import math
import struct
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nova.errors import ArgumentError, DeviceError
from nova.runtime.device import Device, DeviceKind, numpy_dtype
from nova.runtime.pool import Block
from nova.runtime.selection import get_device

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy itself where the program imported it already (a kernel launched with arrays: no
    # proxy module to import), else imported on first use (nova.runtime.lazy_numpy)
    np = sys.modules.get("numpy")
    if np is None:
        from nova.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from nova.runtime.stream import Stream


def _release(pool_release: Callable[..., None], block: Block,
             used_on: set[Stream] | None = None) -> None:
    # a finalizer must never raise (e.g. after the CUDA context was lost)
    with contextlib.suppress(Exception):
        after = [s.record() for s in used_on or () if not getattr(s, "closed", False)]
        pool_release(block, after)


class Buffer:
    """Device memory: `.ptr` (int), `.nbytes`, `.dtype`, `.shape`, `.device`."""

    def __init__(self, device: Device, ptr: int, nbytes: int, dtype: Any = "uint8",
                 shape: Sequence[int] | None = None, *, base: Buffer | None = None,
                 owner: object = None, stream: Stream | None = None) -> None:
        self.device = device
        self._ptr = ptr
        self.nbytes = nbytes
        # raw bytes (the default; what compiled programs allocate) need no NumPy until `.dtype`
        self._dtype: np.dtype | None = None if type(dtype) is str and dtype == "uint8" \
            else numpy_dtype(dtype)
        itemsize = 1 if self._dtype is None else self._dtype.itemsize
        if shape is None:  # whole elements of the bytes: fits by construction
            if nbytes < 0:
                raise ArgumentError(f"a buffer of {nbytes} bytes")
            self.shape: tuple[int, ...] = (nbytes // itemsize,)
        else:
            self.shape = tuple(map(int, shape))
            if min(self.shape, default=0) < 0 or math.prod(self.shape) * itemsize > nbytes:
                raise ArgumentError(f"shape {self.shape} of {self.dtype} does not fit the "
                                    f"{nbytes} bytes of the buffer")
        self.stream = stream
        self._base = base
        self._owner = owner
        self._freed = False
        self._finalizer: weakref.finalize | None = None
        self._used_on: set[Stream] = set()
        self._words: tuple[tuple[int, ...], bytes] | None = None  # see memref_words
        self._accepted: tuple[object, tuple[int, ...], int, bytes] | None = None
        """Launch guards' record of checks this buffer passed (nova.lang.guard._array):
        (requirements, shape, pointer, memref words); dropped when the buffer is freed."""

    @property
    def dtype(self) -> np.dtype:
        """The element type (a NumPy dtype)."""
        found = self._dtype
        if found is None:
            found = self._dtype = numpy_dtype("uint8")
        return found

    @classmethod
    def _from_pool(cls, device: Device, block: Block, nbytes: int,
                   stream: Stream | None) -> Buffer:
        buf = cls(device, block.ptr, nbytes, stream=stream)
        buf._finalizer = weakref.finalize(buf, _release, device.pool.release, block,
                                          buf._used_on)
        buf._finalizer.atexit = False
        return buf

    @classmethod
    def wrap(cls, device: Device, ptr: int, nbytes: int, dtype: Any = "uint8",
             shape: Sequence[int] | None = None, owner: object = None,
             on_free: Callable[[], None] | None = None) -> Buffer:
        """Wrap memory Nova does not own (no copy); `owner` is kept alive, `on_free` runs once
        when the buffer is freed or collected."""
        buf = cls(device, ptr, nbytes, dtype, shape, owner=owner)
        if on_free is not None:
            buf._finalizer = weakref.finalize(buf, on_free)
            buf._finalizer.atexit = False
        return buf

    # --- state ---------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return not self._freed and (self._base is None or self._base.alive)

    @property
    def ptr(self) -> int:
        """The device address; raises DeviceError once the buffer was freed."""
        if not self.alive:
            raise DeviceError(f"use of a freed Buffer ({self.nbytes} bytes on "
                              f"{self.device.kind}:{self.device.index})")
        return self._ptr

    def memref_words(self) -> bytes:
        """The buffer as a kernel's memref parameter slots (nova.abi's expansion: allocated,
        aligned, offset 0, sizes, C-contiguous strides), 8-byte little-endian words. Launch
        guards (nova.lang.guard) use these bytes instead of packing the words per launch; kept
        while `shape` is the same object (the pointer never changes; DeviceError once freed)."""
        shape = self.shape
        ptr = self.ptr
        cached = self._words
        if cached is not None and cached[0] is shape:
            return cached[1]
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= d
        words = struct.pack(f"<QQq{2 * len(shape)}q", ptr, ptr, 0, *shape, *reversed(strides))
        self._words = (shape, words)
        return words

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def free(self) -> None:
        """Give the memory back to the pool now (idempotent). Work still reading it must have
        been enqueued on the stream it was allocated on, or have finished. On a `view` this only
        invalidates the view; the memory goes back when its base buffer is freed."""
        if self._freed:
            return
        self._freed = True
        self._accepted = None
        if self._finalizer is not None:
            self._finalizer()
        self._owner = None

    def record_stream(self, stream: Stream) -> None:
        """Declare that work on `stream` (not the one the buffer was allocated on) uses it: when
        freed, the memory is reused only after the work enqueued on `stream` so far finished."""
        if self._base is not None:
            self._base.record_stream(stream)
        elif stream is not self.stream:
            self._used_on.add(stream)

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()

    def __repr__(self) -> str:
        state = f"{self._ptr:#x}" if self.alive else "freed"
        return (f"<Buffer {state} {self.nbytes} B {self.dtype}{list(self.shape)} on "
                f"{self.device.kind}:{self.device.index}>")

    def view(self, dtype: Any = None, shape: Sequence[int] | None = None) -> Buffer:
        """The same memory with another dtype/shape (no copy; keeps this buffer alive)."""
        dt = self.dtype if dtype is None else numpy_dtype(dtype)
        return Buffer(self.device, self.ptr, self.nbytes, dt, shape, base=self,
                      stream=self.stream)

    def _retype(self, dtype: Any, shape: Sequence[int]) -> Buffer:
        """Set dtype and shape in place (for a buffer just allocated to hold them)."""
        dt = numpy_dtype(dtype)
        dims = tuple(int(d) for d in shape)
        if any(d < 0 for d in dims) or math.prod(dims) * dt.itemsize > self.nbytes:
            raise ArgumentError(f"shape {dims} of {dt} does not fit {self.nbytes} bytes")
        self._dtype, self.shape = dt, dims
        self._accepted = None  # the launch guards' record names the old dtype
        return self

    # --- host copies ---------------------------------------------------------------------------
    def copy_to_host(self, out: np.ndarray | None = None,
                     stream: Stream | None = None) -> np.ndarray:
        """Copy into `out` (default: a new array of this buffer's dtype and shape). With a stream
        the copy is asynchronous: read `out` after synchronizing that stream."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        nbytes = min(out.nbytes, self.size * self.dtype.itemsize)
        if out.nbytes < self.size * self.dtype.itemsize:
            raise ArgumentError(f"copy_to_host: out has {out.nbytes} bytes, the buffer "
                                f"{self.size * self.dtype.itemsize}")
        self.device.copy_dtoh(out, self, nbytes, stream)
        return out

    def numpy(self, stream: Stream | None = None) -> np.ndarray:
        """A new NumPy array with this buffer's contents (synchronous unless `stream`)."""
        return self.copy_to_host(None, stream)

    def copy_from_host(self, array: Any, stream: Stream | None = None) -> None:
        """Overwrite the start of this buffer with the bytes of a host array."""
        src = np.ascontiguousarray(array)
        self.device.copy_htod(self, src, src.nbytes, stream)

    # --- interop -------------------------------------------------------------------------------
    def ready_stream(self) -> Stream:
        """The stream whose completed work makes this buffer's contents valid: the stream it was
        allocated on (still open), else the device's default stream."""
        s = self.stream
        if s is None or getattr(s, "closed", False):
            return self.device.default_stream
        return s

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA array interface v3 (cuda buffers only; AttributeError elsewhere)."""
        if self.device.kind is not DeviceKind.CUDA:
            raise AttributeError("__cuda_array_interface__ exists only for cuda buffers")
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": self.ready_stream().handle,
        }

    @classmethod
    def from_cuda_array_interface(cls, obj: Any, device: Device | None = None) -> Buffer:
        """Wrap a CuPy/Numba/PyTorch CUDA array without copying (C-contiguous only)."""
        from nova.runtime.dlpack import wrap_cuda_array_interface

        return wrap_cuda_array_interface(obj, device)

    def __dlpack__(self, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule sharing this buffer (kDLCUDA on cuda, kDLCPU on cpu)."""
        from nova.runtime.dlpack import export_capsule

        if copy:
            raise BufferError("Nova buffers export without copying only (copy=True asked)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"cannot export to DLPack device {dl_device}")
        versioned = max_version is not None and int(max_version[0]) >= 1
        return export_capsule(self, stream, versioned)

    def __dlpack_device__(self) -> tuple[int, int]:
        from nova.runtime.dlpack import dlpack_device

        return dlpack_device(self.device)


class HostBuffer:
    """Page-locked host memory (plain aligned memory on cpu): `.ptr`, `.nbytes`, `.numpy()`."""

    def __init__(self, device: Device, ptr: int, nbytes: int) -> None:
        self.device = device
        self._ptr = ptr
        self.nbytes = nbytes
        self._freed = False
        self._finalizer: weakref.finalize | None = None

    @classmethod
    def _from_pool(cls, device: Device, block: Block, nbytes: int) -> HostBuffer:
        hb = cls(device, block.ptr, nbytes)
        hb._finalizer = weakref.finalize(hb, _release, device.pinned_pool.release, block, None)
        hb._finalizer.atexit = False
        return hb

    @property
    def ptr(self) -> int:
        if self._freed:
            raise DeviceError(f"use of a freed HostBuffer ({self.nbytes} bytes)")
        return self._ptr

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr if self.nbytes
                else 0, False), "version": 3}

    def numpy(self, dtype: Any = "uint8", shape: Sequence[int] | None = None) -> np.ndarray:
        """A NumPy view of this memory (no copy; the view keeps the buffer alive)."""
        dt = numpy_dtype(dtype)
        flat = np.asarray(self)
        count = self.nbytes // dt.itemsize
        view = flat[: count * dt.itemsize].view(dt)
        return view if shape is None else view.reshape(tuple(shape))

    def free(self) -> None:
        """Give the memory back to the pinned pool (idempotent). No async copy may still use it."""
        if not self._freed:
            self._freed = True
            if self._finalizer is not None:
                self._finalizer()

    def __enter__(self) -> HostBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"<HostBuffer {'freed' if self._freed else hex(self._ptr)} {self.nbytes} B>"


# --- spans: (address, size or None, keepalive) for copy arguments ----------------------------
def host_span(obj: Any, what: str, writable: bool) -> tuple[int, int | None, object]:
    """Resolve a host-side copy argument: ndarray, HostBuffer, bytes-like or int address."""
    if isinstance(obj, bool):
        raise ArgumentError(f"{what}: expected host memory, got a bool")
    if isinstance(obj, int):
        return obj, None, None
    if isinstance(obj, HostBuffer):
        return obj.ptr, obj.nbytes, obj
    if isinstance(obj, Buffer):
        raise ArgumentError(f"{what}: expected host memory, got a device Buffer")
    if isinstance(obj, bytes | bytearray | memoryview):
        obj = np.frombuffer(obj, dtype=np.uint8)
    if not isinstance(obj, np.ndarray):
        raise ArgumentError(f"{what}: expected a NumPy array, HostBuffer, bytes-like object or "
                            f"int address, got {type(obj).__name__}")
    if not obj.flags.c_contiguous:
        raise ArgumentError(f"{what}: the host array must be C-contiguous")
    if writable and not obj.flags.writeable:
        raise ArgumentError(f"{what}: the host array is read-only")
    return obj.ctypes.data, obj.nbytes, obj


def device_span(device: Device, obj: Any, what: str) -> tuple[int, int | None, object]:
    """Resolve a device-side copy argument: a Buffer of `device` or an int address."""
    if isinstance(obj, Buffer):
        if obj.device is not device:
            raise ArgumentError(f"{what}: the buffer lives on {obj.device.kind}:"
                                f"{obj.device.index}, not {device.kind}:{device.index}")
        return obj.ptr, obj.nbytes, obj
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj, None, None
    raise ArgumentError(f"{what}: expected a device Buffer or int address, "
                        f"got {type(obj).__name__}")


# --- module-level API ------------------------------------------------------------------------
def to_device(array: Any, device: str | Device | None = None,
              stream: Stream | None = None) -> Buffer:
    """Copy an array into new device memory; the Buffer remembers its dtype and shape."""
    dev = get_device(device)
    arr = np.asarray(array)
    if arr.dtype.hasobject:
        raise ArgumentError("to_device: arrays of Python objects cannot go to a device")
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")  # (np.ascontiguousarray would turn 0-d arrays into 1-d)
    buf = dev.allocate(arr.nbytes, stream=stream)._retype(arr.dtype, arr.shape)
    dev.copy_htod(buf, arr, arr.nbytes, stream)
    return buf


def from_dlpack(obj: Any, device: Device | None = None) -> Buffer:
    """Wrap a DLPack-exporting object (NumPy, PyTorch, CuPy...) as a Buffer without copying."""
    from nova.runtime.dlpack import import_dlpack

    return import_dlpack(obj, device)


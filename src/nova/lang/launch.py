"""Launch arguments: infer a signature from Python values, and pack kernel parameters cheaply.

`arg_type(value)` gives the Nova type of one launch argument: NumPy arrays (copied to the device
and back around the launch), Nova `Buffer`s, objects with `__cuda_array_interface__` (CuPy,
PyTorch CUDA tensors; used in place), Python/NumPy scalars. Arrays must be C-contiguous.

A `LaunchPlan` is made once per (device, signature): the loaded function, the device's
`Launcher` for it (the `struct` that packs the 8-byte parameter slots, one per expanded parameter
in nova.abi's layout, into one bytes object, and the configurations already validated) and a
generated guard (nova.lang.guard). A cached launch with device arrays runs the guard (type,
dtype, rank, device, alignment and overlap checks, then the slot values) and the launcher;
NumPy arguments (staged) and anything the guard does not recognise take the general path here
(`slot_values`, `refine`), which gives the errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nova.errors import ArgumentError
from nova.lang import types as T
from nova.records import MutableRecord
from nova.runtime.device import Device, DeviceFunction, DeviceKind
from nova.runtime.memory import Buffer

_SLOT_FORMATS = {"bool": "?7x", "int8": "b7x", "int16": "h6x", "int32": "i4x", "int64": "q",
                 "uint8": "B7x", "uint16": "H6x", "uint32": "I4x", "uint64": "Q",
                 "float16": "e6x", "bfloat16": "H6x", "float32": "f4x", "float64": "d"}


_ARRAY_TYPES: dict[tuple[Any, int], T.ArrayType] = {}
_SCALAR_TYPES: dict[Any, T.ScalarType] = {}
_PY_SCALARS: dict[type, T.ScalarType] = {bool: T.bool_, int: T.int64, float: T.float64}


def arg_type(value: Any) -> T.NovaType:
    """The Nova type of a launch argument (ArgumentError for what kernels cannot take).
    Memoised by dtype and rank: this runs for every argument of every launch."""
    cls = type(value)
    found = _PY_SCALARS.get(cls)
    if found is not None:
        return found
    if cls is np.ndarray or cls is Buffer or isinstance(value, np.ndarray | Buffer):
        key = (value.dtype, value.ndim)
        at = _ARRAY_TYPES.get(key)
        if at is None:
            at = _ARRAY_TYPES[key] = _array_type(value.dtype, value.ndim, value)
        return at
    if isinstance(value, np.generic):
        st = _SCALAR_TYPES.get(value.dtype)
        if st is None:
            st = T.from_numpy_dtype(value.dtype)
            if st is None:
                raise ArgumentError(f"NumPy scalars of {value.dtype} cannot be kernel arguments")
            _SCALAR_TYPES[value.dtype] = st
        return st
    if isinstance(value, bool | int | float):  # subclasses (IntEnum, ...)
        return _PY_SCALARS[bool if isinstance(value, bool) else int
                           if isinstance(value, int) else float]
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        return _array_type(np.dtype(cai["typestr"]), len(cai["shape"]), value)
    raise ArgumentError(f"kernel arguments must be arrays (NumPy, Nova Buffer, CuPy, PyTorch "
                        f"CUDA) or numbers, got {type(value).__name__}")


def _array_type(dtype: Any, ndim: int, value: Any) -> T.ArrayType:
    ty = T.from_numpy_dtype(dtype)
    if ty is None:
        raise ArgumentError(f"arrays of {dtype} cannot be kernel arguments (supported: bool, "
                            "int8..uint64, float16, bfloat16, float32, float64)")
    return T.ArrayType(ty, ndim)


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


class Staged(MutableRecord):
    """A NumPy array copied to the device for one launch and back after it (on the cpu
    device a contiguous writable array is used in place; the launch still waits for it)."""

    __match_args__ = ("host", "buffer", "copy_back")
    _fields = __match_args__

    host: np.ndarray
    buffer: Buffer | None  # None: used in place (cpu device), only waited for
    copy_back: bool

    def __init__(self, host: np.ndarray, buffer: Buffer | None, copy_back: bool) -> None:
        self.host = host
        self.buffer = buffer
        self.copy_back = copy_back


def param_format(ty: T.NovaType) -> str:
    """The `struct` format (no byte-order prefix) of one parameter's slots: an array expands
    to allocated, aligned, offset, sizes..., strides... (nova.abi's layout; the words of
    `Buffer.memref_words`), a scalar takes one 8-byte slot."""
    if isinstance(ty, T.ArrayType):
        return "QQq" + "q" * (2 * ty.ndim)
    return _SLOT_FORMATS[ty.name]


def slot_format(sig: tuple[T.NovaType, ...]) -> str:
    """The `struct` format (no byte-order prefix) of a signature's parameter slots."""
    return "".join(param_format(ty) for ty in sig)


class LaunchPlan:
    """Everything a cached launch of one signature on one device reuses: the loaded function,
    its `Launcher` (the parameter record, validated configurations; nova.runtime.launcher) and
    the launch guard (nova.lang.guard), which turns arguments of the signature's kinds straight
    into slot values."""

    def __init__(self, device: Device, function: DeviceFunction, sig: tuple[T.NovaType, ...],
                 check_bounds: bool = False) -> None:
        self.device = device
        self.function = function
        self.sig = sig
        self.check_bounds = check_bounds
        self.launcher = device.launcher(function, slot_format(sig))
        # generated on first use: a launch with NumPy arrays (staged) never runs it, and
        # generating it (compile() of its source) is a millisecond of a cached kernel's first call
        self.guard: Callable[[tuple[Any, ...], Device, Any], bytes | None] = self._first_guard
        self.configured: dict[tuple[Any, Any, int], type] = {}
        """`kern[grid, block]` classes specialised to this plan, by (grid, block, shared_bytes)
        (nova.lang.api._Configured)."""

    def _first_guard(self, args: tuple[Any, ...], device: Device, stream: Any) -> bytes | None:
        """Generate the guard (nova.lang.guard), keep it as `guard` and run it."""
        from nova.lang.guard import make_guard

        self.guard = make_guard(self.sig, True, self.launcher)
        return self.guard(args, device, stream)


def slot_values(device: Device, sig: tuple[T.NovaType, ...], args: tuple[Any, ...],
                staged: list[Staged], stream: Any = None,
                spans: list[tuple[int, int, int]] | None = None) -> list[Any]:
    """The parameter slot values of one launch (nova.abi's layout: an array expands to allocated,
    aligned, offset, sizes, strides); NumPy arrays are staged to the device. With `spans`, each
    array's (position, data pointer, bytes) is appended to it, for `refine`."""
    out: list[Any] = []
    for k, (value, ty) in enumerate(zip(args, sig, strict=True)):
        if type(ty) is T.ArrayType:
            ptr, shape = _array(value, device, staged, stream)
            if len(shape) == 1:
                out += (ptr, ptr, 0, shape[0], 1)
                count = shape[0]
            else:
                out += (ptr, ptr, 0, *shape, *_contiguous_strides(shape))
                count = math.prod(shape)
            if spans is not None:
                spans.append((k, ptr, count * ty.dtype.itemsize))
        elif ty is T.bfloat16:
            out.append(int(np.asarray(value, T.bfloat16.np_dtype).view(np.uint16)))
        else:
            out.append(value)
    return out


def _array(value: Any, device: Device, staged: list[Staged],
           stream: Any) -> tuple[int, tuple[int, ...]]:
    if isinstance(value, Buffer):
        if value.device is not device:
            raise ArgumentError(f"a Buffer on {value.device.kind}:{value.device.index} was "
                                f"passed to a launch on {device.kind}:{device.index}")
        return value.ptr, value.shape
    if isinstance(value, np.ndarray):
        if (value.flags.c_contiguous and value.flags.writeable
                and device.host_memory_in_place(value.ctypes.data, value.nbytes)):
            staged.append(Staged(value, None, False))  # host memory is device memory
            return value.ctypes.data, value.shape
        host = value if value.flags.c_contiguous else np.ascontiguousarray(value)
        buf = device.allocate(host.nbytes)
        if host.nbytes:
            device.copy_htod(buf, host, host.nbytes)
        staged.append(Staged(value, buf, bool(value.flags.writeable)))
        return buf.ptr, host.shape
    cai = value.__cuda_array_interface__
    if device.kind is not DeviceKind.CUDA:
        raise ArgumentError("CUDA arrays (CuPy, PyTorch) can only be passed to kernels "
                            "launched on a cuda device")
    shape = tuple(int(d) for d in cai["shape"])
    strides = cai.get("strides")
    itemsize = np.dtype(cai["typestr"]).itemsize
    if strides is not None and tuple(strides) != tuple(
            s * itemsize for s in _contiguous_strides(shape)) and all(shape):
        raise ArgumentError("CUDA arrays passed to kernels must be C-contiguous (call "
                            ".contiguous() / cupy.ascontiguousarray first)")
    producer = cai.get("stream")  # CAI v3: work on it must finish before the kernel reads
    if producer is not None and stream is None:
        device.wait_for_foreign_stream(int(producer))  # type: ignore[attr-defined]
    return int(cai["data"][0]), shape


_SPECIALIZED: dict[tuple[T.ArrayType, int, bool], T.ArrayType] = {}


def refine(sig: tuple[T.NovaType, ...],
           spans: list[tuple[int, int, int]]) -> tuple[T.NovaType, ...]:
    """Apply (position, data pointer, bytes) spans of the array arguments to `sig`."""
    if not spans:
        return sig
    out = list(sig)
    for k, ptr, nbytes in spans:
        noalias = True
        if nbytes:
            end = ptr + nbytes
            for other, start, size in spans:
                if other != k and size and start < end and ptr < start + size:
                    noalias = False
                    break
        base = sig[k]
        assert isinstance(base, T.ArrayType)
        key = (base, 16 if ptr % 16 == 0 else 0, noalias)
        found = _SPECIALIZED.get(key)
        if found is None:
            found = _SPECIALIZED[key] = T.ArrayType(base.dtype, base.ndim, align=key[1],
                                                    noalias=noalias)
        out[k] = found
    return tuple(out)


def example_span(value: Any) -> tuple[int, int]:
    """(data pointer, bytes) of an example array argument (signature inspection: the pointer
    the array has now), as `refine` reads them for a launch."""
    if isinstance(value, Buffer):
        return value.ptr, value.size * value.dtype.itemsize
    if isinstance(value, np.ndarray):
        return value.ctypes.data, value.nbytes
    cai = value.__cuda_array_interface__
    count = math.prod(int(d) for d in cai["shape"])
    return int(cai["data"][0]), count * np.dtype(cai["typestr"]).itemsize


def finish_staged(device: Device, staged: list[Staged], stream: Any) -> None:
    """Wait for the launch and copy staged NumPy arrays back (numba's semantics)."""
    if not staged:
        return
    (stream or device.default_stream).synchronize()
    for s in staged:
        if s.buffer is None:
            continue
        if s.copy_back and s.host.nbytes:
            if s.host.flags.c_contiguous:
                device.copy_dtoh(s.host, s.buffer, s.host.nbytes)
            else:
                tmp = np.empty_like(s.host, order="C")
                device.copy_dtoh(tmp, s.buffer, tmp.nbytes)
                s.host[...] = tmp
        s.buffer.free()

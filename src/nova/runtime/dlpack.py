"""DLPack and CUDA-array-interface exchange for Buffers, without copies.

Export (`Buffer.__dlpack__`) builds a DLManagedTensor in memory owned by a registry entry that also
holds the Buffer; the consumer calls its deleter when done (or the capsule destructor does, if the
capsule was never consumed), which drops the entry. Import (`from_dlpack`) takes the producer's
capsule, renames it `used_dltensor` as the protocol requires, and wraps the memory in a Buffer whose
finalizer calls the producer's deleter. Stream handshakes follow the array API standard: on cuda the
consumer's stream is made to wait (via an event) for work on the device's default stream.
"""

from __future__ import annotations

import ctypes
import math
import threading
from typing import TYPE_CHECKING, Any

from nova.errors import ArgumentError, DeviceError
from nova.runtime.device import Device
from nova.runtime.selection import get_device

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from nova.runtime.memory import Buffer

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13

_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_KIND_TO_CODE = {"i": _INT, "u": _UINT, "f": _FLOAT, "c": _COMPLEX, "b": _BOOL}
_CODE_TO_KIND = {v: k for k, v in _KIND_TO_CODE.items()}


class DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class DLTensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    )


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = (("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER))


class DLManagedTensorVersioned(ctypes.Structure):
    """DLPack >= 1.0: a version and flags in front (consumers may then write to the memory)."""

    _fields_ = (
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    )


# Our own function objects for the C API (`PyDLL[...]` makes fresh ones, so the argtypes set here
# neither leak into ctypes.pythonapi users nor clash between the two GetPointer signatures).
_py = ctypes.PyDLL(None)


def _api(name: str, restype: Any, *argtypes: Any) -> Any:
    fn = _py[name]
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


_capsule_new = _api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                    ctypes.c_void_p)
_capsule_valid_raw = _api("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_capsule_pointer_raw = _api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_char_p)
_capsule_pointer = _api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object,
                        ctypes.c_char_p)
_capsule_set_name = _api("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)

_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_VERSIONED_NAME = b"dltensor_versioned"

_exported: dict[int, tuple[ctypes.Structure, ctypes.Array, Buffer]] = {}
_exported_lock = threading.Lock()


@DELETER
def _deleter(address: int | None) -> None:
    if address:
        with _exported_lock:
            _exported.pop(address, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int | None) -> None:
    # Only an unconsumed capsule (still named "dltensor") owns its tensor.
    for name in (_NAME, _VERSIONED_NAME):
        if capsule and _capsule_valid_raw(capsule, name):
            _deleter(_capsule_pointer_raw(capsule, name))


def dlpack_device(device: Device) -> tuple[int, int]:
    """(kDLCUDA, index) for cuda devices, (kDLCPU, 0) for the cpu device."""
    return device.dlpack_device


def _dl_dtype(dtype: np.dtype) -> DLDataType:
    code = _KIND_TO_CODE.get(dtype.kind)
    if code is None or dtype.byteorder == ">":
        raise BufferError(f"dtype {dtype} has no DLPack equivalent")
    return DLDataType(code, dtype.itemsize * 8, 1)


def export_capsule(buf: Buffer, stream: int | None, versioned: bool = False) -> Any:
    """A 'dltensor' capsule for `buf` ('dltensor_versioned', DLPack 1.0, when `versioned`),
    after the stream handshake."""
    device = buf.device
    device.dlpack_export_sync(buf, stream)
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned:
        managed = DLManagedTensorVersioned(major=1, minor=0, flags=0)
    else:
        managed = DLManagedTensor()
    ndim = len(buf.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*buf.shape)
    kind, index = dlpack_device(device)
    t = managed.dl_tensor
    t.data = buf.ptr
    t.device = DLDevice(kind, index)
    t.ndim = ndim
    t.dtype = _dl_dtype(buf.dtype)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None  # C-contiguous
    t.byte_offset = 0
    managed.deleter = _deleter
    address = ctypes.addressof(managed)
    with _exported_lock:
        _exported[address] = (managed, shape, buf)
    name = _VERSIONED_NAME if versioned else _NAME
    return _capsule_new(address, name, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def _np_dtype(dt: DLDataType) -> np.dtype:
    kind = _CODE_TO_KIND.get(dt.code)
    if kind is None or dt.lanes != 1 or dt.bits % 8:
        raise ArgumentError(f"DLPack dtype (code={dt.code}, bits={dt.bits}, lanes={dt.lanes}) "
                            f"is not supported")
    if kind == "b":
        return np.dtype(np.bool_)
    return np.dtype(f"{kind}{dt.bits // 8}")


def _call_deleter(address: int, deleter: Any) -> None:
    if deleter:
        deleter(address)


def import_dlpack(obj: Any, device: Device | None = None) -> Buffer:
    """Wrap what `obj.__dlpack__()` shares as a Buffer (C-contiguous tensors only)."""
    from nova.runtime.memory import Buffer

    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise ArgumentError(f"{type(obj).__name__} does not support DLPack")
    kind, index = (int(v) for v in obj.__dlpack_device__())
    if kind == KDL_CUDA:
        dev = device or get_device(f"cuda:{index}")
        capsule = obj.__dlpack__(stream=dev.default_stream.handle)
    elif kind in (KDL_CPU, KDL_CUDA_HOST):
        dev = device or get_device("cpu")
        capsule = obj.__dlpack__()
    else:
        raise ArgumentError(f"DLPack device type {kind} is not supported (cpu and cuda are)")
    if (kind == KDL_CUDA) != (dev.dlpack_device[0] == KDL_CUDA):
        raise DeviceError(f"a DLPack tensor on device type {kind} cannot become a Buffer of "
                          f"{dev!r}")
    try:
        address = _capsule_pointer(capsule, _NAME)
    except (ValueError, TypeError) as exc:
        raise ArgumentError(f"__dlpack__ did not return a 'dltensor' capsule: {exc}") from None
    if not address:
        raise ArgumentError("__dlpack__ returned an empty capsule")
    _capsule_set_name(capsule, _USED_NAME)
    managed = DLManagedTensor.from_address(address)
    t = managed.dl_tensor
    dtype = _np_dtype(t.dtype)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        expected = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expected:
                _call_deleter(address, managed.deleter)
                raise ArgumentError("from_dlpack: only C-contiguous tensors can be wrapped")
            expected *= shape[i]
    nbytes = math.prod(shape) * dtype.itemsize
    ptr = (t.data or 0) + t.byte_offset
    deleter = managed.deleter
    return Buffer.wrap(dev, ptr, nbytes, dtype, shape, owner=obj,
                       on_free=lambda: _call_deleter(address, deleter))


_TYPESTR_OK = set("biuf")


def wrap_cuda_array_interface(obj: Any, device: Device | None = None) -> Buffer:
    """Wrap an object exposing __cuda_array_interface__ (v2/v3) without copying."""
    from nova.runtime.memory import Buffer

    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        raise ArgumentError(f"{type(obj).__name__} has no __cuda_array_interface__") from None
    dtype = np.dtype(cai["typestr"])
    if dtype.kind not in _TYPESTR_OK and dtype.kind != "c":
        raise ArgumentError(f"__cuda_array_interface__ typestr {cai['typestr']!r} unsupported")
    shape = tuple(int(d) for d in cai["shape"])
    strides = cai.get("strides")
    if strides is not None:
        expected = dtype.itemsize
        for size, stride in zip(reversed(shape), reversed(strides), strict=True):
            if size != 1 and stride != expected:
                raise ArgumentError("from_cuda_array_interface: only C-contiguous arrays can "
                                    "be wrapped")
            expected *= size
    if cai.get("mask") is not None:
        raise ArgumentError("masked CUDA arrays are not supported")
    ptr = int(cai["data"][0] or 0)
    dev = device or get_device("cuda")
    if dev.dlpack_device[0] != KDL_CUDA:
        raise DeviceError("__cuda_array_interface__ memory can only wrap into a cuda device")
    stream = cai.get("stream")
    if stream is not None:
        dev.wait_for_foreign_stream(int(stream))  # type: ignore[attr-defined]
    nbytes = math.prod(shape) * dtype.itemsize
    return Buffer.wrap(dev, ptr, nbytes, dtype, shape, owner=obj)

"""Kernel parameter arrays: turn launch arguments into an owned `void**` array.

Launches take their parameters as a `void**` (one pointer per expanded kernel parameter, see
nova.abi) or as a Python list of values. Both devices need an array they own: the cpu device
runs the kernel later on a worker thread, when the caller's array (often on a stack) may be gone,
and a Python list has no address at all. `pack_params` copies every value into one buffer, sized by
the kernel's manifest entry (`Kernel.params`), and builds the pointer array over it.

Layout of the owned buffer: a value of more than 8 bytes starts at a multiple of 16, any other at
a multiple of 8, so every parameter is aligned to min(its `KernelParam.alignment`, 16) (a 32- or
64-byte vector gets 16: the CPU device's kernel entries load vectors element-aligned, and CUDA
copies the bytes). A vector parameter (`<N x T>`) takes a 1-D NumPy array of N elements of T's
size, padded with zeros to the parameter's size (`<3 x i32>` occupies 16 bytes).
"""

from __future__ import annotations

import ctypes
import functools
import re
import struct
from typing import TYPE_CHECKING, Any

from nova.bundle.kernel_entry import Kernel, KernelParam
from nova.errors import ArgumentError
from nova.runtime.launcher import PackedParams

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

_POINTER = struct.Struct("<Q")
_INT_FORMATS = {"i1": "<B", "i8": "<b", "i16": "<h", "i32": "<i", "i64": "<q", "ptr": "<Q"}
_FLOAT_FORMATS = {"half": "<e", "float": "<f", "double": "<d"}


def _int_bytes(value: int, fmt: str, name: str, index: int) -> bytes:
    try:
        return struct.pack(fmt, value)
    except struct.error:
        unsigned = fmt.replace("<b", "<B").replace("<h", "<H").replace("<i", "<I")
        unsigned = unsigned.replace("<q", "<Q")
        try:
            return struct.pack(unsigned, value)
        except struct.error:
            raise ArgumentError(f"launch of @{name}: parameter {index} value {value} does not "
                                f"fit its type") from None


_VECTOR_TYPE = r"<(\d+) x (\w+)>"  # compiled on first use (re's cache): a cold start's
_ELEMENT_BYTES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2, "float": 4,
                  "double": 8}


def _vector_bytes(value: Any, param: KernelParam, name: str, index: int) -> bytes:
    """The bytes of a vector parameter from a 1-D array of its lane count and element size,
    zero-padded to the parameter's size."""
    match = re.fullmatch(_VECTOR_TYPE, param.llvm_type)
    lanes = int(match.group(1)) if match else 0
    elem = _ELEMENT_BYTES.get(match.group(2), 0) if match else 0
    array = np.asarray(value)
    if array.ndim != 1 or array.size != lanes or array.dtype.itemsize != elem:
        raise ArgumentError(f"launch of @{name}: parameter {index} is {param.llvm_type}, got an "
                            f"array of shape {array.shape} and dtype {array.dtype}")
    raw = np.ascontiguousarray(array).tobytes()
    return raw + bytes(param.size - len(raw))


_CTYPES_VALUES = (ctypes._SimpleCData, ctypes.Structure, ctypes.Array)
_buffer_types: tuple[type, ...] = ()


def _buffers() -> tuple[type, ...]:
    """(Buffer, HostBuffer), imported on first use (memory imports the device layer)."""
    global _buffer_types
    if not _buffer_types:
        from nova.runtime.memory import Buffer, HostBuffer

        _buffer_types = (Buffer, HostBuffer)
    return _buffer_types


def _value_bytes(value: Any, param: KernelParam | None, name: str, index: int) -> bytes:
    llvm = param.llvm_type if param is not None else None
    if param is not None and llvm is not None and llvm.startswith("<") and \
            isinstance(value, (np.ndarray, list, tuple)):
        raw = _vector_bytes(value, param, name, index)
    elif isinstance(value, _CTYPES_VALUES):
        raw = bytes(memoryview(value).cast("B"))
    elif isinstance(value, _buffer_types or _buffers()):
        raw = _POINTER.pack(value.ptr)  # type: ignore[attr-defined]  # a (Host)Buffer
    elif isinstance(value, np.generic):
        raw = value.tobytes()
    elif isinstance(value, bool | int):
        fmt = _INT_FORMATS.get(llvm or "i64")
        if fmt is None:
            raise ArgumentError(f"launch of @{name}: parameter {index} is {llvm}, got an int")
        raw = _int_bytes(int(value), fmt, name, index)
    elif isinstance(value, float):
        fmt = _FLOAT_FORMATS.get(llvm or "double")
        if fmt is None:
            raise ArgumentError(f"launch of @{name}: parameter {index} is {llvm}, got a float")
        raw = struct.pack(fmt, value)
    else:
        raise ArgumentError(f"launch of @{name}: parameter {index} has unsupported type "
                            f"{type(value).__name__} (use ctypes values, ints, floats or Buffers)")
    if param is not None and len(raw) != param.size:
        raise ArgumentError(f"launch of @{name}: parameter {index} is {param.llvm_type} of "
                            f"{param.size} bytes, the value given has {len(raw)}")
    return raw


def _build(chunks: list[bytes]) -> PackedParams:
    offsets, total = [], 0
    for raw in chunks:
        align = 16 if len(raw) > 8 else 8
        total = -(-total // align) * align
        offsets.append(total)
        total += len(raw)
    storage = ctypes.create_string_buffer(max(total, 1))
    base = ctypes.addressof(storage)
    for raw, off in zip(chunks, offsets, strict=True):
        ctypes.memmove(base + off, raw, len(raw))
    pointers = (ctypes.c_void_p * max(len(chunks), 1))(*(base + off for off in offsets))
    return PackedParams(storage, pointers, len(chunks))


@functools.lru_cache(maxsize=256)
def _layout(sizes: tuple[int, ...]) -> tuple[tuple[int, ...], int, type[ctypes.Array]]:
    """Offsets, total bytes and pointer-array type for parameters of these sizes (as `_build`
    lays them out), planned once per kernel signature."""
    offsets, total = [], 0
    for size in sizes:
        align = 16 if size > 8 else 8
        total = -(-total // align) * align
        offsets.append(total)
        total += size
    return tuple(offsets), max(total, 1), ctypes.c_void_p * max(len(sizes), 1)


def _copy_from_address(params: int, expected: tuple[KernelParam, ...], name: str) -> PackedParams:
    """Copy the values a void** points to straight into a new owned array (per launch: one
    buffer, one memmove per parameter; the layout comes from `_layout`)."""
    sizes = tuple(p.size for p in expected)
    offsets, total, pointer_array = _layout(sizes)
    slots = pointer_array.from_address(params)
    storage = ctypes.create_string_buffer(total)
    base = ctypes.addressof(storage)
    for i, (size, offset) in enumerate(zip(sizes, offsets, strict=True)):
        source = slots[i]
        if not source:
            raise ArgumentError(f"launch of @{name}: parameter {i} pointer is null")
        ctypes.memmove(base + offset, source, size)
    return PackedParams(storage, pointer_array(*(base + off for off in offsets)), len(sizes))


def pack_params(params: Any, kernel: Kernel | None, name: str) -> PackedParams:
    """Copy launch parameters into an owned array.

    `params` is a void** address (int; needs `kernel` for the count and sizes), a list/tuple of
    values, or None/[] for a kernel without parameters.
    """
    expected = None if kernel is None else kernel.params
    if params is None:
        params = []
    if isinstance(params, int) and not isinstance(params, bool):
        if params == 0 and not expected:
            return _build([])  # a kernel without parameters (or of unknown signature)
        if expected is None:
            raise ArgumentError(f"launch of @{name}: a void** parameter address needs the "
                                f"kernel's manifest entry (pass kernel= to get_function)")
        if params == 0 and expected:
            raise ArgumentError(f"launch of @{name}: null parameter array for "
                                f"{len(expected)} parameters")
        return _copy_from_address(params, expected, name)
    if not isinstance(params, list | tuple):
        raise ArgumentError(f"launch of @{name}: params must be a void** address or a list, got "
                            f"{type(params).__name__}")
    if expected is not None and len(params) != len(expected):
        raise ArgumentError(f"launch of @{name}: expected {len(expected)} parameters, got "
                            f"{len(params)}")
    return _build([_value_bytes(v, None if expected is None else expected[i], name, i)
                   for i, v in enumerate(params)])

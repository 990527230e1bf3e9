"""Python values <-> the runtime ABI's argument storage: scalars and MLIR memref descriptors.

The executor checks each argument against the manifest's TypeSpec (`ArgumentError` names the
entry, the argument index, what was expected and what was given) and writes it into storage that
was allocated once per entry (the call plan), so a call only stores a few integers.
Arrays are described uniformly by `ArrayInfo` whatever they are: a NumPy array (host memory), an
object with `__cuda_array_interface__` (device memory: CuPy, PyTorch, Nova buffers), or a Nova
buffer exposing `device_ptr`/`ptr`, `shape` and `dtype`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nova.bundle.format import TypeSpec
from nova.errors import ArgumentError

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

NUMPY_DTYPE_NAMES: dict[str, str] = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "index": "int64", "f16": "float16", "f32": "float32", "f64": "float64",
}
"""Manifest dtype -> NumPy dtype name of memref elements (bf16 has no NumPy dtype; see
_dtype_ok). Names, so that importing this module does not import NumPy."""


def numpy_dtype(manifest_dtype: str) -> np.dtype | None:
    """The NumPy dtype of a manifest element type, or None (bf16)."""
    name = NUMPY_DTYPE_NAMES.get(manifest_dtype)
    return None if name is None else np.dtype(name)

SCALAR_CTYPES: dict[str, type] = {
    "i1": ctypes.c_uint8,  # LLVM stores an i1 in one byte
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "index": ctypes.c_int64,
    "f16": ctypes.c_uint16,  # the bits of an IEEE half
    "bf16": ctypes.c_uint16,  # the bits of a bfloat16
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}

INT_BITS: dict[str, int] = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
"""Integer dtypes -> bits; a value fits when -2**(bits-1) <= value < 2**bits (either
signedness)."""


def descriptor_words(rank: int) -> int:
    """Number of 64-bit words of a rank-R memref descriptor (allocated, aligned, offset, sizes,
    strides)."""
    return 3 + 2 * rank


@dataclass(frozen=True)
class ArrayInfo:
    """Where an array's elements are and how they are laid out (strides in elements)."""

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    on_device: bool  # device memory (not host-addressable on cuda)
    stream: int | None = None  # a foreign producer stream to wait for (CUDA array interface)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def _element_strides(byte_strides: tuple[int, ...] | None, shape: tuple[int, ...],
                     itemsize: int) -> tuple[int, ...]:
    if byte_strides is None:  # C-contiguous
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= size
        return tuple(reversed(strides))
    if any(s % itemsize for s in byte_strides):
        raise ValueError("strides are not a multiple of the element size")
    return tuple(s // itemsize for s in byte_strides)


def array_info(value: Any) -> ArrayInfo | None:
    """Describe `value` as an array, or None when it is not one."""
    if isinstance(value, np.ndarray):
        return ArrayInfo(value.ctypes.data, value.shape,
                         _element_strides(value.strides, value.shape, value.itemsize),
                         value.dtype, on_device=False)
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        dtype = np.dtype(interface["typestr"])
        own = getattr(value, "dtype", None)  # a Nova Buffer's or CuPy array's NumPy dtype
        if isinstance(own, np.dtype) and own.itemsize == dtype.itemsize:
            dtype = own  # the interface spells bfloat16 (ml_dtypes) as '<V2': keep the name
        shape = tuple(int(s) for s in interface["shape"])
        strides = interface.get("strides")
        stream = interface.get("stream")
        return ArrayInfo(int(interface["data"][0]), shape,
                         _element_strides(tuple(strides) if strides else None, shape,
                                          dtype.itemsize), dtype, on_device=True,
                         stream=int(stream) if stream else None)
    pointer = getattr(value, "device_ptr", None)
    if pointer is None:
        pointer = getattr(value, "ptr", None)
    if pointer is not None and hasattr(value, "shape") and hasattr(value, "dtype"):
        dtype = np.dtype(value.dtype)
        shape = tuple(int(s) for s in value.shape)
        return ArrayInfo(int(pointer), shape, _element_strides(None, shape, dtype.itemsize),
                         dtype, on_device=True)
    return None


def _dtype_ok(spec: TypeSpec, dtype: np.dtype) -> bool:
    if spec.dtype == "bf16":
        return dtype.itemsize == 2 and "bfloat16" in dtype.name
    return numpy_dtype(spec.dtype) == dtype


def _describe(value: Any) -> str:
    info = array_info(value)
    if info is not None:
        return f"array of {info.dtype} with shape {info.shape}"
    return f"{type(value).__name__} {value!r}"[:120]


def check_memref(entry: str, index: int, spec: TypeSpec, value: Any) -> ArrayInfo:
    """Validate an argument for a memref parameter; returns its ArrayInfo."""
    try:
        info = array_info(value)
    except ValueError as exc:
        raise ArgumentError(f"{entry}: argument {index}: expected {spec.mlir}, got an array "
                            f"whose {exc}") from None
    if info is None:
        raise ArgumentError(f"{entry}: argument {index}: expected {spec.mlir} (an array), got "
                            f"{_describe(value)}")
    problem = None
    if not _dtype_ok(spec, info.dtype):
        problem = f"element type {info.dtype}"
    elif len(info.shape) != spec.rank:
        problem = f"rank {len(info.shape)}"
    elif any(want not in (-1, got) for want, got in zip(spec.shape, info.shape, strict=True)):
        problem = f"shape {info.shape}"
    if problem is not None:
        raise ArgumentError(f"{entry}: argument {index}: expected {spec.mlir}, got an array with "
                            f"{problem} ({_describe(value)})")
    return info


def scalar_value(entry: str, index: int, spec: TypeSpec, value: Any) -> int | float:
    """Validate a scalar argument and convert it to what its ctypes storage holds."""
    dtype = spec.dtype
    if type(value) is int and dtype in INT_BITS:  # the common case first
        bits = INT_BITS[dtype]
        if -(1 << (bits - 1)) <= value < (1 << bits):
            return value
    if isinstance(value, np.generic):
        value = value.item()
    if dtype == "i1":
        if isinstance(value, bool | int) and value in (0, 1):
            return int(value)
    elif dtype in INT_BITS:
        if isinstance(value, int):
            bits = INT_BITS[dtype]
            if -(1 << (bits - 1)) <= value < (1 << bits):
                return value
            raise ArgumentError(f"{entry}: argument {index}: {value} does not fit {spec.mlir}")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if dtype == "f16":
            return int(np.array(value, dtype=np.float16).view(np.uint16))
        if dtype == "bf16":
            bits = int(np.array(value, dtype=np.float32).view(np.uint32))
            return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return float(value)
    raise ArgumentError(f"{entry}: argument {index}: expected {spec.mlir}, got "
                        f"{_describe(value)}")


def scalar_result(spec: TypeSpec, storage: ctypes._SimpleCData) -> int | float | bool:
    """A scalar result read back from its storage as a Python number."""
    raw = storage.value
    if spec.dtype == "i1":
        return bool(raw & 1)
    if spec.dtype == "f16":
        return float(np.array(raw, dtype=np.uint16).view(np.float16))
    if spec.dtype == "bf16":
        return float(np.array(raw << 16, dtype=np.uint32).view(np.float32))
    return raw


def write_descriptor(words: ctypes.Array, info: ArrayInfo, address: int | None = None) -> None:
    """Fill a memref descriptor for `info` (at `address` instead of info.address if given)."""
    pointer = info.address if address is None else address
    rank = len(info.shape)
    words[0] = pointer
    words[1] = pointer
    words[2] = 0
    # ctypes assigns any sequence to a slice; typeshed only admits a list
    words[3:3 + rank] = info.shape  # type: ignore[call-overload]
    words[3 + rank:3 + 2 * rank] = info.strides  # type: ignore[call-overload]


def read_descriptor(words: ctypes.Array, rank: int) -> tuple[int, int, tuple[int, ...],
                                                               tuple[int, ...]]:
    """(aligned pointer, offset, sizes, strides) of a filled descriptor."""
    return (words[1] & 0xFFFFFFFFFFFFFFFF, words[2], tuple(words[3:3 + rank]),
            tuple(words[3 + rank:3 + 2 * rank]))

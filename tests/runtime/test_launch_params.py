"""pack_params: a void** launch array and a list of values give the same owned layout."""

from __future__ import annotations

import ctypes

import pytest

from nova.bundle.format import Kernel, KernelParam
from nova.errors import ArgumentError
from nova.runtime.launch_params import pack_params

KERNEL = Kernel("k", (), (KernelParam("ptr", 8, 0), KernelParam("i32", 4, 1),
                          KernelParam("<2 x double>", 16, 2), KernelParam("float", 4, 3)))


def _values(packed, kernel: Kernel) -> list[bytes]:
    slots = (ctypes.c_void_p * len(kernel.params)).from_address(packed.address)
    return [ctypes.string_at(slots[i], p.size) for i, p in enumerate(kernel.params)]


def test_void_pointer_array_is_copied_with_the_list_layout() -> None:
    raw = [b"\x11" * 8, b"\x22" * 4, bytes(range(16)), b"\x33" * 4]
    buffers = [ctypes.create_string_buffer(r, len(r)) for r in raw]
    array = (ctypes.c_void_p * 4)(*(ctypes.addressof(b) for b in buffers))
    packed = pack_params(ctypes.addressof(array), KERNEL, "k")
    for b in buffers:  # the caller's storage may be gone when the kernel runs
        ctypes.memset(b, 0, len(b.raw))
    assert _values(packed, KERNEL) == raw
    slots = (ctypes.c_void_p * 4).from_address(packed.address)
    base = ctypes.addressof(packed.storage)
    assert [s - base for s in slots] == [0, 8, 16, 32]  # 16-byte values 16-aligned
    as_list = pack_params([ctypes.c_uint64(0x1111111111111111), ctypes.c_int32(0x22222222),
                           (ctypes.c_uint8 * 16)(*range(16)), ctypes.c_uint32(0x33333333)],
                          KERNEL, "k")
    assert [s - ctypes.addressof(as_list.storage)
            for s in (ctypes.c_void_p * 4).from_address(as_list.address)] == [0, 8, 16, 32]
    assert _values(as_list, KERNEL) == raw


def test_null_parameter_pointer_is_an_error() -> None:
    good = ctypes.create_string_buffer(16)
    array = (ctypes.c_void_p * 4)(ctypes.addressof(good), None, ctypes.addressof(good),
                                  ctypes.addressof(good))
    with pytest.raises(ArgumentError, match="parameter 1 pointer is null"):
        pack_params(ctypes.addressof(array), KERNEL, "k")

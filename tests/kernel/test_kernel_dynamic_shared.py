"""`nova.dynamic_shared_array(dtype, count=None, offset=0)`: views of the block's dynamic shared
memory (the launch's `shared_bytes`), on the cpu device and (marked gpu) on CUDA.

Covers a block reduction sized by the launch, two arrays of different dtypes in one allocation,
the default count (the rest of the allocation), a run-time byte offset, a launch above the
48 KiB that CUDA only grants after an opt-in, block isolation (every block of a many-block grid
has its own memory, also on the cpu device's concurrent workers), the launch-size check, the
MLIR it builds (upstream's gpu.dynamic_shared_memory + memref.view, re-parsable) and located
errors for misuse."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import nova
from nova.errors import DeviceError
from nova.ir.parser import parse_mlir
from nova.lang import KernelTypeError
from nova.runtime.cpu.module import DYNAMIC_SHARED_ALIGN, dynamic_shared_scratch

F32 = nova.float32[:]
TPB = 64


@nova.kernel
def block_sums(out, x):
    """Tree reduction of each block's elements in a float64 scratch sized by the launch."""
    n = nova.block_dim(0)
    buf = nova.dynamic_shared_array(nova.float64, n)
    t = nova.thread_id(0)
    i = nova.global_id(0)
    buf[t] = x[i] if i < len(x) else 0.0
    nova.syncthreads()
    s = n // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        nova.syncthreads()
        s //= 2
    if t == 0:
        out[nova.block_id(0)] = buf[0]


def test_block_reduction_sized_by_the_launch(device):
    x = np.random.default_rng(1).random(1000)
    blocks = -(-len(x) // TPB)
    out = np.zeros(blocks)
    block_sums.launch(out, x, grid=blocks, block=TPB, shared_bytes=TPB * 8, device=device)
    expected = np.add.reduceat(x, np.arange(0, len(x), TPB))
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@nova.kernel
def two_arrays(values, keys, n):
    """float32 values at byte 0, then int64 keys at byte 8 * n (16-byte aligned for even n);
    each block reverses both through shared memory."""
    vals = nova.dynamic_shared_array(nova.float32, n)
    ks = nova.dynamic_shared_array(nova.int64, n, 8 * n)
    t = nova.thread_id(0)
    i = nova.global_id(0)
    vals[t] = values[i]
    ks[t] = keys[i]
    nova.syncthreads()
    values[i] = vals[n - 1 - t]
    keys[i] = ks[n - 1 - t] * 2


def test_two_arrays_share_one_allocation(device):
    n, blocks = 32, 5
    values = np.arange(n * blocks, dtype=np.float32) * 0.5
    keys = np.arange(n * blocks, dtype=np.int64) * 1_000_003
    want_values = values.reshape(blocks, n)[:, ::-1].ravel()
    want_keys = keys.reshape(blocks, n)[:, ::-1].ravel() * 2
    two_arrays.launch(values, keys, n, grid=blocks, block=n, shared_bytes=16 * n, device=device)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(keys, want_keys)


@nova.kernel
def rest_of_allocation(out, header):
    """Without a count the view covers the bytes after the offset; `len` reads it."""
    tail = nova.dynamic_shared_array(nova.int32, offset=header)
    t = nova.thread_id(0)
    tail[t] = nova.int32(t * 3)
    nova.syncthreads()
    out[t] = tail[len(tail) - 1 - t]
    if t == 0:
        out[len(out) - 1] = len(tail)


def test_default_count_and_runtime_offset(device):
    threads, header = 24, 16
    out = np.zeros(threads + 1, np.int32)
    rest_of_allocation.launch(out, np.int64(header), grid=1, block=threads,
                              shared_bytes=header + 4 * threads, device=device)
    assert out[:threads].tolist() == [3 * (threads - 1 - t) for t in range(threads)]
    assert out[threads] == threads


BIG = 64 * 1024  # above the 48 KiB a CUDA kernel gets without opting in


@nova.kernel
def far_end(out):
    """Touches the last 4 KiB of a 64 KiB allocation (a constant count and offset)."""
    words = nova.dynamic_shared_array(nova.int32, 1024, BIG - 4096)
    t = nova.thread_id(0)
    for k in range(t, 1024, nova.block_dim(0)):
        words[k] = nova.int32(k)
    nova.syncthreads()
    total = 0
    for k in range(1024):
        total += words[k]
    out[t] = total


def test_launch_above_48_kib(device):
    out = np.zeros(128, np.int64)
    far_end.launch(out, grid=1, block=128, shared_bytes=BIG, device=device)
    assert (out == sum(range(1024))).all()


@nova.kernel
def isolation(bad):
    """Every thread fills its share of the block's memory with the block id, waits, then
    counts words that hold another block's id (0 when each block has its own memory)."""
    words = nova.dynamic_shared_array(nova.int32)
    t = nova.thread_id(0)
    b = nova.int32(nova.block_id(0))
    for k in range(t, len(words), nova.block_dim(0)):
        words[k] = b
    nova.syncthreads()
    wrong = 0
    for k in range(len(words)):
        if words[k] != b:
            wrong += 1
    nova.atomic_add(bad, 0, wrong)


def test_each_block_has_its_own_memory(device):
    bad = np.zeros(1, np.int64)
    isolation.launch(bad, grid=256, block=32, shared_bytes=4096, device=device)
    assert bad[0] == 0


def test_too_much_dynamic_shared_memory_names_the_kernel(device):
    out = np.zeros(1, np.int64)
    with pytest.raises(DeviceError, match="@far_end"):
        far_end.launch(out, grid=1, block=32, shared_bytes=300 * 1024, device=device)
        device.synchronize()


def test_mlir_is_upstream_dynamic_shared_memory_and_view():
    text = two_arrays.mlir(F32, nova.int64[:], nova.int64)
    assert "gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>" in text
    assert ("memref<?xi8, #gpu.address_space<workgroup>> to "
            "memref<?xi64, #gpu.address_space<workgroup>>") in text
    parse_mlir(text, "two_arrays.mlir")
    static = far_end.mlir(nova.int64[:])
    assert "][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1024xi32" in static
    assert "to memref<1024xi32, #gpu.address_space<workgroup>>" in static


@pytest.mark.parametrize("nbytes", [1, 3, 15, 16, 17, 100, 4096])
def test_cpu_scratch_is_16_byte_aligned_and_large_enough(nbytes):
    keep, address = dynamic_shared_scratch(nbytes)
    assert keep is not None and address is not None
    assert address % DYNAMIC_SHARED_ALIGN == 0
    start = ctypes.addressof(keep)
    assert start <= address and address + nbytes <= start + ctypes.sizeof(keep)
    assert dynamic_shared_scratch(0) == (None, None)


@nova.kernel
def dtype_not_constant(out, n):
    a = nova.dynamic_shared_array(n)
    a[0] = 1.0


@nova.kernel
def misaligned_offset(out):
    a = nova.dynamic_shared_array(nova.float32, 4, 6)
    a[0] = 1.0


@nova.kernel
def float_count(out):
    a = nova.dynamic_shared_array(nova.float32, out[0])
    a[0] = 1.0


@nova.kernel
def zero_count(out):
    a = nova.dynamic_shared_array(nova.float32, 0)
    a[0] = 1.0


ERRORS = [
    (dtype_not_constant, "needs a compile-time dtype", "nova.dynamic_shared_array(n)"),
    (misaligned_offset, "byte offset 6 must be >= 0 and a multiple of 4",
     "nova.dynamic_shared_array(nova.float32, 4, 6)"),
    (float_count, "needs an integer count, got", "nova.dynamic_shared_array(nova.float32, out[0])"),
    (zero_count, "needs a positive count, got 0", "nova.dynamic_shared_array(nova.float32, 0)"),
]


@pytest.mark.parametrize(("kern", "message", "line"), ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_misuse_gives_located_errors(kern, message, line):
    sig = (F32, nova.int64) if kern is dtype_not_constant else (F32,)
    with pytest.raises(KernelTypeError, match="error: ") as info:
        kern.mlir(*sig)
    text = str(info.value)
    assert message in text
    loc = info.value.location
    assert loc is not None and loc.filename == __file__
    with open(__file__) as fh:
        assert line in fh.read().splitlines()[loc.line - 1]

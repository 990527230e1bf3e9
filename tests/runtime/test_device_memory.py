"""Allocation, the caching pool, copies in every direction, memset, pinned memory, NumPy round
trips and memory errors, on every device."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nova
from nova import config
from nova.errors import ArgumentError, DeviceError, OutOfMemoryError, RuntimeFailure
from nova.runtime.memory import Buffer, HostBuffer
from nova.runtime.pool import size_class


def test_allocate_gives_aligned_distinct_buffers(device):
    a, b = device.allocate(100), device.allocate(100)
    assert isinstance(a, Buffer) and a.nbytes == 100 and a.dtype == np.uint8 and a.shape == (100,)
    assert a.ptr != b.ptr and a.ptr % 256 == 0 and b.ptr % 256 == 0
    assert a.device is device


def test_pool_statistics_and_reuse(device):
    gc.collect()  # no finalizer of an earlier test's garbage may run in the middle
    device.pool.empty_cache()
    before = device.pool.stats()
    buf = device.allocate(1000)
    ptr = buf.ptr
    s = device.pool.stats()
    assert s.bytes_in_use - before.bytes_in_use == size_class(1000)
    assert s.misses == before.misses + 1 and s.alloc_count == before.alloc_count + 1
    buf.free()
    s = device.pool.stats()
    assert s.bytes_cached - before.bytes_cached == size_class(1000)
    assert s.free_count == before.free_count + 1
    again = device.allocate(900)  # same size class: served from the cache
    assert again.ptr == ptr
    s = device.pool.stats()
    assert s.hits == before.hits + 1 and s.bytes_cached == before.bytes_cached
    assert s.peak_bytes_in_use >= s.bytes_in_use
    del again
    gc.collect()  # the finalizer returns it to the pool
    assert device.pool.stats().bytes_cached - before.bytes_cached == size_class(1000)
    device.pool.empty_cache()
    assert device.pool.stats().bytes_cached == 0


def test_pool_limit_raises_out_of_memory_naming_request_and_limit(device):
    gc.collect()
    device.pool.empty_cache()
    in_use = device.pool.stats().bytes_in_use
    device.pool.limit = in_use + 4096
    keep = device.allocate(4096)
    with pytest.raises(OutOfMemoryError, match=r"allocating 512 bytes.*limit of \d+ bytes"):
        device.allocate(512)
    keep.free()
    device.allocate(512).free()  # room again
    device.pool.limit = None


def test_pool_limit_drops_cache_before_failing(device):
    gc.collect()
    device.pool.empty_cache()
    in_use = device.pool.stats().bytes_in_use
    device.pool.limit = in_use + 8192
    device.allocate(8192).free()  # cached: 8 KiB
    buf = device.allocate(4096)  # another class: cache must be released to stay under the limit
    assert device.pool.stats().bytes_reserved <= device.pool.limit
    buf.free()
    device.pool.limit = None


def test_real_out_of_memory_is_clear(device):
    with pytest.raises(OutOfMemoryError, match="out of memory"):
        device.allocate(1 << 62)


@pytest.mark.parametrize("bad", [-1, 1.5, "8", None, True])
def test_bad_sizes(device, bad):
    with pytest.raises(ArgumentError):
        device.allocate(bad)


def test_zero_sized_buffer(device):
    buf = device.allocate(0)
    assert buf.nbytes == 0
    assert nova.to_device(np.zeros((0, 3), np.float32), device).numpy().shape == (0, 3)


def test_freed_buffer_use_raises(device):
    buf = nova.to_device(np.arange(4), device)
    buf.free()
    buf.free()  # idempotent
    with pytest.raises(DeviceError, match="freed Buffer"):
        _ = buf.ptr
    with pytest.raises(DeviceError, match="freed Buffer"):
        buf.numpy()
    with pytest.raises(DeviceError, match="freed Buffer"):
        device.memset(buf, 0)
    assert "freed" in repr(buf)


def test_buffer_context_manager_frees(device):
    with device.allocate(64) as buf:
        assert buf.alive
    assert not buf.alive


@pytest.mark.parametrize("async_", [False, True], ids=["sync", "async"])
def test_copies_all_directions(device, async_):
    stream = device.create_stream() if async_ else None
    src = np.arange(256, dtype=np.int32)
    a = device.allocate(src.nbytes, stream=stream)
    b = device.allocate(src.nbytes, stream=stream)
    device.copy_htod(a, src, stream=stream)
    device.copy_dtod(b, a, stream=stream)
    out = np.zeros_like(src)
    device.copy_dtoh(out, b, stream=stream)
    if stream is not None:
        stream.synchronize()
    np.testing.assert_array_equal(out, src)
    # partial copy with an explicit size
    part = np.zeros(8, np.int32)
    device.copy_dtoh(part, b, 16)
    np.testing.assert_array_equal(part, [0, 1, 2, 3, 0, 0, 0, 0])


def test_copy_size_errors(device):
    buf = device.allocate(16)
    with pytest.raises(ArgumentError, match="holds only 16 bytes"):
        device.copy_htod(buf, np.zeros(8, np.int32), 32)
    with pytest.raises(ArgumentError, match="C-contiguous"):
        device.copy_htod(buf, np.zeros(8, np.int32)[::2])
    with pytest.raises(ArgumentError, match="read-only"):
        device.copy_dtoh(_readonly(4), buf)
    with pytest.raises(ArgumentError, match="expected a device Buffer"):
        device.copy_htod(np.zeros(4), np.zeros(4))


def _readonly(n: int) -> np.ndarray:
    arr = np.zeros(n, np.int32)
    arr.setflags(write=False)
    return arr


def test_memset(device):
    buf = device.allocate(64)
    device.memset(buf, 0xAB)
    device.memset(buf, 0x01, 8)
    data = buf.numpy()
    assert list(data[:8]) == [1] * 8 and list(data[8:]) == [0xAB] * 56
    s = device.create_stream()
    device.memset(buf, 7, stream=s)
    s.synchronize()
    assert set(buf.numpy()) == {7}
    with pytest.raises(ArgumentError, match=r"0\.\.255"):
        device.memset(buf, 256)


def test_pinned_memory(device):
    hb = device.allocate_pinned(64)
    assert isinstance(hb, HostBuffer) and hb.nbytes == 64
    view = hb.numpy(np.float32)
    view[:] = np.arange(16, dtype=np.float32)
    buf = device.allocate(64)
    s = device.create_stream()
    device.copy_htod(buf, hb, stream=s)
    back = device.allocate_pinned(64)
    device.copy_dtoh(back, buf, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(back.numpy(np.float32), np.arange(16, dtype=np.float32))
    stats = device.pinned_pool.stats()
    assert stats.bytes_in_use >= 2 * size_class(64)
    hb.free()
    with pytest.raises(DeviceError, match="freed HostBuffer"):
        _ = hb.ptr


def test_to_device_remembers_dtype_and_shape(device):
    arr = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    buf = nova.to_device(arr, device)
    assert buf.dtype == np.float64 and buf.shape == (2, 3, 4) and buf.nbytes == arr.nbytes
    np.testing.assert_array_equal(buf.numpy(), arr)
    out = np.empty_like(arr)
    assert buf.copy_to_host(out) is out
    np.testing.assert_array_equal(out, arr)
    v = buf.view(np.int64, (24,))
    assert v.shape == (24,) and v.ptr == buf.ptr
    fortran = np.asfortranarray(arr)
    np.testing.assert_array_equal(nova.to_device(fortran, device).numpy(), arr)


def test_copy_from_host_and_empty(device):
    buf = device.empty((4, 4), "int16")
    assert buf.shape == (4, 4) and buf.dtype == np.int16
    buf.copy_from_host(np.full((4, 4), 3, np.int16))
    assert (buf.numpy() == 3).all()


_DTYPES = st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16,
                           np.float32, np.float64, np.bool_, np.complex64])


@settings(max_examples=30, deadline=None)
@given(arr=hnp.arrays(_DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, max_side=7)))
def test_numpy_round_trip_cpu(arr):
    buf = nova.to_device(arr, "cpu")
    back = buf.numpy()
    assert back.dtype == arr.dtype and back.shape == arr.shape
    np.testing.assert_array_equal(back, arr)


@pytest.mark.gpu
@settings(max_examples=30, deadline=None)
@given(arr=hnp.arrays(_DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, max_side=7)))
def test_numpy_round_trip_cuda(arr):
    from nova.runtime.selection import cuda_status

    if not cuda_status().usable:
        pytest.skip("no usable CUDA device")
    back = nova.to_device(arr, "cuda").numpy()
    assert back.dtype == arr.dtype and back.shape == arr.shape
    np.testing.assert_array_equal(back, arr)


def test_cpu_poison(cpu_device):
    cpu_device.pool.empty_cache()
    with config.scoped(poison_memory=True):
        buf = cpu_device.allocate(32)
    assert set(buf.numpy()) == {0xCD}


def test_buffers_of_another_device_are_rejected(device, cpu_device):
    if device is cpu_device:
        pytest.skip("needs two devices")
    with pytest.raises(ArgumentError, match="lives on"):
        device.copy_dtod(device.allocate(8), cpu_device.allocate(8))


def test_record_stream_delays_reuse(cpu_device):
    import threading

    gc.collect()
    s = cpu_device.create_stream()
    gate = threading.Event()
    s.enqueue(lambda: gate.wait(5), "gate")
    buf = cpu_device.allocate(4096)
    ptr = buf.ptr
    cpu_device.memset(buf, 1, stream=s)  # still queued behind the gate
    buf.record_stream(s)
    buf.free()
    assert cpu_device.pool.stats().pending_blocks == 1
    other = cpu_device.allocate(4096)
    assert other.ptr != ptr
    gate.set()
    s.synchronize()
    third = cpu_device.allocate(4096)
    assert third.ptr == ptr and cpu_device.pool.stats().pending_blocks == 0


def test_pool_pressure_does_not_steal_stream_errors(cpu_device):
    gc.collect()
    cpu_device.pool.empty_cache()
    s = cpu_device.create_stream()

    def boom() -> None:
        raise ValueError("stream work failed")

    s.enqueue(boom, "failing task")
    in_use = cpu_device.pool.stats().bytes_in_use
    cpu_device.pool.limit = in_use + 8192
    cpu_device.allocate(8192).free()
    cpu_device.allocate(4096).free()  # drops the cache: waits for streams, raises nothing
    cpu_device.pool.limit = None
    with pytest.raises(RuntimeFailure, match="failing task"):
        s.synchronize()


def test_views_must_fit(device):
    buf = device.allocate(16)
    assert buf.view(np.int32, (2, 2)).shape == (2, 2)
    for dtype, shape in ((np.int32, (5,)), (np.int32, (-1,))):
        with pytest.raises(ArgumentError, match="does not fit"):
            buf.view(dtype, shape)
    with pytest.raises(ArgumentError, match="not a NumPy dtype"):
        buf.view("nope")


_FREE_UNDER_QUEUED_COPY = """
import threading
import numpy as np
import nova
dev = nova.get_device("cpu")
s = dev.create_stream()
a = dev.allocate(1 << 20, stream=s)
b = dev.allocate(1 << 20, stream=s)
dev.pool.limit = 1 << 20  # below the bytes in use: a freed block is handed back, not cached
gate = threading.Event()
s.enqueue(gate.wait, "hold the stream")
host = np.full(1 << 20, 7, np.uint8)
dev.memset(a, 3, stream=s)
dev.copy_dtoh(host, a, stream=s)  # queued behind the gate
a.free()  # stream-ordered: the copy above still reads the block
waiting = dev._frees.waiting if hasattr(dev, "_frees") else None
gate.set()
s.synchronize()
assert (host == 3).all()
print("copied", flush=True)
assert waiting == 1, waiting
dev.pool.limit = None
dev.allocate(4096).free()  # a later raw allocation unmaps what waited
assert dev._frees.waiting == 0
"""


def test_block_freed_under_a_queued_copy_is_unmapped_only_after_it() -> None:
    """cpu: with a pool limit below the bytes in use, a stream-ordered free hands the block back
    to the arena at once; the arena used to make it no-access while a copy queued on the stream
    still read it (SIGSEGV on the stream thread, no guard: the process died). In a subprocess,
    so a regression fails this test instead of killing the test worker."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FREE_UNDER_QUEUED_COPY], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "copied" in done.stdout, (done.returncode, done.stderr)


def test_memref_words_are_the_kernel_slots_cached_per_shape(device):
    import struct

    buf = device.to_device(np.zeros((3, 5), np.float32))
    words = buf.memref_words()
    assert words == struct.pack("<QQq4q", buf.ptr, buf.ptr, 0, 3, 5, 5, 1)
    assert buf.memref_words() is words  # kept while the shape is the same object
    buf._retype(np.float32, (15,))
    assert buf.memref_words() == struct.pack("<QQq2q", buf.ptr, buf.ptr, 0, 15, 1)
    scalar = buf.view(np.float32, ())
    assert scalar.memref_words() == struct.pack("<QQq", buf.ptr, buf.ptr, 0)
    buf.free()
    with pytest.raises(DeviceError, match="freed Buffer"):
        buf.memref_words()

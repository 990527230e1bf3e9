"""The cuda device's Python side against a fake driver (runs without a GPU): argument passing,
properties, the pool's OOM path, module selection and the JIT log, launches, and the checked
wrapper's error and context-loss behaviour. The real driver is exercised by the gpu tests."""

from __future__ import annotations

import ctypes
import gc
import struct

import device_test_kernels as tk
import numpy as np
import pytest
from fake_cuda import FakeDriver

from nova.errors import CudaError, DeviceError, OutOfMemoryError
from nova.runtime.cuda import device as cuda_device_module
from nova.runtime.cuda.device import CudaDevice
from nova.runtime.device import ModuleImages


@pytest.fixture
def fake(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(cuda_device_module, "load_bindings", lambda: drv)
    return drv


@pytest.fixture
def gpu(fake) -> CudaDevice:
    return CudaDevice(0)


def test_properties_and_handles(gpu, fake):
    p = gpu.properties
    assert p.name == "Fake H100" and p.compute_capability == (9, 0) and p.arch == "sm_90"
    assert p.multiprocessor_count == 132 and p.total_memory == fake.capacity
    assert gpu.context_handle == 0xC0 and gpu.driver.raw is fake
    assert gpu.mem_info() == (fake.capacity, fake.capacity)
    assert gpu.default_stream.handle in fake.streams


def test_memory_round_trip(gpu, fake):
    host = np.arange(100, dtype=np.float32)
    buf = gpu.to_device(host)
    other = gpu.allocate(buf.nbytes)
    gpu.copy_dtod(other, buf)
    gpu.memset(buf, 0)
    np.testing.assert_array_equal(other.view(np.float32).numpy(), host)
    assert set(buf.numpy().view(np.uint8)) == {0}
    for call in ("cuMemcpyHtoDAsync", "cuMemcpyDtoDAsync", "cuMemcpyDtoHAsync",
                 "cuMemsetD8Async", "cuStreamSynchronize"):
        assert call in fake.calls
    hb = gpu.allocate_pinned(64)
    assert hb.ptr in fake.host_allocations


def test_real_oom_releases_the_cache_and_retries(gpu, fake):
    big = fake.capacity // 2
    gpu.allocate(big).free()  # cached
    other = gpu.allocate(big + 65536)  # another size class: must free the cache to fit
    assert gpu.pool.stats().bytes_cached == 0 and "cuCtxSynchronize" in fake.calls
    with pytest.raises(OutOfMemoryError, match=r"cuMemAlloc of \d+ bytes failed.*free"):
        gpu.allocate(fake.capacity)
    other.free()


def test_cubin_is_used_when_its_arch_matches(gpu, fake):
    images = ModuleImages("m", ptx=tk.PTX, cubin=b"CUBIN .entry scale", cubin_arch="sm_90")
    module = gpu.load_module(images)
    assert module.image_kind == "cubin" and "cuModuleLoadDataEx" not in fake.calls
    wrong_arch = ModuleImages("m", ptx=tk.PTX, cubin=b"CUBIN2", cubin_arch="sm_80")
    assert gpu.load_module(wrong_arch).image_kind == "ptx"
    with pytest.raises(DeviceError, match="only a cubin for sm_80"):
        gpu.load_module(ModuleImages("m", cubin=b"x", cubin_arch="sm_80"))


def test_ptx_jit_failure_carries_the_log(gpu):
    with pytest.raises(CudaError, match=r"(?s)cuModuleLoadDataEx failed: "
                       r"CUDA_ERROR_INVALID_PTX.*PTX JIT of device module 'bad'.*syntax error"):
        gpu.load_module(ModuleImages("bad", ptx=".version 7.0 syntax error bogus"))


def test_missing_kernel_names_it(gpu):
    with pytest.raises(CudaError, match=r"CUDA_ERROR_NOT_FOUND.*@nope"):
        tk.load(gpu).get_function("nope")


def test_launch_passes_a_packed_parameter_array(gpu, fake):
    fn = tk.function(gpu, "scale")
    out, src = gpu.allocate(64), gpu.allocate(64)
    seen = {}

    def capture(*args):
        params = args[9]
        slots = (ctypes.c_void_p * 4).from_address(params)
        seen["values"] = (ctypes.c_uint64.from_address(slots[0]).value,
                          ctypes.c_uint64.from_address(slots[1]).value,
                          ctypes.c_float.from_address(slots[2]).value,
                          ctypes.c_int64.from_address(slots[3]).value)
        return FakeDriver.cuLaunchKernel(fake, *args)

    fake.cuLaunchKernel = capture
    gpu.launch(fn, (3, 2), 128, [out, src, 1.5, 16], shared_bytes=64 * 1024)
    del fake.cuLaunchKernel
    assert seen["values"] == (out.ptr, src.ptr, 1.5, 16)
    launch = fake.launches[-1]
    assert launch["grid"] == (3, 2, 1) and launch["block"] == (128, 1, 1)
    assert launch["stream"] == gpu.default_stream.handle and launch["shared"] == 64 * 1024
    assert any(c.startswith("cuFuncSetAttribute:CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")
               for c in fake.calls)
    raw = struct.pack("<Q", 7)
    holder = ctypes.create_string_buffer(raw)
    slots = (ctypes.c_void_p * 1)(ctypes.addressof(holder))
    gpu.launch(tk.function(gpu, "set_flag"), 1, 1, ctypes.addressof(slots))
    assert fake.launches[-1]["params"] == ctypes.addressof(slots)  # passed through untouched


def test_cluster_launch(gpu, fake):
    fn = tk.function(gpu, "set_flag")
    flag = gpu.allocate(4)
    gpu.launch(fn, (4, 2), 32, [flag], cluster=(2, 1))
    assert fake.launches[-1]["cluster"] == (2, 1, 1) and fake.launches[-1]["grid"] == (4, 2, 1)
    with pytest.raises(Exception, match="not a multiple of the cluster shape"):
        gpu.launch(fn, 3, 32, [flag], cluster=2)


def test_sticky_error_loses_the_context_and_later_calls_fail_fast(gpu, fake):
    trap = tk.load(gpu).get_function("trap_kernel")
    buf = gpu.allocate(16)
    stream = gpu.create_stream()
    gpu.launch(trap, 1, 1, [], stream=stream)
    with pytest.raises(CudaError) as info:
        stream.synchronize()
    err = info.value
    assert err.context_lost and err.code == 719 and err.kernel == "trap_kernel"
    assert "CUDA_ERROR_LAUNCH_FAILED" in str(err) and "start a new process" in str(err)
    assert gpu.context_lost
    before = len(fake.calls)
    with pytest.raises(CudaError, match="not attempted: an earlier CUDA_ERROR_LAUNCH_FAILED "
                       "from cuStreamSynchronize in kernel @trap_kernel"):
        gpu.allocate(1 << 20)
    assert len(fake.calls) == before  # failed fast: the driver was not called
    # destructors stay quiet: no driver calls, no exceptions
    buf.free()
    del stream
    gc.collect()
    assert "cuStreamDestroy" not in fake.calls[before:]


def test_checked_wrapper_names_call_and_error(gpu, fake):
    with pytest.raises(CudaError) as info:
        gpu.driver.call("cuMemFree", 0xDEAD)
    assert info.value.call == "cuMemFree" and info.value.error_name == "CUDA_ERROR_INVALID_VALUE"
    assert "fake description" in str(info.value) and not info.value.context_lost
    assert not gpu.context_lost


def test_context_is_made_current_once_per_thread(gpu, fake):
    import threading

    gpu.mem_info()
    count = fake.calls.count("cuCtxSetCurrent")
    gpu.mem_info()
    assert fake.calls.count("cuCtxSetCurrent") == count
    t = threading.Thread(target=gpu.mem_info)
    t.start()
    t.join()
    assert fake.calls.count("cuCtxSetCurrent") == count + 1


def test_streams_and_events(gpu, fake):
    s = gpu.create_stream()
    assert s.handle in fake.streams and s.query()
    start, end = gpu.create_event(timing=True), gpu.create_event(timing=True)
    start.record(s)
    end.record(s)
    end.synchronize()
    assert end.query() and start.elapsed_ms(end) >= 0.0
    s.wait(start)
    assert "cuStreamWaitEvent" in fake.calls
    with pytest.raises(DeviceError, match="timing=True"):
        start.elapsed_ms(gpu.create_event().record(s))
    with s:
        pass
    assert s.handle not in fake.streams and s.closed
    with pytest.raises(DeviceError, match="closed stream"):
        s.synchronize()
    start.close()
    with pytest.raises(DeviceError, match="closed event"):
        start.query()


def test_cuda_array_interface_and_dlpack_round_trip(gpu, fake):
    import nova
    from nova.runtime.memory import Buffer

    buf = gpu.to_device(np.arange(4, dtype=np.float32))
    cai = buf.__cuda_array_interface__
    assert cai["data"] == (buf.ptr, False) and cai["stream"] == gpu.default_stream.handle

    foreign = type("Foreign", (), {})()
    foreign.__cuda_array_interface__ = dict(cai, stream=1)
    wrapped = Buffer.from_cuda_array_interface(foreign, device=gpu)
    assert wrapped.ptr == buf.ptr and wrapped.dtype == np.float32 and wrapped.shape == (4,)
    assert buf.__dlpack_device__() == (2, 0)
    waits = fake.calls.count("cuStreamWaitEvent")

    class Producer:  # hands out our own capsule, as another library would
        def __dlpack_device__(self):
            return buf.__dlpack_device__()

        def __dlpack__(self, stream=None):
            assert stream == gpu.default_stream.handle
            return buf.__dlpack__(stream=stream)

    imported = nova.from_dlpack(Producer(), device=gpu)
    assert fake.calls.count("cuStreamWaitEvent") == waits + 1  # consumer stream waited
    assert imported.ptr == buf.ptr and imported.shape == (4,)
    np.testing.assert_array_equal(imported.numpy(), np.arange(4, dtype=np.float32))
    imported.free()  # calls the producer's deleter
    from nova.runtime import dlpack

    gc.collect()
    assert not dlpack._exported


# --- the stream-ordered pool of compiled code (gpu.alloc) ------------------------------------
def test_ordered_pool_keeps_freed_memory(gpu, fake):
    """gpu.alloc's pool is the device's own, on this device, and its release threshold is
    "never": freed memory stays mapped for the next allocation instead of going back to the
    driver at every synchronization (the default pool's threshold 0 cost ~120 us a call)."""
    handle = gpu.ordered_pool_handle
    assert handle and handle == gpu.ordered_pool_handle  # created once
    pool = fake.mem_pools[handle]
    raw = fake
    assert pool["props"] == (raw.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED,
                             raw.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE, 0,
                             raw.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE)
    assert pool["CU_MEMPOOL_ATTR_RELEASE_THRESHOLD"] == 2**64 - 1
    assert fake.calls.count("cuMemPoolCreate") == 1
    assert gpu.ordered_pool_usage() == (0, 2 << 20)


def test_without_memory_pools_the_default_pool_serves(gpu, fake):
    fake.attributes["MEMORY_POOLS_SUPPORTED"] = 0
    assert gpu.ordered_pool_handle == 0 and gpu.ordered_pool_usage() is None
    assert "cuMemPoolCreate" not in fake.calls
    gpu.pool.empty_cache()  # nothing to trim


def test_empty_cache_trims_the_ordered_pool(gpu, fake):
    gpu.pool.empty_cache()
    assert not fake.mem_pools  # never created just to be trimmed
    handle = gpu.ordered_pool_handle
    gpu.allocate(4096).free()
    gpu.pool.empty_cache()
    assert fake.mem_pools[handle]["trims"] == [0]
    assert fake.calls.index("cuCtxSynchronize") < fake.calls.index("cuMemPoolTrimTo")
    # graph memory (automatic graphs, captures) is trimmed with it
    assert fake.calls.index("cuMemPoolTrimTo") < fake.calls.index("cuDeviceGraphMemTrim")


def test_pool_oom_trims_the_ordered_pool_before_retrying(gpu, fake):
    handle = gpu.ordered_pool_handle
    gpu.allocate(fake.capacity // 2).free()  # cached by Nova's pool
    fake.calls.clear()
    big = gpu.allocate(fake.capacity // 2 + 4096)  # only fits after the cache is released
    assert fake.mem_pools[handle]["trims"] == [0]
    assert fake.calls.index("cuMemPoolTrimTo") < len(fake.calls) - 1
    big.free()


def test_reclaim_for_ordered_alloc(gpu, fake):
    """What an out-of-memory gpu.alloc calls before its one retry: synchronize, release Nova's
    pool cache, trim; not while the stream is being captured (no retry then)."""
    handle = gpu.ordered_pool_handle
    gpu.allocate(4096).free()
    assert gpu.pool.stats().bytes_cached
    stream = gpu.create_stream()
    fake.capturing.add(stream.handle)
    fake.calls.clear()
    assert gpu.reclaim_for_ordered_alloc(stream.handle) is False
    assert "cuCtxSynchronize" not in fake.calls and gpu.pool.stats().bytes_cached
    fake.capturing.clear()
    assert gpu.reclaim_for_ordered_alloc(stream.handle) is True
    assert "cuCtxSynchronize" in fake.calls and not gpu.pool.stats().bytes_cached
    assert fake.mem_pools[handle]["trims"]
    stream.close()


def test_python_side_allocation_never_synchronizes(gpu, fake):
    """Buffers allocated and freed on a stream (and used by another one) never wait: the pool
    reuses a block on its stream at once, and a block another stream used once that stream's
    recorded event completed."""
    stream = gpu.create_stream()
    other = gpu.create_stream()
    gpu.allocate(1024, stream=stream).free()
    fake.calls.clear()
    for _ in range(10):
        buf = gpu.allocate(1024, stream=stream)
        buf.record_stream(other)
        buf.free()
        gpu.allocate(1024, stream=stream).free()
    assert not {"cuCtxSynchronize", "cuStreamSynchronize", "cuMemAlloc", "cuMemFree"} & set(
        fake.calls)
    stream.close()
    other.close()


class _BlockCache:
    """Stands in for the native ABI's block cache (nova.runtime.cuda.native_blocks)."""

    def __init__(self, cached: int) -> None:
        self.cached = cached
        self.flushes = 0

    def cached_bytes(self) -> int:
        return self.cached

    def flush_blocks(self, stream: int = 0) -> None:
        self.flushes += 1
        self.cached = 0


def test_block_cache_counts_as_free_and_is_flushed_before_trimming(gpu, fake):
    """Blocks the native block cache holds freed are reserved, not in use, for
    ordered_pool_usage; trimming gives them back first and waits for those frees."""
    handle = gpu.ordered_pool_handle
    pool = fake.mem_pools[handle]
    pool["used"] = 3 * 4096  # two blocks in use, one cached
    cache = _BlockCache(4096)
    gpu.attach_block_cache(cache)
    try:
        assert gpu.ordered_pool_usage() == (2 * 4096, 2 << 20)
        fake.calls.clear()
        gpu.pool.empty_cache()
        assert cache.flushes == 1 and pool["trims"] == [0]
        assert fake.calls.index("cuCtxSynchronize") < fake.calls.index("cuMemPoolTrimTo")
        fake.calls.clear()
        gpu.pool.empty_cache()  # nothing cached: no flush, no synchronization for it
        assert cache.flushes == 1 and "cuCtxSynchronize" not in fake.calls
    finally:
        gpu.attach_block_cache(None)

"""Returned memrefs are owned by the caller's arrays (issue 12, "No leaks"; nova.runtime.results).

Each case counts live allocations through the runtime's own accounting (`results.stats()`,
the device pool's `bytes_in_use`) and, for host-heap results, glibc's `mallinfo2` byte count:
no RSS sampling, so a loaded machine cannot make them flaky. The `device` fixture runs each on
cpu and, marked `gpu`, on cuda.
"""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

import nova
from nova.runtime import results
from nova.runtime.device import DeviceKind

PROGRAM = """
module {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

  func.func @twice(%a: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %r = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %a[%i] : memref<?xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %r[%i] : memref<?xf32>
    }
    return %r : memref<?xf32>
  }

  func.func @device_twice(%a: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %d = gpu.alloc host_shared (%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %a[%i] : memref<?xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %d[%i] : memref<?xf32>
    }
    return %d : memref<?xf32>
  }

  func.func @same_twice(%a: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
    %r = memref.alloc() : memref<4xf32>
    memref.copy %a, %r : memref<4xf32> to memref<4xf32>
    return %r, %r : memref<4xf32>, memref<4xf32>
  }

  func.func @with_view(%a: memref<8xf32>)
      -> (memref<8xf32>, memref<4xf32, strided<[1], offset: 2>>) {
    %r = memref.alloc() : memref<8xf32>
    memref.copy %a, %r : memref<8xf32> to memref<8xf32>
    %v = memref.subview %r[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
    return %r, %v : memref<8xf32>, memref<4xf32, strided<[1], offset: 2>>
  }

  func.func @identity(%a: memref<8xf32>) -> memref<8xf32> {
    return %a : memref<8xf32>
  }

  func.func @argument_view(%a: memref<8xf32>) -> memref<4xf32, strided<[1], offset: 4>> {
    %v = memref.subview %a[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
    return %v : memref<4xf32, strided<[1], offset: 4>>
  }

  func.func @global() -> memref<4xf32> {
    %t = memref.get_global @table : memref<4xf32>
    return %t : memref<4xf32>
  }

  func.func @empty() -> memref<0xf32> {
    %r = memref.alloc() : memref<0xf32>
    return %r : memref<0xf32>
  }

  func.func @dropped(%n: index) {
    %d = gpu.alloc (%n) : memref<?xf32>
    return
  }
}
"""


def heap_bytes() -> int:
    """glibc's bytes in use (mallinfo2: arena plus mmapped chunks), or -1 elsewhere."""

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost")]

    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return -1
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return int(info.uordblks + info.hblkhd)


@pytest.fixture
def mod(device):
    module = nova.compile(PROGRAM, device=device)
    yield module
    module.close()


@pytest.fixture
def cpu_only_host_access(device):
    """These programs' host code loops over its memref arguments. A capture on cuda stages
    arguments in plain device memory, which host code cannot dereference (docs/async.md: a
    captured entry moves data through kernels); on an H100 the host loop segfaulted inside
    the capture. Such a capture is not refused yet (known gap), so the case runs on cpu only."""
    if device.kind is DeviceKind.CUDA:
        pytest.skip("capture of host code that dereferences device memory (cpu only)")


def live() -> int:
    gc.collect()
    return results.stats().live


def test_heap_result_is_freed_with_its_array(mod):
    a = np.arange(16384, dtype=np.float32)  # 64 KiB results, as in the api1 reproducer
    mod.twice(a)
    before, heap = live(), heap_bytes()
    for _ in range(500):
        r = mod.twice(a)
        assert r[5] == 10.0
    del r
    assert live() == before
    if heap >= 0:
        assert heap_bytes() - heap < 1 << 20  # was +64 KiB per call (32 MiB here)


def test_result_stays_valid_while_held_and_is_freed_once(mod):
    a = np.arange(1024, dtype=np.float32)
    before = results.stats()
    kept = [mod.twice(a) for _ in range(20)]
    assert live() == before.live + 20
    assert all(np.array_equal(r, 2 * a) for r in kept)
    del kept
    after = results.stats()
    assert after.adopted - before.adopted == 20 and after.live == before.live


def test_device_allocation_result_goes_back_to_the_pool(mod, device):
    a = np.arange(4096, dtype=np.float32)
    mod.device_twice(a)
    gc.collect()
    pool = device.pool.stats().bytes_in_use
    before = live()
    for _ in range(200):
        r = mod.device_twice(a)
        assert np.array_equal(r, 2 * a)
    del r
    assert live() == before
    assert device.pool.stats().bytes_in_use == pool


def test_same_memref_returned_twice_is_one_allocation(mod, device):
    a = np.array([1, 2, 3, 4], np.float32)
    before = results.stats()
    r1, r2 = mod.same_twice(a)
    assert np.array_equal(r1, a) and np.array_equal(r2, a)
    assert results.stats().adopted == before.adopted + 1
    if device.kind is DeviceKind.CPU:  # views of one allocation (host-addressable)
        r1[0] = 9
        assert r2[0] == 9
    del r1
    assert live() == before.live + 1  # r2 still holds it
    assert r2[3] == 4
    del r2
    assert live() == before.live
    assert results.stats().released == before.released + 1


def test_view_of_a_returned_allocation_shares_its_owner(mod):
    a = np.arange(8, dtype=np.float32)
    before = results.stats()
    whole, part = mod.with_view(a)
    assert results.stats().adopted == before.adopted + 1
    del whole
    gc.collect()
    assert part.tolist() == [2, 3, 4, 5]  # still valid: the view keeps the allocation
    del part
    assert live() == before.live


def test_results_aliasing_arguments_are_not_freed(mod, device):
    a = np.arange(8, dtype=np.float32)
    buf = device.to_device(a)
    before = results.stats()
    for arg in (a, buf):
        for _ in range(50):
            r = mod.identity(arg)
            v = mod.argument_view(arg)
            assert r.tolist() == list(range(8)) and v.tolist() == [4, 5, 6, 7]
        r[0] = 99  # a copy: the argument is untouched
    del r, v
    gc.collect()
    assert results.stats().adopted == before.adopted  # nothing taken, nothing freed
    assert a.tolist() == list(range(8))
    assert buf.numpy().tolist() == list(range(8))
    assert mod.twice(a)[7] == 14.0  # the heap is intact


def test_global_result_is_copied_not_freed(mod):
    before = results.stats()
    for _ in range(100):
        r = mod["global"]()
        assert r.tolist() == [1, 2, 3, 4]
        r[0] = 7
    assert results.stats().adopted == before.adopted
    assert mod["global"]().tolist() == [1, 2, 3, 4]


def test_empty_result_is_freed_at_once(mod):
    before = live()
    for _ in range(100):
        assert mod.empty().shape == (0,)
    assert live() == before


def test_results_outlive_close(device):
    module = nova.compile(PROGRAM, device=device)
    a = np.arange(256, dtype=np.float32)
    heap = module.twice(a)
    dev = module.device_twice(a)
    pair = module.same_twice(a[:4].copy())
    module.close()
    gc.collect()
    assert np.array_equal(heap, 2 * a) and np.array_equal(dev, 2 * a)
    assert pair[0].tolist() == pair[1].tolist() == [0, 1, 2, 3]
    before = results.stats()
    del heap, dev, pair
    gc.collect()
    assert results.stats().live <= before.live


def test_close_frees_device_allocations_the_program_kept(cpu_device):
    """gpu.alloc memory a program neither freed nor returned belongs to the module until
    close() (cpu device: the runtime tracks every nova_rt_mem_alloc)."""
    module = nova.compile(PROGRAM, device=cpu_device)
    gc.collect()
    pool = cpu_device.pool.stats().bytes_in_use
    for _ in range(10):
        module.dropped(1 << 16)
    assert cpu_device.pool.stats().bytes_in_use >= pool + 10 * (1 << 18)
    module.close()
    assert cpu_device.pool.stats().bytes_in_use == pool


def test_graph_replay_results_are_copies(mod, cpu_only_host_access):
    """Replays copy the capture's result; the heap memref the host code returned at capture
    belongs to the CapturedEntry and is freed by its close()."""
    a = np.arange(64, dtype=np.float32)
    at_capture = results.stats()
    graph = mod.capture("twice", a)
    assert results.stats().adopted == at_capture.adopted + 1
    try:
        before = results.stats()
        first = graph.replay(a)
        for i in range(50):
            again = graph.replay(np.full(64, i, np.float32))
            assert not np.shares_memory(first, again)
        # host code ran once, at capture: every replay reads the capture's result, a copy
        assert np.array_equal(first, 2 * a) and np.array_equal(again, 2 * a)
        assert results.stats().adopted == before.adopted
    finally:
        graph.close()
    assert results.stats().live == at_capture.live
    assert np.array_equal(first, 2 * a)  # copies outlive the capture


def test_graph_of_a_device_allocation_result_keeps_it(mod, device, cpu_only_host_access):
    """A gpu.alloc returned at capture is the recording's own (not taken, not freed twice)."""
    a = device.to_device(np.arange(64, dtype=np.float32))
    before = results.stats()
    graph = mod.capture("device_twice", a)
    try:
        for _ in range(20):
            assert np.array_equal(graph.replay(a), 2 * np.arange(64, dtype=np.float32))
    finally:
        graph.close()
    assert results.stats().adopted == before.adopted


class _Attr:
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = "memory type"
    CU_POINTER_ATTRIBUTE_IS_MANAGED = "is managed"


class _MemoryType:
    CU_MEMORYTYPE_HOST = 1
    CU_MEMORYTYPE_DEVICE = 2


class _StubDriver:
    """cuPointerGetAttribute as CudaDriver.call returns it, per address: None (pageable host
    memory: CUDA_ERROR_INVALID_VALUE) or (memory type, is managed)."""

    def __init__(self, memory: dict[int, tuple[int, bool] | None]) -> None:
        self.memory = memory
        self.raw = type("raw", (), {"CUpointer_attribute": _Attr, "CUmemorytype": _MemoryType})

    def call(self, name: str, attr: str, address: int, allow: tuple[int, ...] = ()) -> object:
        assert name == "cuPointerGetAttribute"
        found = self.memory[address]
        if found is None:
            assert allow == (1,)
            return (1, None)
        value = found[0] if attr == _Attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE else int(found[1])
        return (0, value) if allow else value


def test_cuda_abi_takes_device_and_managed_memory_only() -> None:
    """Without a GPU: the cuda ABI hands over device and managed allocations (freed with
    nova_rt_mem_free, exactly once) and leaves host memory, registered or pageable, to libc."""
    from nova.runtime.cuda.abi import CudaAbi

    freed: list[tuple[int, object]] = []
    abi = object.__new__(CudaAbi)
    abi.device = type("dev", (), {})()
    abi.device.driver = _StubDriver({  # type: ignore[attr-defined]
        0x1000: (2, False), 0x2000: (1, True), 0x3000: (1, False), 0x4000: None})
    abi._free = lambda address, stream: freed.append((address, stream)) or 0  # type: ignore
    device_memory = abi.take_allocation(0x1000)
    managed = abi.take_allocation(0x2000)
    assert abi.take_allocation(0x3000) is None and abi.take_allocation(0x4000) is None
    assert device_memory is not None and managed is not None
    assert not device_memory.host_addressable and not managed.host_addressable
    device_memory.release()
    device_memory.release()
    del managed
    gc.collect()
    assert freed == [(0x1000, None), (0x2000, None)]


def test_result_that_cannot_be_returned_is_still_freed(device):
    """A memref NumPy cannot hold (bf16) raises ArgumentError after the call: the allocation
    it handed over is freed, not leaked."""
    from nova.errors import ArgumentError

    module = nova.compile("""
    func.func @halves() -> memref<8xbf16> {
      %r = memref.alloc() : memref<8xbf16>
      return %r : memref<8xbf16>
    }
    """, device=device)
    try:
        before = results.stats()
        for _ in range(10):
            with pytest.raises(ArgumentError, match="bf16"):
                module.halves()
        after = results.stats()
        assert after.adopted == before.adopted + 10 and after.live == before.live
    finally:
        module.close()


def test_host_code_reads_a_numpy_argument_on_the_first_call(device):
    """Regression (H100): on cuda a NumPy argument is staged into managed memory by an
    asynchronous copy; host code that loops over it right away read zeros on the first call
    (later calls reused a block that already held the same data, hiding the race)."""
    module = nova.compile(PROGRAM, device=device)
    for n in (17, 33, 65):  # a new staging size each time: a fresh block
        a = np.arange(n, dtype=np.float32) + 1
        assert np.array_equal(module.twice(a), 2 * a)
    module.close()

"""Stream-ordered allocation (issue 13 item 4): `gpu.alloc`/`gpu.dealloc` never make the host
wait, on either device, and memory is still never reused while work that may use it is queued.

The cpu device's runtime ABI is driven directly, with a stream held up by a gate (a queued task
waiting on a threading.Event), so each test shows what happens *before* the stream has run its
work: a free on the block's own stream is reusable at once by that stream; a free on another
stream, and host-shared memory, only once the stream reached the free; a null-stream allocation
orders the thread's open streams after it. Compiled programs then check results on both devices
(the native cuda side is tested against a mock driver in test_cuda_abi.py)."""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from async_programs import DEVICES

import nova
from nova.runtime.cpu.abi import CpuAbi
from nova.runtime.stream import Stream

SIZE = 4096


@contextmanager
def held(stream: Stream) -> Iterator[threading.Event]:
    """Hold `stream` up until the block ends (or 10 s pass: a test that waits for the stream
    would otherwise hang; it then fails on `released_early`)."""
    gate = threading.Event()
    timer = threading.Timer(10.0, gate.set)
    timer.start()
    stream.enqueue(gate.wait, "test gate")  # type: ignore[attr-defined]
    try:
        yield gate
    finally:
        gate.set()
        timer.cancel()
        stream.synchronize()


@pytest.fixture
def abi(cpu_device: Any) -> Iterator[CpuAbi]:
    program = CpuAbi(cpu_device, None)  # type: ignore[arg-type]  # no kernels are launched
    yield program
    program.close()


def alloc(abi: CpuAbi, stream: int | None = None, host_shared: int = 0) -> int:
    out = ctypes.c_void_p()
    abi._mem_alloc(ctypes.addressof(out), SIZE, stream, host_shared)
    return out.value or 0


def new_stream(abi: CpuAbi) -> int:
    out = ctypes.c_void_p()
    abi._stream_create(ctypes.addressof(out))
    return out.value or 0


def test_free_on_the_blocks_stream_is_reused_at_once(abi: CpuAbi, cpu_device: Any) -> None:
    with held(cpu_device.default_stream) as gate:
        first = alloc(abi)
        abi._mem_free(first, None)
        again = alloc(abi)  # the stream has not run anything since: no waiting
        assert again == first and not gate.is_set()
        abi._mem_free(again, None)


def test_free_on_another_stream_waits_for_that_stream(abi: CpuAbi) -> None:
    a, b = new_stream(abi), new_stream(abi)
    block = alloc(abi, a)
    with held(abi._stream(b)) as gate:
        abi._mem_free(block, b)  # stream b may still use it
        other = alloc(abi, a)
        assert other != block and not gate.is_set()
    assert alloc(abi, a) == block  # b has passed the free
    abi._mem_free(other, a)


def test_host_shared_memory_is_reused_only_after_its_stream_passed_the_free(
        abi: CpuAbi, cpu_device: Any) -> None:
    ordered = alloc(abi)
    abi._mem_free(ordered, None)  # cached for the default stream, at once
    with held(cpu_device.default_stream) as gate:
        shared = alloc(abi, host_shared=1)
        assert shared != ordered  # host code may touch it at once: never a queued-on block
        abi._mem_free(shared, None)
        second = alloc(abi, host_shared=1)
        assert second != shared and not gate.is_set()
    assert alloc(abi, host_shared=1) == shared
    abi._mem_free(second, None)


def test_null_stream_allocation_orders_this_threads_open_streams(
        abi: CpuAbi, cpu_device: Any) -> None:
    """What a host synchronization after a synchronous gpu.alloc gave: work enqueued later on
    the program's open streams comes after the allocation (here: after the held-up default
    stream), without the host waiting."""
    mine = abi._stream(new_stream(abi))
    ran = threading.Event()
    with held(cpu_device.default_stream):
        start = time.perf_counter()
        block = alloc(abi)  # null stream
        assert time.perf_counter() - start < 5.0
        mine.enqueue(ran.set, "after the allocation")  # type: ignore[attr-defined]
        assert not ran.wait(0.2)  # ordered after the default stream's queued work
    mine.synchronize()
    assert ran.is_set()
    # an allocation on a stream orders nothing else
    ran.clear()
    other = abi._stream(new_stream(abi))
    with held(other):
        block2 = alloc(abi, stream=next(h for h, s in abi._streams.items() if s is other))
        mine.enqueue(ran.set, "independent")  # type: ignore[attr-defined]
        assert ran.wait(5.0)
    abi._mem_free(block, None)
    abi._mem_free(block2, None)


# 256 threads a block over ceildiv(n, 256) blocks (%nb): one thread per element; a grid of one
# thread per block (4M blocks for the 16 MiB test) took racecheck > 200 s per launch sequence
_1D = ("blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1) "
       "threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)")


def _update(memref: str, op: str, constant: str) -> str:
    """A kernel body that applies `op` with the f32 `constant` to element e of `memref`, for
    the threads whose e = bx * 256 + tx is below %n."""
    return f"""
      %e0 = arith.muli %bx, %sx : index
      %e = arith.addi %e0, %tx : index
      %in = arith.cmpi ult, %e, %n : index
      scf.if %in {{
        %v = memref.load {memref}[%e] : memref<?xf32>
        %k = arith.constant {constant} : f32
        %w = {op} %v, %k : f32
        memref.store %w, {memref}[%e] : memref<?xf32>
      }}
      gpu.terminator"""

PROGRAM = f"""
// Every iteration allocates, uses and frees a scratch buffer on the default stream: each
// allocation reuses the block freed just before, while the stream may not have run its work.
func.func @reuse_loop(%x: memref<?xf32>, %iters: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %c256 = arith.constant 256 : index
  %nb = arith.ceildivui %n, %c256 : index
  scf.for %i = %c0 to %iters step %c1 {{
    %d = gpu.alloc (%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    gpu.launch {_1D} {{{_update("%d", "arith.addf", "1.0")}
    }}
    gpu.memcpy %x, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
  }}
  return
}}

// A stream opened before a synchronous gpu.alloc uses the allocation.
func.func @stream_opened_before(%x: memref<?xf32>, %out: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %c256 = arith.constant 256 : index
  %nb = arith.ceildivui %n, %c256 : index
  %t0 = gpu.wait async
  %d = gpu.alloc (%n) : memref<?xf32>
  %t1 = gpu.memcpy async [%t0] %d, %x : memref<?xf32>, memref<?xf32>
  %t2 = gpu.launch async [%t1] {_1D} {{{_update("%d", "arith.mulf", "3.0")}
  }}
  %t3 = gpu.memcpy async [%t2] %out, %d : memref<?xf32>, memref<?xf32>
  gpu.wait [%t3]
  gpu.dealloc %d : memref<?xf32>
  return
}}
"""


@pytest.fixture(scope="module", params=DEVICES)
def program(request: pytest.FixtureRequest) -> Iterator[Any]:
    module = nova.compile(PROGRAM, device=request.param)
    yield module
    module.close()


def test_allocations_reused_in_a_loop_keep_results_right(program: Any) -> None:
    device = program.device
    x = np.arange(257, dtype=np.float32)
    buf = nova.to_device(x, device)
    before = device.pool.stats()
    program.reuse_loop(buf, 40)
    np.testing.assert_array_equal(buf.numpy(), x + 40)
    after = device.pool.stats()
    assert after.bytes_in_use == before.bytes_in_use  # every allocation was freed
    assert after.device_allocs - before.device_allocs <= 1  # reused (cpu: the pool)


def test_a_stream_opened_before_a_synchronous_alloc_sees_it(program: Any) -> None:
    device = program.device
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    out = nova.to_device(np.zeros_like(x), device)
    for _ in range(5):
        program.stream_opened_before(nova.to_device(x, device), out)
        np.testing.assert_array_equal(out.numpy(), x * 3)


@pytest.mark.gpu
def test_cuda_gpu_alloc_keeps_its_pool_memory_reserved(cuda_device: Any) -> None:
    """On the GPU, gpu.alloc draws from the device's stream-ordered pool, whose memory stays
    reserved across synchronizations (the default pool's threshold 0 unmapped it at each one,
    and every call mapped fresh memory) and does not grow with the calls."""
    module = nova.compile(PROGRAM, device=cuda_device)
    try:
        assert cuda_device.ordered_pool_handle
        x = np.zeros(1 << 22, dtype=np.float32)  # 16 MiB: chunks of its own in the pool
        buf = nova.to_device(x, cuda_device)
        cuda_device.synchronize()
        in_use = cuda_device.ordered_pool_usage()[0]  # other tests' programs may have leaked
        module.reuse_loop(buf, 3)
        cuda_device.synchronize()
        used, reserved = cuda_device.ordered_pool_usage()
        assert used == in_use and reserved >= in_use + x.nbytes
        module.reuse_loop(buf, 200)
        cuda_device.synchronize()
        assert cuda_device.ordered_pool_usage() == (in_use, reserved)
        np.testing.assert_array_equal(buf.numpy(), x + 203)
        cuda_device.pool.empty_cache()  # trims the stream-ordered pool too
        assert cuda_device.ordered_pool_usage()[1] < reserved
    finally:
        module.close()


@pytest.mark.gpu
def test_cuda_block_cache_serves_repeated_allocations(cuda_device: Any) -> None:
    """On the GPU the native block cache (nova.runtime.cuda.native_blocks) hands the block a
    gpu.dealloc freed back to the next gpu.alloc of its size on the same stream: results stay
    right, the blocks it holds count as free in ordered_pool_usage, and emptying the device's
    caches gives them back to the driver (the pool's reserved memory then shrinks)."""
    from nova.runtime.cuda.abi import native_for

    module = nova.compile(PROGRAM, device=cuda_device)
    native = native_for(cuda_device)
    try:
        assert native.block_cache_enabled()
        x = np.arange(1 << 20, dtype=np.float32)  # 4 MiB: tracked by the cache
        buf = nova.to_device(x, cuda_device)
        cuda_device.pool.empty_cache()
        in_use = cuda_device.ordered_pool_usage()[0]
        module.reuse_loop(buf, 100)
        cuda_device.synchronize()
        np.testing.assert_array_equal(buf.numpy(), x + 100)
        assert native.cached_bytes() >= x.nbytes
        used, reserved = cuda_device.ordered_pool_usage()
        assert used == in_use and reserved >= in_use + x.nbytes
        cuda_device.pool.empty_cache()
        assert native.cached_bytes() == 0
        assert cuda_device.ordered_pool_usage()[1] < reserved
        native.set_block_cache(False)  # the driver path alone still gives the same results
        module.reuse_loop(buf, 10)
        np.testing.assert_array_equal(buf.numpy(), x + 110)
        assert native.cached_bytes() == 0
    finally:
        native.set_block_cache(True)
        module.close()

"""CPU-device memory isolation (issue 12 item 1; nova.runtime.cpu.arena, host_heap, fault_guard).

Device memory, host code's heap and staged NumPy arguments live in the guarded arena, away from
the Python heap: a kernel or host code storing 10^8 bytes past (or before) its buffer faults in
the guard, the call raises KernelFault naming the allocation, and the same process goes on to run
programs correctly (the reproducers e2/e3/e4 of ../shared/repro/reliability-2026-11-26 used to
end it with SIGSEGV/SIGABRT). These tests run in the pytest process itself on purpose: a
corrupted heap would crash the worker.
"""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import nova
from nova.errors import KernelFault, OutOfMemoryError
from nova.runtime.cpu import fault_guard
from nova.runtime.cpu.arena import PAGE, GuardedArena
from nova.runtime.selection import get_device

pytestmark = pytest.mark.skipif(fault_guard.supported() is not None,
                                reason=str(fault_guard.supported()))

SWEEP = 100_000_000
"""Bytes written past the buffer (10^8, the issue's done-when)."""

# e2, trimmed: one i32 store per block into a 2-element buffer, SWEEP / 4 blocks.
KERNEL_SWEEP = """
func.func @sweep(%n: index, %out: memref<?xi32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = arith.index_cast %bx : index to i32
    memref.store %v, %out[%bx] : memref<?xi32>
    gpu.terminator
  }
  return
}

func.func @sweep_alloc(%n: index) {
  %c2 = arith.constant 2 : index
  %out = gpu.alloc(%c2) : memref<?xi32>
  call @sweep(%n, %out) : (index, memref<?xi32>) -> ()
  gpu.wait
  gpu.dealloc %out : memref<?xi32>
  return
}
"""

# e3/e4, trimmed: host code storing from index %lo up to %hi into a 2-element memref.alloc.
HOST_SWEEP = """
func.func @host_sweep(%lo: index, %hi: index, %step: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %seven = arith.constant 7 : i32
  %buf = memref.alloc(%c2) : memref<?xi32>
  scf.for %i = %lo to %hi step %step {
    memref.store %seven, %buf[%i] : memref<?xi32>
  }
  %v = memref.load %buf[%c0] : memref<?xi32>
  memref.dealloc %buf : memref<?xi32>
  return %v : i32
}
"""

SAXPY = """
func.func @saxpy(%a: f32, %x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %blocks = arith.ceildivui %n, %c64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c64 : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %xv = memref.load %x[%i] : memref<?xf32>
      %yv = memref.load %y[%i] : memref<?xf32>
      %p = arith.mulf %a, %xv : f32
      %s = arith.addf %p, %yv : f32
      memref.store %s, %y[%i] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
"""


def _next_program_runs_right() -> None:
    """A fresh program on the same device computes the right answer, and Python's own heap
    still works (allocation-heavy code, a full collection)."""
    mod = nova.compile(SAXPY, device="cpu")
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    mod.saxpy(np.float32(2.0), x, y)
    np.testing.assert_array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)
    junk = [{"k": [i] * 8, "s": str(i) * 10} for i in range(20_000)]
    assert sum(len(d["s"]) for d in junk) > 0
    gc.collect()


@pytest.fixture(scope="module")
def sweep() -> Any:
    return nova.compile(KERNEL_SWEEP + HOST_SWEEP, device="cpu")


def test_kernel_writing_1e8_bytes_past_a_buffer_leaves_the_process_usable(sweep) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KernelFault, match=r"illegal memory access .* bytes past the end of the "
                                          r"cpu device allocation"):
        sweep.sweep_alloc(SWEEP // 4)
    _next_program_runs_right()


def test_kernel_overrunning_a_buffer_argument(sweep) -> None:  # type: ignore[no-untyped-def]
    buf = get_device("cpu").to_device(np.zeros(2, dtype=np.int32))
    with pytest.raises(KernelFault, match="bytes past the end"):
        sweep.sweep(SWEEP // 4, buf)
    _next_program_runs_right()


def test_kernel_overrunning_a_numpy_argument_never_reaches_the_python_heap(sweep) -> None:  # type: ignore[no-untyped-def]
    """NumPy arguments are staged into the arena on the cpu device: the sweep faults in the
    guard after the staged copy, the array itself is left as it was."""
    out = np.full(2, -1, dtype=np.int32)
    with pytest.raises(KernelFault, match="bytes past the end"):
        sweep.sweep(SWEEP // 4, out)
    np.testing.assert_array_equal(out, [-1, -1])
    _next_program_runs_right()


def test_numpy_arguments_are_staged_and_copied_back() -> None:
    """Staging keeps the semantics: in-place updates reach the array (strided views too)."""
    mod = nova.compile(SAXPY, device="cpu")
    base = np.zeros(40, dtype=np.float32)
    x = np.arange(10, dtype=np.float32)
    mod.saxpy(np.float32(1.0), x, base[::-4])
    expected = np.zeros(40, dtype=np.float32)
    expected[::-4] = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(base, expected)


def test_host_code_writing_1e8_bytes_past_a_buffer_leaves_the_process_usable(sweep) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KernelFault, match=r"in host code .* bytes past the end of the cpu "
                                          r"device allocation"):
        sweep.host_sweep(0, SWEEP // 4, 1)
    _next_program_runs_right()
    assert sweep.host_sweep(0, 2, 1) == 7  # the same program still works


def test_host_code_one_store_past_the_end(sweep) -> None:  # type: ignore[no-untyped-def]
    """e3: one store just past the end (glibc used to abort on the corrupted heap) lands in the
    arena's slack after the buffer, never in the Python heap: the call returns, the process goes
    on, and --check-bounds reports the store exactly."""
    assert sweep.host_sweep(0, 3, 1) == 7
    _next_program_runs_right()
    checked = nova.compile(HOST_SWEEP, device="cpu", check_bounds=True)
    with pytest.raises(nova.NovaError, match=r"index 2 out of bounds for dimension 0 of size 2"):
        checked.host_sweep(0, 3, 1)
    assert checked.host_sweep(0, 2, 1) == 7


def test_host_code_negative_index_store(sweep) -> None:  # type: ignore[no-untyped-def]
    """e4: a store at index -1 (and a sweep downwards) faults before the buffer."""
    with pytest.raises(KernelFault, match=r"in host code .* bytes before the start"):
        sweep.host_sweep(-(SWEEP // 4), 2, 1)
    _next_program_runs_right()


def test_a_store_that_jumps_far_past_the_buffer_faults_in_the_guard(sweep) -> None:  # type: ignore[no-untyped-def]
    """A single store 4*10^8 bytes away (a stride that skips over anything nearby) still lands
    in the buffer's own guard."""
    with pytest.raises(KernelFault, match=r"400000000 bytes past|bytes past the end"):
        sweep.host_sweep(SWEEP, SWEEP + 1, 1)
    _next_program_runs_right()


def test_reproducers_e2_e4_exit_cleanly_in_nova_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """nova-run on the kernel sweep (e2) and the host negative index (e4): exit 1 with the
    message, no signal."""
    e2 = tmp_path / "e2.mlir"
    e2.write_text(KERNEL_SWEEP.replace("func.func @sweep_alloc(%n: index)", "func.func @main()")
                  .replace("call @sweep(%n, %out)", "%n = arith.constant 25000000 : index\n"
                           "  call @sweep(%n, %out)"))
    run = subprocess.run([sys.executable, "-m", "nova.cli.run", str(e2), "--device", "cpu"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "bytes past the end of the cpu device allocation" in run.stderr
    assert "Traceback" not in run.stderr


def test_host_code_heap_is_guarded_and_freed(sweep) -> None:  # type: ignore[no-untyped-def]
    """Host code's memref.alloc comes from the device's host heap (arena memory), and
    memref.dealloc gives it back."""
    heap = get_device("cpu").host_heap
    before = heap.pool.stats().bytes_in_use
    assert sweep.host_sweep(0, 2, 1) == 7
    assert heap.pool.stats().bytes_in_use == before


RETURNS = """
func.func @make(%n: index) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    memref.store %f, %m[%i] : memref<?xf32>
  }
  return %m : memref<?xf32>
}
"""


def test_returned_host_memrefs_live_in_the_arena_and_are_freed_by_it() -> None:
    device = get_device("cpu")
    mod = nova.compile(RETURNS, device="cpu")
    before = device.host_heap.pool.stats().bytes_in_use
    out = mod.make(100)
    np.testing.assert_array_equal(out, np.arange(100, dtype=np.float32))
    assert device.arena.owns(out.ctypes.data)
    assert device.host_heap.pool.stats().bytes_in_use > before
    del out
    gc.collect()
    assert device.host_heap.pool.stats().bytes_in_use == before


# --- the arena itself ----------------------------------------------------------------------------

def test_arena_allocations_are_zeroed_aligned_and_spaced_by_guards() -> None:
    arena = GuardedArena("test", reserve=64 << 30, guard=1 << 30)
    a, b = arena.allocate(10), arena.allocate(3 * PAGE + 1)
    assert a % PAGE == 0 and b % PAGE == 0
    assert abs(b - a) >= 1 << 30
    assert ctypes.string_at(b, 3 * PAGE + 1) == bytes(3 * PAGE + 1)
    ctypes.memset(b, 0xAB, 3 * PAGE + 1)
    assert arena.owns(a) and arena.owns(a - 1) and not arena.owns(id(arena))
    assert arena.locate(a + PAGE + 5) == (a, PAGE)
    assert arena.locate(b - 7) == (b, 4 * PAGE)
    arena.free(b)
    c = arena.allocate(3 * PAGE)  # the slot is reused, zeroed again
    assert c == b and ctypes.string_at(c, 16) == bytes(16)
    with pytest.raises(ValueError, match="not a live arena allocation"):
        arena.free(a + 8)
    arena.free(a)
    arena.free(c)
    assert arena.live_bytes == 0


def test_arena_reserves_another_range_when_one_is_full() -> None:
    arena = GuardedArena("test", reserve=16 << 30, guard=4 << 30)
    addresses = [arena.allocate(PAGE) for _ in range(4)]  # 2 fit after the leading guard
    assert len(arena._ranges) == 2
    for a in addresses:
        arena.free(a)


def test_arena_refuses_absurd_sizes_cleanly() -> None:
    arena = GuardedArena("test", reserve=16 << 30, guard=1 << 30)
    with pytest.raises(OutOfMemoryError):
        arena.allocate(1 << 62)

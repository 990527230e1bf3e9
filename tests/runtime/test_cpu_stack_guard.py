"""Fiber stack overflows on the cpu device are contained: recursion through func.call in a kernel
with barriers runs into the no-access guard zone below the fiber stacks (a KernelFault naming a
fiber stack overflow and the exact block) or, when shallow, damages a canary (the same message
from the fiber runtime); never the malloc heap. The process goes on, the next kernel runs, and
a faulted call's fiber stacks are released. (The kernel is compiled for fibers: as barrier
regions its threads run on the worker thread's stack, see the last test.)"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import nova
from nova import config
from nova.errors import KernelFault
from nova.runtime.cpu import fault_guard

pytestmark = pytest.mark.skipif(fault_guard.supported() is not None,
                                reason=str(fault_guard.supported()))

# @down(n) recurses n deep and is not a tail call (its result is used after the call), so every
# level keeps a frame. Block `bad` / thread `who` recurses `deep` levels, every other thread 20.
RECURSE = """
module attributes {gpu.container_module} {
  gpu.module @m {
    func.func @down(%n: index) -> index {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %z = arith.cmpi eq, %n, %c0 : index
      %r = scf.if %z -> (index) {
        scf.yield %c1 : index
      } else {
        %m = arith.subi %n, %c1 : index
        %s = func.call @down(%m) : (index) -> index
        %u = arith.xori %s, %n : index
        %t = arith.muli %u, %c3 : index
        scf.yield %t : index
      }
      return %r : index
    }
    gpu.func @k(%deep: index, %bad: index, %who: index, %out: memref<?xindex>) kernel {
      %tx = gpu.thread_id x
      %bx = gpu.block_id x
      %bdim = gpu.block_dim x
      %c20 = arith.constant 20 : index
      gpu.barrier
      %is_block = arith.cmpi eq, %bx, %bad : index
      %is_thread = arith.cmpi eq, %tx, %who : index
      %hit = arith.andi %is_block, %is_thread : i1
      %n = arith.select %hit, %deep, %c20 : index
      %d = func.call @down(%n) : (index) -> index
      gpu.barrier
      %base = arith.muli %bx, %bdim : index
      %i = arith.addi %base, %tx : index
      memref.store %d, %out[%i] : memref<?xindex>
      gpu.return
    }
  }
  func.func @run(%deep: index, %bad: index, %who: index, %out: memref<?xindex>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @m::@k blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%deep : index, %bad : index, %who : index, %out : memref<?xindex>)
    return
  }
}
"""


def _down(n: int) -> int:
    r = 1
    for k in range(1, n + 1):
        r = ((r ^ k) * 3) & 0xFFFFFFFFFFFFFFFF
    return r - (1 << 64) if r >= 1 << 63 else r


@pytest.fixture(scope="module")
def recurse() -> nova.NovaModule:
    # fibers: block barriers alone would run as barrier regions, on the worker's own stack
    with config.scoped(cpu_regions=False):
        return nova.compile(RECURSE, device="cpu")


def _mappings() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for _ in maps)


def _check_runs(mod: nova.NovaModule) -> None:
    out = np.zeros(128, np.int64)
    mod.run(500, 1, 7, out)
    expected = np.full(128, _down(20), np.int64)
    expected[32 + 7] = _down(500)
    np.testing.assert_array_equal(out, expected)


def test_recursion_within_the_stack_works(recurse: nova.NovaModule) -> None:
    _check_runs(recurse)


@pytest.mark.parametrize("block", [0, 2])
def test_deep_recursion_is_a_kernel_fault_in_the_guard_zone(recurse: nova.NovaModule,
                                                            block: int) -> None:
    out = np.zeros(128, np.int64)
    with pytest.raises(KernelFault) as info:  # thread 0 overflows straight into the guard zone
        recurse.run(1_000_000, block, 0, out)
    text = str(info.value)
    assert "kernel @k failed: illegal memory access" in text
    assert "fiber stack overflow" in text and "guard zone" in text
    assert f"in block ({block},0,0)." in text  # the exact block, from CpuLaunch.current_block
    _check_runs(recurse)


def test_a_deep_overflow_from_the_highest_stack_is_contained(recurse: nova.NovaModule) -> None:
    """Thread 31 overflows down through every stack below it into the guard zone: only the
    call's own stacks are written, then the fault stops the call."""
    out = np.zeros(128, np.int64)
    with pytest.raises(KernelFault, match=r"fiber stack overflow .* in block \(3,0,0\)\."):
        recurse.run(10_000_000, 3, 31, out)
    gc.collect()  # a damaged malloc heap would crash in here or in the next kernel
    _check_runs(recurse)


def test_a_shallow_overflow_is_caught_by_the_canary(recurse: nova.NovaModule) -> None:
    """Thread 31 overflows into thread 30's stack (well short of the guard zone): the canary
    check when it reaches the barrier stops the block with the fiber runtime's message."""
    out = np.zeros(128, np.int64)
    with pytest.raises(KernelFault, match=r"fiber stack overflow in block \(1,0,0\), thread "
                                          r"\(31,0,0\)"):
        recurse.run(6_000, 1, 31, out)
    _check_runs(recurse)


# Thread 0 allocas n floats: 40000 (160 KiB, over two stacks plus the guard zone) would put its
# stack pointer below the guard zone, in malloc's heap; stack probing makes it fault in the zone.
ALLOCA = """
func.func @stack(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 7.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    gpu.barrier
    %a = memref.alloca(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      memref.store %f, %a[%i] : memref<?xf32>
    }
    %v = memref.load %a[%c0] : memref<?xf32>
    memref.store %v, %out[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def test_an_alloca_larger_than_the_guard_zone_cannot_jump_it() -> None:
    mod = nova.compile(ALLOCA, device="cpu")
    out = np.zeros(4, np.float32)
    with pytest.raises(KernelFault, match=r"fiber stack overflow .*guard zone"):
        mod.stack(40_000, out)
    gc.collect()
    mod.stack(4_000, out)  # 16 KiB: fits
    assert (out == 7.0).all()


def test_faulted_calls_release_their_stacks(recurse: nova.NovaModule) -> None:
    out = np.zeros(128, np.int64)
    for _ in range(3):  # warm up whatever the runtime maps once
        with pytest.raises(KernelFault):
            recurse.run(1_000_000, 0, 0, out)
    before = _mappings()
    for _ in range(20):
        with pytest.raises(KernelFault):
            recurse.run(1_000_000, 0, 0, out)
    # a leak would add 2 (region + guard) per fault, 40 here; the slack absorbs mappings other
    # threads of the process make meanwhile (the CUDA driver's, on a GPU machine)
    assert _mappings() <= before + 12
    _check_runs(recurse)


def test_region_kernel_recursion_overflow_is_a_kernel_fault() -> None:
    """As barrier regions the threads run on the worker thread's own stack (megabytes): a
    recursion that exhausts it is still a contained KernelFault, and the device goes on."""
    mod = nova.compile(RECURSE, device="cpu")
    out = np.zeros(4 * 32, np.int64)
    mod.run(25, 1, 3, out)
    assert out[0] == _down(20) and out[32 + 3] == _down(25)
    with pytest.raises(KernelFault, match="stack overflow"):
        mod.run(10**9, 2, 7, out)
    mod.run(25, 1, 3, out)

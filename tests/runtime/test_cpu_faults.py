"""A faulting kernel on the cpu device raises KernelFault; it never kills the process.

Covers nova.runtime.cpu.fault_guard: illegal addresses (null, far out of range, unmapped), a fault
on a fiber stack (kernel with gpu.barrier), integer division by zero (SIGFPE), a stack overflow by
a huge alloca in a fiber, faults on helper threads; after each the same process runs kernels
correctly. nova-run exits 1 with a clear message; crashes outside kernels still kill the process
as before (the handler chains to faulthandler / SIG_DFL). Layouts are checked against gcc.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import nova
from nova.errors import KernelFault
from nova.runtime.cpu import fault_guard
from nova.runtime.cpu.fault_record import FaultRecord
from nova.runtime.selection import get_device

sys.path.insert(0, str(Path(__file__).parent))
import device_test_kernels as dtk

pytestmark = pytest.mark.skipif(fault_guard.supported() is not None,
                                reason=str(fault_guard.supported()))

FAR = 1 << 26
"""An f32 index 256 MiB past the buffer: inside the no-access guard (1 GiB) the device arena
keeps after every allocation, so the store faults wherever the buffer lies. (It was 1 << 40,
4 TiB past: just above the arena's 4 TiB reservation, among the process's other mappings, where
a store into a writable one (a library's data, a thread's stack, malloc's heap) would not fault
but silently damage the test process.)"""

OOB_STORE = """
func.func @store(%i: index, %out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 5.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %j = arith.addi %tx, %i : index
    memref.store %f, %out[%j] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""

# Threads store before and after a barrier, so the kernel runs as fibers; the fault happens on a
# fiber stack and must land in the guarded call's frame on the thread's own stack.
FIBER_STORE = """
func.func @fiber(%i: index, %out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 2.0 : f32
  %g = arith.constant 3.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %f, %out[%tx] : memref<?xf32>
    gpu.barrier
    %j = arith.addi %tx, %i : index
    memref.store %g, %out[%j] : memref<?xf32>
    gpu.barrier
    gpu.terminator
  }
  return
}
"""

DIVIDE = """
func.func @divide(%a: i32, %b: i32, %out: memref<?xi32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %q = arith.divsi %a, %b : i32
    memref.store %q, %out[%tx] : memref<?xi32>
    gpu.terminator
  }
  return
}
"""

# A per-thread alloca of n floats in a fiber kernel: n = 2^38 (1 TiB) would move the fiber's
# stack pointer far away; the function probes the pages it grows the stack by (probe-stack), and
# the first probe below the lowest stack faults in the guard zone, with the stack exhausted.
STACK = """
func.func @stack(%n: index, %i: index, %j: index, %out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %f = arith.constant 7.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %a = memref.alloca(%n) : memref<?xf32>
    memref.store %f, %a[%i] : memref<?xf32>
    gpu.barrier
    %v = memref.load %a[%j] : memref<?xf32>
    memref.store %v, %out[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""

# 64 blocks over the device's helper threads; blocks from `bad` on fault (bad = 0: every thread
# that takes part faults, concurrently).
MANY_BLOCKS = """
func.func @blocks(%bad: index, %out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  %far = arith.constant 67108864 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c64, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c16 : index
    %k = arith.addi %base, %tx : index
    %hit = arith.cmpi uge, %bx, %bad : index
    %j = scf.if %hit -> (index) {
      %o = arith.addi %k, %far : index
      scf.yield %o : index
    } else {
      scf.yield %k : index
    }
    memref.store %f, %out[%j] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""

NOVA_RUN_OOB = """
func.func @main() {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %far = arith.constant 67108864 : index
  %f = arith.constant 1.0 : f32
  %m = gpu.alloc(%c4) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    gpu.barrier
    memref.store %f, %m[%far] : memref<?xf32>
    gpu.terminator
  }
  vector.print str "unreachable: the launch failed"
  return
}
"""

NOVA_RUN_OOB_PLAIN = NOVA_RUN_OOB.replace("    gpu.barrier\n", "")
assert NOVA_RUN_OOB_PLAIN != NOVA_RUN_OOB

# %n reaches the kernel as a parameter, so the alloca stays dynamic (2^38 floats = 1 TiB)
NOVA_RUN_STACK = """
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = arith.constant 274877906944 : index
  %f = arith.constant 1.0 : f32
  %m = gpu.alloc(%c8) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %a = memref.alloca(%n) : memref<?xf32>
    memref.store %f, %a[%tx] : memref<?xf32>
    gpu.barrier
    %v = memref.load %a[%c0] : memref<?xf32>
    memref.store %v, %m[%tx] : memref<?xf32>
    gpu.terminator
  }
  vector.print str "unreachable: the launch failed"
  return
}
"""

NOVA_RUN_DIVIDE = """
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i32
  %seven = arith.constant 7 : i32
  %m = gpu.alloc(%c4) : memref<?xi32>
  gpu.memset %m, %z : memref<?xi32>, i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %d = memref.load %m[%c0] : memref<?xi32>
    %q = arith.divsi %seven, %d : i32
    memref.store %q, %m[%tx] : memref<?xi32>
    gpu.terminator
  }
  vector.print str "unreachable: the launch failed"
  return
}
"""


@pytest.fixture(scope="module")
def oob() -> nova.NovaModule:
    return nova.compile(OOB_STORE, device="cpu")


def _fault_message(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(KernelFault) as info:
        call()
    return str(info.value)


def test_out_of_range_store_raises_and_the_process_goes_on(oob) -> None:  # type: ignore[no-untyped-def]
    out = np.zeros(64, np.float32)
    text = _fault_message(lambda: oob.store(FAR, out))
    assert "kernel @store_kernel failed" in text
    assert "illegal memory access (SIGSEGV" in text
    assert "in block (0,0,0)" in text
    assert "remains usable" in text
    oob.store(0, out)
    assert (out == 5.0).all()


def test_fault_inside_a_fiber_kernel() -> None:
    mod = nova.compile(FIBER_STORE, device="cpu")
    out = np.zeros(64, np.float32)
    text = _fault_message(lambda: mod.fiber(FAR, out))
    assert "kernel @fiber_kernel failed: illegal memory access" in text
    for _ in range(3):  # the device and the fiber kernel keep working
        out[:] = 0
        mod.fiber(0, out)
        assert (out == 3.0).all()


def test_integer_division_by_zero() -> None:
    mod = nova.compile(DIVIDE, device="cpu")
    out = np.zeros(8, np.int32)
    text = _fault_message(lambda: mod.divide(7, 0, out))
    assert "kernel @divide_kernel failed" in text
    assert "SIGFPE: integer divide by zero" in text
    mod.divide(42, 6, out)
    assert (out == 7).all()


def test_fiber_stack_overflow_by_a_huge_alloca() -> None:
    mod = nova.compile(STACK, device="cpu")
    out = np.zeros(32, np.float32)
    text = _fault_message(lambda: mod.stack(1 << 38, 0, 0, out))
    assert "kernel @stack_kernel failed: illegal memory access" in text
    # the alloca probes its pages (probe-stack) down into the guard zone below the fiber stacks
    assert "fiber stack overflow" in text and "guard zone" in text
    mod.stack(16, 3, 3, out)
    assert (out == 7.0).all()


def test_fault_on_a_helper_thread_names_the_block() -> None:
    mod = nova.compile(MANY_BLOCKS, device="cpu")
    out = np.zeros(64 * 16, np.float32)
    for _ in range(3):  # every thread that ran a chunk keeps working after a fault elsewhere
        text = _fault_message(lambda: mod.blocks(63, out))
        assert "kernel @blocks_kernel failed: illegal memory access" in text
        # the exact block, from CpuLaunch.current_block, even inside a helper's chunk
        assert "in block (63,0,0)." in text, text
        out[:] = 0
        mod.blocks(1000, out)
        assert (out == 1.0).all()


def test_faults_on_every_thread_at_once() -> None:
    mod = nova.compile(MANY_BLOCKS, device="cpu")
    out = np.zeros(64 * 16, np.float32)
    for _ in range(5):
        text = _fault_message(lambda: mod.blocks(0, out))
        assert "kernel @blocks_kernel failed: illegal memory access" in text
    mod.blocks(1000, out)
    assert (out == 1.0).all()


def test_streams_whose_thread_faulted_can_be_closed_and_replaced() -> None:
    """Each stream has its own worker thread: its fault state (alternate signal stack) is made
    on its first kernel and released when the thread exits."""
    device = get_device("cpu")
    fn = dtk.function(device, "scale")
    good = device.to_device(np.arange(64, dtype=np.float32))
    for _ in range(8):
        stream = device.create_stream()
        device.launch(fn, 1, 64, [0, good.ptr, 2.0, 64], stream=stream)
        with pytest.raises(KernelFault, match="at address 0x0 "):
            stream.synchronize()
        out = device.to_device(np.zeros(64, np.float32))
        device.launch(fn, 1, 64, [out.ptr, good.ptr, 2.0, 64], stream=stream)
        stream.synchronize()
        assert out.numpy()[5] == 10.0
        stream.close()


class _NoAccessRegion:
    """1 MiB of address space that faults on any access (PROT_NONE), standing in for freed
    memory. It stays reserved until closed: a munmap'd range would soon be reused by the next
    1 MiB mapping (Python's own arenas are that size), and the access would not fault."""

    SIZE = 1 << 20

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mmap.restype = ctypes.c_void_p
        self.libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_long)
        self.libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        # PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS
        self.address = self.libc.mmap(None, self.SIZE, 0, 0x22, -1, 0)
        assert self.address not in (None, ctypes.c_void_p(-1).value)

    def close(self) -> None:
        self.libc.munmap(self.address, self.SIZE)


@pytest.mark.parametrize("where", ["null", "no-access"])
def test_device_layer_launch_through_a_bad_pointer(where: str) -> None:
    """The hand-written `scale` kernel (out[i] = in[i] * factor) launched on bad pointers."""
    device = get_device("cpu")
    fn = dtk.function(device, "scale")
    region = _NoAccessRegion()
    try:
        bad = 0 if where == "null" else region.address
        good = device.to_device(np.arange(256, dtype=np.float32))
        device.launch(fn, 4, 64, [good.ptr, bad, 2.0, 256])
        why = "address not mapped" if where == "null" else "no permission for the access"
        with pytest.raises(KernelFault, match=rf"kernel @scale failed: illegal memory access "
                                              rf"\(SIGSEGV: {why}\) at address") as info:
            device.synchronize()
        # the first block to fault is reported: any of the 4 (they run on several threads)
        address = int(re.search(r"at address (0x[0-9a-f]+)", str(info.value)).group(1), 16)
        assert bad <= address < bad + 256 * 4
    finally:
        region.close()
    result = device.to_device(np.zeros(256, np.float32))
    device.launch(fn, 4, 64, [result.ptr, good.ptr, 2.0, 256])
    device.synchronize()
    assert result.numpy().tolist() == [2.0 * i for i in range(256)]


def test_far_index_lands_in_the_guard_after_the_buffer() -> None:
    """FAR must fault wherever the device places a buffer: in the reserved no-access guard after
    it, never in memory of the process beyond the arena."""
    device = get_device("cpu")
    buffer = device.allocate(64 * 4)
    target = buffer.ptr + 4 * FAR
    assert device.arena.owns(target) and device.arena.locate(target) is not None
    assert device.arena.guard_bytes > FAR * 4
    buffer.free()


def test_host_code_fault_record_is_written_inside_the_record() -> None:
    """A fault in guarded host code writes its FaultRecord at the caller's record, and nothing
    past it (the handler's NUL after the fields used to land one byte past a standalone
    FaultRecord, in the Python heap). Host code here: libc's strlen(NULL), called as an entry."""
    from nova.runtime.native_support import unwind_key, unwind_symbols

    guard = fault_guard.guard()
    assert guard is not None
    size = ctypes.sizeof(FaultRecord)
    memory = (ctypes.c_uint8 * (size + 16))(*([0xAB] * (size + 16)))
    strlen = ctypes.cast(ctypes.CDLL(None).strlen, ctypes.c_void_p).value
    status = guard.entry(unwind_symbols()["nova_rt_call_entry"], strlen, None, None,
                         ctypes.addressof(memory), unwind_key())
    assert status == fault_guard.FAULT_STATUS
    record = FaultRecord.from_buffer(memory)
    assert record.magic == fault_guard.FAULT_MAGIC and record.signal == signal.SIGSEGV
    assert record.address == 0
    assert list(memory[size:]) == [0xAB] * 16
    # the handler's IR stores the NUL at the constant the module names: FaultRecord's `end`
    assert FaultRecord.end.offset == fault_guard.RECORD_END_OFFSET


def test_many_faults_in_a_row_do_not_exhaust_anything(oob) -> None:  # type: ignore[no-untyped-def]
    """Each fault is caught on the same stream thread: the handler must unblock its signal
    (a second fault with SIGSEGV blocked would kill the process) and reuse the thread's state."""
    out = np.zeros(64, np.float32)
    for _ in range(200):
        with pytest.raises(KernelFault):
            oob.store(FAR, out)
    oob.store(0, out)
    assert (out == 5.0).all()


# ---- whole processes --------------------------------------------------------------------------

def _nova_run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "prog.mlir"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "nova.cli.run", str(path), "--device", "cpu"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("program", "expected"), [
    pytest.param(NOVA_RUN_OOB_PLAIN, "illegal memory access (SIGSEGV", id="illegal-address"),
    pytest.param(NOVA_RUN_OOB, "illegal memory access (SIGSEGV", id="illegal-address-fiber"),
    pytest.param(NOVA_RUN_DIVIDE, "arithmetic fault (integer division by zero, or overflow of a "
                 "signed division) (SIGFPE", id="divide-by-zero"),
    pytest.param(NOVA_RUN_STACK, "fiber stack overflow", id="fiber-stack-overflow"),
])
def test_nova_run_exits_1_with_a_clear_message(tmp_path: Path, program: str,
                                               expected: str) -> None:
    done = _nova_run(tmp_path, program)
    assert done.returncode == 1, (done.returncode, done.stderr)  # not -SIGSEGV / -SIGFPE
    assert "nova-run: error: kernel @main_kernel failed: " in done.stderr, done.stderr
    assert expected in done.stderr, done.stderr
    assert "the cpu device remains usable" in done.stderr
    assert "unreachable" not in done.stdout
    assert "Traceback" not in done.stderr and "Fatal Python error" not in done.stderr


_CRASH_OUTSIDE = textwrap.dedent("""
    import ctypes, sys
    sys.path.insert(0, {tests!r})
    import device_test_kernels as dtk
    from nova.runtime.selection import get_device
    dtk.load(get_device("cpu"))  # loading a CPU module installs the fault handlers
    print("installed", flush=True)
    ctypes.string_at(0)  # a crash outside any kernel
""")


_THREAD_EXIT_AFTER_GUARD_DROPPED = textwrap.dedent("""
    import gc
    from nova.runtime.cpu import fault_guard
    from nova.runtime.selection import get_device
    stream = get_device("cpu").create_stream()
    stream.enqueue(lambda: fault_guard.guard().state(), "map the worker's guard state")
    stream.synchronize()
    fault_guard._guard = None  # what interpreter shutdown does to the module's globals
    gc.collect()
    worker = stream._q.thread
    stream.close()
    worker.join()  # glibc runs the guard's pthread key destructor as the thread ends
    print("worker exited", flush=True)
""")


def test_a_thread_exiting_after_the_guard_was_dropped_does_not_crash() -> None:
    """The handler and the key destructor stay mapped when the last reference to the guard goes
    (as at interpreter shutdown, before daemon stream threads exit): the exit used to call the
    destructor at an unmapped address (SIGSEGV at the exit of `nova run`, rarely)."""
    done = subprocess.run([sys.executable, "-c", _THREAD_EXIT_AFTER_GUARD_DROPPED],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "worker exited" in done.stdout


@pytest.mark.parametrize("faulthandler", [False, True])
def test_crashes_outside_kernels_still_kill_the_process(faulthandler: bool) -> None:
    code = _CRASH_OUTSIDE.format(tests=str(Path(__file__).parent))
    flags = ["-X", "faulthandler"] if faulthandler else []
    done = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert "installed" in done.stdout, done.stderr
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stderr)
    if faulthandler:  # chained to Python's faulthandler, which printed the traceback
        assert "Fatal Python error: Segmentation fault" in done.stderr


# ---- struct layouts against the C headers -----------------------------------------------------

_LAYOUT_C = r"""
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <ucontext.h>
int main(void) {
  printf("%zu %zu %zu %zu %zu\n", sizeof(struct sigaction), offsetof(struct sigaction, sa_handler),
         offsetof(struct sigaction, sa_mask), offsetof(struct sigaction, sa_flags),
         offsetof(struct sigaction, sa_restorer));
  printf("%zu %zu %zu\n", offsetof(siginfo_t, si_code), offsetof(siginfo_t, si_addr),
         sizeof(sigjmp_buf));
  printf("%zu %zu %zu %zu\n", sizeof(stack_t), offsetof(stack_t, ss_sp),
         offsetof(stack_t, ss_flags), offsetof(stack_t, ss_size));
  printf("%zu %zu\n", offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]),
         offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]));
  printf("%d %d %d %d %d %d %d %d %d %zu\n", SA_SIGINFO, SA_ONSTACK, SS_DISABLE, SIGILL, SIGBUS,
         SIGFPE, SIGSEGV, NSIG, SIG_UNBLOCK, sizeof(sigset_t));
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_layouts_match_glibc(tmp_path: Path) -> None:
    (tmp_path / "layout.c").write_text(_LAYOUT_C)
    subprocess.run(["gcc", "-o", str(tmp_path / "layout"), str(tmp_path / "layout.c")],
                   check=True, timeout=60)
    out = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    fg = fault_guard
    assert out[0].split() == [str(v) for v in (fg.SIGACTION_BYTES, 0, 8,
                                                 fg.SIGACTION_FLAGS_OFFSET, 144)]
    assert out[1].split() == [str(v) for v in (fg.SIGINFO_CODE_OFFSET, fg.SIGINFO_ADDR_OFFSET,
                                                 fg.SIGJMP_BUF_BYTES)]
    assert out[2].split() == [str(v) for v in (fg.STACK_T_BYTES, 0, 8, 16)]
    assert out[3].split() == [str(fg.UCONTEXT_RSP_OFFSET), str(fg.UCONTEXT_RIP_OFFSET)]
    values = [int(v) for v in out[4].split()]
    assert values[:7] == [fg.SA_SIGINFO, fg.SA_ONSTACK, fg.SS_DISABLE, *fg.GUARDED_SIGNALS]
    assert max(fg.GUARDED_SIGNALS) < 32 <= values[7]  # the saved-actions table has 32 slots
    assert values[8:] == [fg.SIG_UNBLOCK, 128]

"""A fault caught by the cpu fault guard (nova.runtime.cpu.fault_guard): the `FaultRecord` its
handler writes (at the offsets the guard's IR stores to), the report made of it
(`describe_fault`, `describe_host_fault`) and the clean-up after it (`release_after_fault`).

A module of its own: only a caught fault and guarded host-code calls need it, so a kernel launch
neither builds the ctypes structure nor loads the reports (a cached kernel's cold start).
fault_guard serves these names too.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

from nova.abi import CpuLaunch
from nova.runtime.cpu.fault_guard import (
    _ERROR_OFFSET,
    FAULT_MAGIC,
    SIGBUS,
    SIGFPE,
    SIGILL,
    SIGSEGV,
)


class FaultRecord(ctypes.Structure):
    """What the handler writes at the start of `CpuLaunch.error` (48 of its 512 bytes), or at
    the record a guarded host-code call passes. `end`: the handler stores a NUL in its first
    byte; it belongs to the record, so a standalone FaultRecord is never written past (a
    40-byte one was: one byte into the Python heap per host-code fault)."""

    _fields_ = (
        ("magic", ctypes.c_uint64),
        ("signal", ctypes.c_int32),
        ("code", ctypes.c_int32),
        ("address", ctypes.c_uint64),
        ("pc", ctypes.c_uint64),
        ("sp", ctypes.c_uint64),
        ("end", ctypes.c_char * 8),
    )


_WHAT = {
    SIGSEGV: "illegal memory access",
    SIGBUS: "bus error (misaligned or unbacked memory access)",
    SIGFPE: "arithmetic fault (integer division by zero, or overflow of a signed division)",
    SIGILL: "illegal instruction (a trap or an instruction this CPU lacks)",
}
_NAMES = {SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGILL: "SIGILL"}
_CODES = {
    SIGSEGV: {1: "address not mapped", 2: "no permission for the access"},
    SIGBUS: {1: "misaligned address", 2: "nonexistent physical address", 3: "object error"},
    SIGFPE: {1: "integer divide by zero", 2: "integer overflow"},
}
_STACK_WINDOW = 64 * 1024


def release_after_fault(launch: CpuLaunch) -> None:
    """Free the fiber stacks a faulted call left allocated (a finished call frees its own):
    their guard zone is made accessible again first, as malloc will reuse the memory. Only the
    call's own block was written by an overflow (the guard zone stopped it), so free is safe."""
    block, guard = launch.fiber_stacks, int(launch.fiber_guard_bytes)
    if block:
        libc = _libc()
        if guard <= 0 or libc.mprotect(block, guard, _PROT_READ_WRITE) == 0:
            libc.free(ctypes.c_void_p.from_address(block - 8).value)  # the malloc'd pointer
        # else: leaked rather than handing no-access memory back to malloc
    launch.fiber_stacks = None
    launch.fiber_stacks_bytes = 0
    launch.fiber_guard_bytes = 0


_PROT_READ_WRITE = 3


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.mprotect.restype = ctypes.c_int
    libc.free.argtypes = (ctypes.c_void_p,)
    libc.free.restype = None
    return libc


def _in_guard_zone(launch: CpuLaunch, address: int) -> bool:
    """True when `address` lies in the no-access zone below the call's fiber stacks."""
    base = launch.fiber_stacks or 0
    return bool(base) and base <= address < base + int(launch.fiber_guard_bytes)


def fault_record(launch: CpuLaunch) -> FaultRecord | None:
    """The FaultRecord at the start of `launch.error`, or None when there is none."""
    from nova.runtime.cpu.fault_record import FaultRecord

    record = FaultRecord.from_buffer_copy(launch, _ERROR_OFFSET)
    return record if record.magic == FAULT_MAGIC else None


def block_coordinates(linear: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    """(x, y, z) of the block with linear id `linear` (x fastest, as kernels number them)."""
    return linear % grid[0], (linear // grid[0]) % grid[1], linear // (grid[0] * grid[1])


def describe_fault(launch: CpuLaunch, begin: int, end: int,
                   explain: Callable[[int], str | None] = lambda address: None) -> str:
    """A complete message for a fault caught in blocks [begin, end) of a launch (the caller
    prefixes the kernel's name); `explain(address)` names the device allocation a faulting
    address is next to, when it knows one."""
    record = fault_record(launch)
    if record is None:
        return (f"the kernel crashed (no details recorded) in blocks [{begin}, {end}); memory it "
                f"wrote may be inconsistent, the cpu device remains usable")
    sig = record.signal
    name = _NAMES.get(sig, f"signal {sig}")
    code = _CODES.get(sig, {}).get(record.code)
    text = f"{_WHAT.get(sig, 'fault')} ({name}{': ' + code if code else ''})"
    if sig in (SIGSEGV, SIGBUS):
        text += f" at address {record.address:#x}"
        if _in_guard_zone(launch, record.address):
            text += (": fiber stack overflow (a GPU thread's stack grew past the lowest fiber "
                     "stack into the guard zone below it: deep recursion, or large allocas or "
                     "private arrays; kernels with barriers run each GPU thread on a small fiber "
                     "stack, raise NOVA_CPU_STACK_KIB)")
        elif where := explain(record.address):
            text += f" ({where})"
        elif abs(record.address - record.sp) <= _STACK_WINDOW:
            text += (" next to the stack pointer: probably a stack overflow (a large alloca or "
                     "private array, or deep recursion; kernels with barriers run each GPU thread "
                     "on a small fiber stack, see NOVA_CPU_STACK_KIB)")
    text += f" (pc {record.pc:#x})"
    grid = (int(launch.grid[0]), int(launch.grid[1]), int(launch.grid[2]))
    current = int(launch.current_block)
    if end - begin == 1 or begin <= current < end:
        x, y, z = block_coordinates(begin if end - begin == 1 else current, grid)
        text += f" in block ({x},{y},{z})"
    else:
        text += f" in one of the blocks with linear ids [{begin}, {end})"
    return (text + ". The kernel stopped part-way: memory it wrote may be inconsistent; the cpu "
            "device remains usable.")


def describe_host_fault(record: FaultRecord, explain: Callable[[int], str | None]) -> str:
    """A message for a fault caught in host code (`explain(address)` names the allocation an
    address is next to, when it knows one)."""
    sig = record.signal
    name = _NAMES.get(sig, f"signal {sig}")
    code = _CODES.get(sig, {}).get(record.code)
    text = f"{_WHAT.get(sig, 'fault')} in host code ({name}{': ' + code if code else ''})"
    if sig in (SIGSEGV, SIGBUS):
        text += f" at address {record.address:#x}"
        where = explain(record.address)
        if where:
            text += f" ({where})"
    return (text + f" (pc {record.pc:#x}). The call stopped part-way: memory it wrote may be "
            "inconsistent; the cpu device remains usable (--check-bounds reports "
            "out-of-bounds accesses exactly).")

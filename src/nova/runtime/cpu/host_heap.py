"""Host code's heap on the cpu device: `malloc`, `aligned_alloc` and `free` in the guarded arena.

Why: host code's `memref.alloc` calls malloc (nova.backends.host.lower). On the cpu device those
buffers are handed to kernels as device memory, and host code indexes them itself: an
out-of-bounds store through them must not reach the Python heap either. When a program is linked
for the cpu device, its object's `malloc`, `aligned_alloc` and `free` are bound to the callbacks
here (nova.runtime.linker binds them per link; kernels and every other object keep libc's).

Allocations come from a caching `MemoryPool` over the device's `GuardedArena`, so repeated
allocations of one size cost no system call; each starts on a page boundary (any alignment up to
a page; larger ones are placed inside a larger block). Returned memrefs that point into this heap
are freed through it (`nova.runtime.results.register_heap`). A callback never raises into the C
frames: a failure returns null, which host code reports as a failed memref.alloc.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

from nova.runtime.cpu import fault_guard
from nova.runtime.cpu.arena import PAGE, GuardedArena
from nova.runtime.pool import Block, MemoryPool
from nova.runtime.results import register_heap

MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64)
ALIGNED_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

MAX_BYTES = 1 << 46
"""Larger requests fail (null) without asking the arena: a negative size seen as unsigned."""


class HostHeap:
    """malloc/aligned_alloc/free for host code, over a pool of guarded arena allocations."""

    def __init__(self, arena: GuardedArena) -> None:
        self.arena = arena
        self.pool = MemoryPool(f"{arena.name} host-code heap", arena.allocate, arena.free)
        self._blocks: dict[int, Block] = {}  # address handed out -> its pool block
        self._lock = threading.Lock()
        self._malloc = MALLOC(fault_guard.outside_guard(self._c_malloc))
        self._aligned_alloc = ALIGNED_ALLOC(fault_guard.outside_guard(self._c_aligned_alloc))
        self._free = FREE(fault_guard.outside_guard(self._c_free))
        register_heap(self.owns, self.free)

    def symbols(self) -> dict[str, int]:
        """libc name -> callback address, for binding a host object (valid while self lives)."""
        return {name: ctypes.cast(fn, ctypes.c_void_p).value or 0 for name, fn in (
            ("malloc", self._malloc), ("aligned_alloc", self._aligned_alloc),
            ("free", self._free))}

    def allocate(self, nbytes: int, alignment: int = 16) -> int:
        """`nbytes` at an address aligned to `alignment` (a power of two)."""
        extra = alignment - PAGE if alignment > PAGE else 0
        block = self.pool.allocate(max(nbytes, 1) + extra)
        address = -(-block.ptr // alignment) * alignment
        with self._lock:
            self._blocks[address] = block
        return address

    def owns(self, address: int) -> bool:
        """True for an address this heap handed out and has not freed."""
        with self._lock:
            return address in self._blocks

    def free(self, address: int) -> None:
        """Give an allocation back (null and unknown addresses: nothing happens)."""
        with self._lock:
            block = self._blocks.pop(address, None)
        if block is not None:
            self.pool.release(block)

    # --- the C callbacks: never raise ----------------------------------------------------------
    def _c_malloc(self, size: int) -> int | None:
        return self._c_aligned_alloc(16, size)

    def _c_aligned_alloc(self, alignment: int, size: int) -> int | None:
        if size > MAX_BYTES or alignment <= 0 or alignment & (alignment - 1):
            return None
        try:
            return self.allocate(size, alignment)
        except Exception:  # out of memory (or address space): host code reports the null
            return None

    def _c_free(self, address: int | None) -> None:
        if not address:
            return
        with contextlib.suppress(Exception):  # nothing to report to from a C callback
            self.free(address)  # not ours (a double free, a global's address): ignored

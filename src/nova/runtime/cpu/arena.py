"""The cpu device's memory: guarded mappings in a reserved address range, away from the Python heap.

Why: cpu device memory is host memory, and it used to come from libc `aligned_alloc`, i.e. the
Python process's own heap. A kernel (or host code) storing past its buffer then overwrote malloc's
bookkeeping and Python objects: the fault guard reported the fault, but the process died later
(SIGSEGV/SIGABRT). Here every allocation lives in the `GuardedArena`:

- The arena reserves large ranges of address space with `mmap(PROT_NONE, MAP_NORESERVE)`: no
  memory, no commit charge, just addresses nobody else will get (the kernel never places other
  mappings there, so neither malloc nor Python's allocator can).
- Each allocation is made readable and writable (`mprotect`) in place, starting on a page
  boundary, and is followed by a guard of `guard_bytes` (1 GiB) that stays PROT_NONE; the range
  starts with such a guard too. So a store up to 1 GiB before or past *any* allocation, however it
  got there (a sweep, a stride that jumps, a negative index), lands in no-access memory and faults
  at once (SIGSEGV, caught by the fault guard for kernels and host code), touching nothing else.
  Only the slack between an allocation's end and its page end is writable without a fault: it
  belongs to that allocation alone (`--check-bounds` reports such accesses exactly).
- Freeing maps the pages PROT_NONE again (`mmap(MAP_FIXED)`), which also drops their contents: a
  use after free faults instead of reading stale data.

Each allocation costs one `mprotect` and one `mmap` system call and at least a page; the caching
pools in front (`MemoryPool`, `HostHeap`) keep that off the hot paths. Address space is what the
guards spend: one range (`RESERVE_BYTES`, 4 TiB) holds about 4000 live allocations, and another
range is reserved when it is full (up to `MAX_RANGES`). Where the address space is limited
(`ulimit -v`), smaller ranges with proportionally smaller guards are tried.
"""

from __future__ import annotations

import _thread
import ctypes
import os

from nova.errors import OutOfMemoryError
from nova.records import MutableRecord

PAGE = os.sysconf("SC_PAGE_SIZE")  # mmap.PAGESIZE, without loading the mmap extension
GUARD_BYTES = 1 << 30
"""No-access bytes before and after every allocation (at full reservation size)."""
RESERVE_BYTES = 4 << 40
"""Address space reserved at a time (4 TiB)."""
MIN_RESERVE_BYTES = 16 << 30
"""The smallest range tried when the address space is limited."""
MAX_RANGES = 8

_PROT_NONE, _PROT_RW = 0, 3
_MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x02, 0x10, 0x20, 0x4000
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long)
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


def _pages(nbytes: int) -> int:
    return -(-max(nbytes, 1) // PAGE) * PAGE


class _Range(MutableRecord):
    """One reserved range: [base, base + size); `free` holds (start, length) gaps, sorted."""

    __match_args__ = ("base", "size", "guard", "free")
    _fields = __match_args__

    base: int
    size: int
    guard: int
    free: list[tuple[int, int]]

    def __init__(self, base: int, size: int, guard: int, free: list[tuple[int, int]]) -> None:
        self.base = base
        self.size = size
        self.guard = guard
        self.free = free

    def take(self, nbytes: int) -> int | None:
        """First fit for `nbytes` of data plus the guard after it; the data address or None."""
        need = nbytes + self.guard
        for i, (start, length) in enumerate(self.free):
            if length >= need:
                if length == need:
                    del self.free[i]
                else:
                    self.free[i] = (start + need, length - need)
                return start
        return None

    def give(self, start: int, nbytes: int) -> None:
        """Return a slot (data plus its guard), merging it with its neighbouring gaps."""
        import bisect  # freeing only: a loaded extension (_bisect) less on a cold start

        length = nbytes + self.guard
        i = bisect.bisect_left(self.free, (start, 0))
        if i < len(self.free) and start + length == self.free[i][0]:
            length += self.free.pop(i)[1]
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == start:
            start, length = self.free[i - 1][0], self.free[i - 1][1] + length
            i -= 1
            del self.free[i]
        self.free.insert(i, (start, length))


class GuardedArena:
    """Page-granular allocations, each surrounded by no-access guards, in reserved ranges."""

    def __init__(self, name: str = "cpu:0", reserve: int = RESERVE_BYTES,
                 guard: int = GUARD_BYTES) -> None:
        self.name = name
        self._reserve = reserve
        self._guard = guard
        self._ranges: list[_Range] = []
        self._live: dict[int, tuple[_Range, int]] = {}  # address -> (range, mapped bytes)
        self._lock = _thread.allocate_lock()

    @property
    def guard_bytes(self) -> int:
        """The guard of the most recent range (every range's, unless the address space is
        limited)."""
        return self._ranges[-1].guard if self._ranges else self._guard

    def allocate(self, nbytes: int) -> int:
        """`nbytes` (rounded up to pages) of zeroed read-write memory; its page-aligned address."""
        size = _pages(nbytes)
        with self._lock:
            for rng in self._ranges:
                start = rng.take(size)
                if start is not None:
                    break
            else:
                rng = self._new_range(size)
                start = rng.take(size)
                assert start is not None
            if _libc.mprotect(start, size, _PROT_RW) != 0:
                rng.give(start, size)
                raise OutOfMemoryError(f"{self.name}: out of memory for {nbytes} bytes "
                                       f"(mprotect errno {ctypes.get_errno()})")
            self._live[start] = (rng, size)
            return start

    def free(self, address: int) -> None:
        """Drop an allocation's pages and make them no-access again."""
        with self._lock:
            entry = self._live.pop(address, None)
            if entry is None:
                raise ValueError(f"{self.name}: {address:#x} is not a live arena allocation")
            rng, size = entry
            _libc.mmap(address, size, _PROT_NONE,
                       _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_FIXED | _MAP_NORESERVE, -1, 0)
            rng.give(address, size)

    def owns(self, address: int) -> bool:
        """True when `address` lies in one of the arena's reserved ranges (an allocation or a
        guard)."""
        return any(r.base <= address < r.base + r.size for r in self._ranges)

    def locate(self, address: int) -> tuple[int, int] | None:
        """(start, mapped bytes) of the live allocation nearest `address` within a guard's
        distance (the buffer an out-of-bounds access most likely belongs to), or None."""
        with self._lock:
            best: tuple[int, int] | None = None
            distance = None
            for start, (rng, size) in self._live.items():
                if start - rng.guard <= address < start + size + rng.guard:
                    d = start - address if address < start else max(0, address - start - size)
                    if distance is None or d < distance:
                        best, distance = (start, size), d
            return best

    @property
    def live_bytes(self) -> int:
        """Bytes mapped for live allocations."""
        with self._lock:
            return sum(size for _, size in self._live.values())

    def _new_range(self, size: int) -> _Range:
        if len(self._ranges) >= MAX_RANGES:
            raise OutOfMemoryError(f"{self.name}: out of guarded address space ({MAX_RANGES} "
                                   f"ranges of up to {self._reserve} bytes in use)")
        reserve, guard = self._reserve, self._guard
        while True:
            total = max(reserve, size + 2 * guard)
            base = _libc.mmap(None, total, _PROT_NONE,
                              _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
            if base not in (None, _MAP_FAILED):
                break
            if reserve <= MIN_RESERVE_BYTES:
                raise OutOfMemoryError(f"{self.name}: cannot reserve address space for device "
                                       f"memory ({total} bytes; errno {ctypes.get_errno()})")
            reserve //= 4
            guard = max(PAGE, guard // 4)
        rng = _Range(base, total, guard, [(base + guard, total - guard)])
        self._ranges.append(rng)
        return rng

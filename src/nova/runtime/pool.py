"""A caching memory pool with statistics and a settable limit, used for device and pinned memory.

Why a pool: device allocation (cuMemAlloc) synchronizes and costs tens of microseconds, and programs
allocate the same sizes over and over. Freed blocks are cached per (stream, size class) and reused
by later allocations on the same stream, which is safe without any synchronization because work on
one stream runs in order (the PyTorch rule): allocation and free are stream-ordered and never wait.
A block is never handed to another stream while cached; a block that other streams used
(`release(after=events)`) waits, unsynchronized, until their events completed. When memory runs
out the pool synchronizes the device, frees its whole cache, lets the device trim its other
caches (`trim`) and retries once before raising `OutOfMemoryError`.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable, Sequence
from typing import Any

from nova.errors import OutOfMemoryError
from nova.records import MutableRecord, Record

_SMALL = 1 << 20  # below 1 MiB: round to 512 B; above: round to 64 KiB
_SMALL_GRAIN = 512
_LARGE_GRAIN = 64 << 10


def _completed(event: Any) -> bool:
    try:
        return bool(event.query())
    except Exception:  # e.g. the CUDA context is lost: nothing will ever run again
        return True


def size_class(nbytes: int) -> int:
    """The rounded size the pool really reserves for a request of `nbytes` (0 stays 0)."""
    grain = _SMALL_GRAIN if nbytes < _SMALL else _LARGE_GRAIN
    return -(-nbytes // grain) * grain


class PoolStats(Record):
    """A snapshot of a pool's counters. Byte counts are of rounded (reserved) sizes."""

    __match_args__ = ("bytes_in_use", "bytes_cached", "peak_bytes_in_use", "alloc_count",
                      "free_count", "hits", "misses", "device_allocs", "device_frees", "limit",
                      "pending_blocks")
    _fields = __match_args__

    bytes_in_use: int
    bytes_cached: int
    peak_bytes_in_use: int
    alloc_count: int  # allocate() calls that succeeded
    free_count: int  # blocks given back
    hits: int  # served from the cache
    misses: int  # needed a new block from the device
    device_allocs: int  # raw allocations made
    device_frees: int  # raw frees made
    limit: int | None
    pending_blocks: int  # freed, waiting for other streams' work (Buffer.record_stream)

    def __init__(self, bytes_in_use: int, bytes_cached: int, peak_bytes_in_use: int,
                 alloc_count: int, free_count: int, hits: int, misses: int, device_allocs: int,
                 device_frees: int, limit: int | None, pending_blocks: int = 0) -> None:
        object.__setattr__(self, "bytes_in_use", bytes_in_use)
        object.__setattr__(self, "bytes_cached", bytes_cached)
        object.__setattr__(self, "peak_bytes_in_use", peak_bytes_in_use)
        object.__setattr__(self, "alloc_count", alloc_count)
        object.__setattr__(self, "free_count", free_count)
        object.__setattr__(self, "hits", hits)
        object.__setattr__(self, "misses", misses)
        object.__setattr__(self, "device_allocs", device_allocs)
        object.__setattr__(self, "device_frees", device_frees)
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "pending_blocks", pending_blocks)

    @property
    def bytes_reserved(self) -> int:
        """Everything the pool holds from the device (in use plus cached)."""
        return self.bytes_in_use + self.bytes_cached


class Block(MutableRecord):
    """One reserved region: the address, its rounded size and the stream key it belongs to."""

    __match_args__ = ("ptr", "size", "stream_key")
    _fields = __match_args__

    ptr: int
    size: int
    stream_key: int | None

    def __init__(self, ptr: int, size: int, stream_key: int | None) -> None:
        self.ptr = ptr
        self.size = size
        self.stream_key = stream_key


class MemoryPool:
    """Caching allocator over a raw `alloc(size) -> ptr` / `free(ptr)` pair.

    `alloc` must raise OutOfMemoryError when the device is out of memory. `synchronize` is called
    before the cache is released on memory pressure (cached blocks may still be read by work the
    streams have not finished). `trim` gives back what other allocators of the device cache (cuda:
    the stream-ordered pool of compiled code); it runs after the cache was released, on memory
    pressure and in `empty_cache`. `limit` caps the bytes in use (None: no cap); the pool also
    keeps the bytes it reserves within the limit by dropping cache first.
    """

    def __init__(self, name: str, alloc: Callable[[int], int], free: Callable[[int], None],
                 synchronize: Callable[[], None] = lambda: None, limit: int | None = None,
                 trim: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self._alloc = alloc
        self._free = free
        self._synchronize = synchronize
        self._trim = trim
        self._lock = _thread.RLock()
        self._cache: dict[tuple[int | None, int], list[int]] = {}
        self._pending: list[tuple[Block, tuple[Any, ...]]] = []
        self._limit = limit
        self._in_use = 0
        self._cached = 0
        self._peak = 0
        self._counts = dict.fromkeys(
            ("alloc", "free", "hits", "misses", "device_allocs", "device_frees"), 0)

    # --- settings and statistics ------------------------------------------------------------
    @property
    def limit(self) -> int | None:
        return self._limit

    @limit.setter
    def limit(self, value: int | None) -> None:
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ValueError(f"pool limit must be a non-negative int or None, got {value!r}")
        with self._lock:
            self._limit = value
            if value is not None and self._in_use + self._cached > value:
                self.empty_cache()

    def stats(self) -> PoolStats:
        with self._lock:
            c = self._counts
            return PoolStats(self._in_use, self._cached, self._peak, c["alloc"], c["free"],
                             c["hits"], c["misses"], c["device_allocs"], c["device_frees"],
                             self._limit, len(self._pending))

    def reset_peak(self) -> None:
        with self._lock:
            self._peak = self._in_use

    # --- allocation ------------------------------------------------------------------------
    def allocate(self, nbytes: int, stream_key: int | None = None) -> Block:
        """Reserve at least `nbytes` (a cached block of the same class and stream if any)."""
        size = size_class(nbytes)
        with self._lock:
            self._collect_pending()
            if self._limit is not None and self._in_use + size > self._limit:
                raise OutOfMemoryError(
                    f"{self.name}: allocating {nbytes} bytes ({size} reserved) would exceed the "
                    f"pool limit of {self._limit} bytes ({self._in_use} bytes in use)")
            if size == 0:
                return self._grant(Block(0, 0, stream_key), hit=True)
            cached = self._cache.get((stream_key, size))
            if cached:
                ptr = cached.pop()
                self._cached -= size
                return self._grant(Block(ptr, size, stream_key), hit=True)
            if self._limit is not None and self._in_use + self._cached + size > self._limit:
                self._synchronize()
                self._release_cache()
            ptr = self._alloc_with_retry(nbytes, size)
            self._counts["device_allocs"] += 1
            return self._grant(Block(ptr, size, stream_key), hit=False)

    def _grant(self, block: Block, hit: bool) -> Block:
        self._in_use += block.size
        self._peak = max(self._peak, self._in_use)
        self._counts["alloc"] += 1
        self._counts["hits" if hit else "misses"] += 1
        return block

    def _alloc_with_retry(self, nbytes: int, size: int) -> int:
        try:
            return self._alloc(size)
        except OutOfMemoryError as first:
            if not self._cached:
                raise OutOfMemoryError(
                    f"{self.name}: out of memory allocating {nbytes} bytes ({size} reserved; "
                    f"{self._in_use} bytes in use by this pool, nothing cached): {first}"
                ) from None
        self._synchronize()
        self._collect_pending(all_done=True)
        self._release_cache()
        self._trim()
        try:
            return self._alloc(size)
        except OutOfMemoryError as second:
            raise OutOfMemoryError(
                f"{self.name}: out of memory allocating {nbytes} bytes ({size} reserved) even "
                f"after releasing the cache; {self._in_use} bytes in use by this pool: {second}"
            ) from None

    def release(self, block: Block, after: Sequence[Any] = ()) -> None:
        """Give a block back; it is cached for reuse on its stream. `after` are events (objects
        with `query() -> bool`) recorded on other streams that used the block: it stays
        reserved until they have completed."""
        with self._lock:
            self._counts["free"] += 1
            if after:
                self._pending.append((block, tuple(after)))
                return
            self._recycle(block)

    def _collect_pending(self, all_done: bool = False) -> None:
        """Recycle held-back blocks whose events completed (all of them after a device-wide
        synchronize, `all_done`)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []  # re-entrant releases go to the new list
        for block, events in pending:
            if all_done or all(_completed(e) for e in events):
                self._recycle(block)
            else:
                self._pending.append((block, events))

    def _recycle(self, block: Block) -> None:
        with self._lock:
            self._in_use -= block.size
            if block.size == 0:
                return
            if self._limit is not None and self._in_use + self._cached + block.size > self._limit:
                self._raw_free(block.ptr)
                return
            self._cache.setdefault((block.stream_key, block.size), []).append(block.ptr)
            self._cached += block.size

    def forget_stream(self, stream_key: int) -> None:
        """Free the cached blocks of a stream that is going away (its work has finished)."""
        with self._lock:
            for key in list(self._cache):
                if key[0] == stream_key:
                    for ptr in self._cache.pop(key, ()):
                        self._cached -= key[1]
                        self._raw_free(ptr)

    def empty_cache(self) -> None:
        """Synchronize the device and return every cached block to it (and let the device trim
        its other caches)."""
        with self._lock:
            if self._cached or self._pending:
                self._synchronize()
                self._collect_pending(all_done=True)
                self._release_cache()
            self._trim()

    def _release_cache(self) -> None:
        # popitem, not iteration: a garbage-collected Buffer's finalizer may re-enter `release`
        # (same thread, RLock) while we run and add entries.
        while self._cache:
            (_, size), ptrs = self._cache.popitem()
            for ptr in ptrs:
                self._cached -= size
                self._raw_free(ptr)

    def _raw_free(self, ptr: int) -> None:
        self._counts["device_frees"] += 1
        self._free(ptr)

"""The caching pool on its own, over a fake allocator: size classes, per-stream reuse, limits,
the out-of-memory retry and re-entrant releases from finalizers."""

from __future__ import annotations

import itertools

import pytest

from nova.errors import OutOfMemoryError
from nova.runtime.pool import MemoryPool, size_class


class FakeMemory:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.live: dict[int, int] = {}
        self.syncs = 0
        self._next = itertools.count(0x10000, 0x100000)

    def alloc(self, size: int) -> int:
        if sum(self.live.values()) + size > self.capacity:
            raise OutOfMemoryError("fake device full")
        ptr = next(self._next)
        self.live[ptr] = size
        return ptr

    def free(self, ptr: int) -> None:
        del self.live[ptr]

    def sync(self) -> None:
        self.syncs += 1


def make(capacity: int = 1 << 20, limit: int | None = None) -> tuple[MemoryPool, FakeMemory]:
    mem = FakeMemory(capacity)
    return MemoryPool("test pool", mem.alloc, mem.free, mem.sync, limit), mem


def test_size_classes():
    assert size_class(0) == 0 and size_class(1) == 512 and size_class(512) == 512
    assert size_class(513) == 1024 and size_class((1 << 20) + 1) == (1 << 20) + 65536


def test_blocks_are_reused_only_on_their_stream():
    pool, mem = make()
    a = pool.allocate(100, stream_key=1)
    pool.release(a)
    b = pool.allocate(100, stream_key=2)
    assert b.ptr != a.ptr  # another stream: a fresh block
    c = pool.allocate(300, stream_key=1)
    assert c.ptr == a.ptr  # same stream and class: reused without synchronization
    s = pool.stats()
    assert (s.hits, s.misses, s.device_allocs, s.alloc_count) == (1, 2, 2, 3)
    assert s.bytes_in_use == 1024 and s.bytes_cached == 0 and mem.syncs == 0


def test_out_of_memory_releases_cache_after_synchronizing():
    pool, mem = make(capacity=4096)
    for block in [pool.allocate(1024, 1) for _ in range(4)]:
        pool.release(block)
    assert pool.stats().bytes_cached == 4096
    big = pool.allocate(2048, 1)  # nothing of that class cached, the device is full
    assert mem.syncs == 1 and pool.stats().bytes_cached == 0 and big.size == 2048
    with pytest.raises(OutOfMemoryError, match=r"out of memory allocating 4096 bytes.*fake"):
        pool.allocate(4096, 1)


def test_limit_and_its_message():
    pool, _ = make(limit=2048)
    a = pool.allocate(2000, 1)
    with pytest.raises(OutOfMemoryError, match=r"allocating 10 bytes .* exceed the pool limit of "
                                               "2048 bytes"):
        pool.allocate(10, 1)
    pool.release(a)
    pool.limit = 1024  # lowering the limit drops the cache
    assert pool.stats().bytes_cached == 0
    with pytest.raises(ValueError):
        pool.limit = -1


def test_release_reentering_during_cache_release():
    """A finalizer may run (GC) inside the pool while it frees its cache, on the same thread."""
    pending = []
    pool_box: list[MemoryPool] = []

    def free(ptr: int) -> None:
        if pending:
            pool_box[0].release(pending.pop())

    counter = itertools.count(0x1000, 0x1000)
    pool = MemoryPool("reentrant", lambda size: next(counter), free)
    pool_box.append(pool)
    blocks = [pool.allocate(512 * (i + 1), 1) for i in range(4)]
    for block in blocks[:3]:
        pool.release(block)
    pending.append(blocks[3])
    pool.empty_cache()
    s = pool.stats()
    assert s.bytes_in_use == 0 and s.bytes_cached == 0 and s.free_count == 4


def test_forget_stream():
    pool, mem = make()
    pool.release(pool.allocate(10, 7))
    pool.release(pool.allocate(10, 8))
    pool.forget_stream(7)
    assert pool.stats().bytes_cached == 512 and len(mem.live) == 1


class FlagEvent:
    def __init__(self) -> None:
        self.done = False

    def query(self) -> bool:
        return self.done


def test_blocks_used_on_other_streams_wait_for_their_events():
    pool, mem = make()
    block = pool.allocate(100, 1)
    event = FlagEvent()
    pool.release(block, [event])
    s = pool.stats()
    assert s.pending_blocks == 1 and s.bytes_in_use == 512 and s.bytes_cached == 0
    other = pool.allocate(100, 1)
    assert other.ptr != block.ptr  # still in use by the other stream's work
    event.done = True
    pool.release(other)
    again = pool.allocate(100, 1)
    assert again.ptr in (block.ptr, other.ptr) and pool.stats().pending_blocks == 0
    pool.release(pool.allocate(600, 1), [FlagEvent()])
    pool.empty_cache()  # synchronizes: every pending block is released
    assert pool.stats().pending_blocks == 0 and mem.syncs == 1


def test_trim_runs_after_the_cache_is_released():
    """`trim` lets the device give back what its other allocators cache (cuda: the
    stream-ordered pool of compiled code): on the out-of-memory retry, after the synchronize and
    the cache release, and in every empty_cache."""
    mem = FakeMemory(1 << 20)
    order: list[str] = []
    pool = MemoryPool("test pool", mem.alloc, mem.free, lambda: order.append("sync"),
                      trim=lambda: order.append(f"trim with {len(mem.live)} live"))
    pool.empty_cache()
    assert order == ["trim with 0 live"]  # nothing cached: no synchronize, still a trim
    order.clear()
    pool.release(pool.allocate(600 << 10))  # cached
    big = pool.allocate(600 << 10, stream_key=7)  # does not fit beside the cached block
    assert order == ["sync", "trim with 0 live"]
    order.clear()
    pool.release(big)
    pool.empty_cache()
    assert order == ["sync", "trim with 0 live"]


def test_allocate_and_release_never_synchronize():
    """Stream-ordered reuse needs no waiting: cycles of allocation and release on streams, and
    releases held back by other streams' events, never call `synchronize`."""
    pool, mem = make()

    class Event:
        done = False

        def query(self) -> bool:
            return self.done

    held = Event()
    for i in range(50):
        block = pool.allocate(1000 + i % 3, stream_key=i % 2)
        pool.release(block, [held] if i == 10 else ())
    held.done = True
    assert pool.allocate(1000, stream_key=0).ptr  # collects the held block on the way
    assert mem.syncs == 0 and pool.stats().pending_blocks == 0

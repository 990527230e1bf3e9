"""Unmapping cpu device memory only after the stream work queued before the free has run.

Why: frees are stream-ordered (`Buffer.free`, a collected Buffer, `nova_rt_mem_free` return the
block to the pool at once; work queued earlier may still read it). The pool caches such a block
for its own stream, which is safe, but it hands the block back to the device (`_raw_free`) at
once when caching it would exceed its limit, or when it drops its cache. On cuda `cuMemFree`
waits for the device; on the cpu device the arena makes the pages no-access at once, and a copy
still queued on a stream (ctypes.memmove on the stream's thread, outside any fault guard) then
dies of SIGSEGV and takes the process with it. So `DeferredFrees.free` unmaps at once only when
no stream has work queued; otherwise it notes each busy stream's position (`_Queue.submitted`)
and unmaps once every such stream has completed that far (`flush`, run on every later raw
allocation, raw free and device synchronization). Memory whose streams never get there (a stream
blocked forever) stays reserved, which is the safe failure.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Protocol

    class QueueProgress(Protocol):
        """What a stream queue exposes (nova.runtime.cpu.stream._Queue): items enqueued and
        done."""

        submitted: int
        completed: int


class DeferredFrees:
    """Calls `release(address)` once the stream work queued before the free has completed."""

    def __init__(self, release: Callable[[int], None]) -> None:
        self._release = release
        self._lock = threading.Lock()
        self._waiting: list[tuple[int, tuple[tuple[QueueProgress, int], ...]]] = []

    def free(self, address: int, queues: Iterable[QueueProgress]) -> None:
        """Release `address` now if none of `queues` has unfinished work, else once each has
        completed what it had been given so far."""
        marks = tuple((q, q.submitted) for q in queues if q.completed < q.submitted)
        if marks:
            with self._lock:
                self._waiting.append((address, marks))
        else:
            self._release(address)
        self.flush()

    def flush(self) -> None:
        """Release every address whose streams have passed their marks."""
        if not self._waiting:  # a hint read without the lock
            return
        with self._lock:
            ready = {a for a, marks in self._waiting if _passed(marks)}
            if not ready:
                return
            self._waiting = [(a, marks) for a, marks in self._waiting if a not in ready]
        for address in ready:
            self._release(address)

    @property
    def waiting(self) -> int:
        """How many frees still wait for stream work."""
        with self._lock:
            return len(self._waiting)


def _passed(marks: tuple[tuple[QueueProgress, int], ...]) -> bool:
    return all(q.completed >= mark for q, mark in marks)

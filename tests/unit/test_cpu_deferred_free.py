"""nova.runtime.cpu.deferred_free: a free waits for the stream work queued before it."""

from __future__ import annotations

from nova.runtime.cpu.deferred_free import DeferredFrees


class Queue:
    def __init__(self, submitted: int, completed: int) -> None:
        self.submitted, self.completed = submitted, completed


def test_free_with_idle_streams_is_immediate() -> None:
    released: list[int] = []
    frees = DeferredFrees(released.append)
    frees.free(0x1000, [Queue(3, 3), Queue(0, 0)])
    assert released == [0x1000] and frees.waiting == 0


def test_free_waits_for_every_busy_stream_to_pass_its_mark() -> None:
    released: list[int] = []
    frees = DeferredFrees(released.append)
    a, b = Queue(5, 2), Queue(1, 0)
    frees.free(0x1000, [a, b])
    assert released == [] and frees.waiting == 1
    a.submitted = 9  # work enqueued after the free does not delay it
    a.completed = 5
    frees.flush()
    assert released == []  # b has not run its item yet
    b.completed = 1
    frees.flush()
    assert released == [0x1000] and frees.waiting == 0
    frees.flush()
    assert released == [0x1000]  # released once


def test_later_free_releases_earlier_ready_ones_in_passing() -> None:
    released: list[int] = []
    frees = DeferredFrees(released.append)
    q = Queue(1, 0)
    frees.free(0x1000, [q])
    q.completed = 1
    frees.free(0x2000, [q])
    assert sorted(released) == [0x1000, 0x2000]

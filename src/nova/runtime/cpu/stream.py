"""cpu streams and events: real in-order queues, one worker thread per stream.

Each stream owns a daemon thread that runs enqueued callables in order, so work on different
streams runs concurrently (a kernel spinning on another stream's progress terminates). An event
records a position in a stream's queue: recording enqueues a marker that completes (and stamps the
time) when the worker reaches it. An error raised by a stream's work is kept and re-raised at the
next `synchronize` of that stream; later work on the stream is skipped until then (markers and
cross-stream waits still run, so nobody waiting on this stream deadlocks).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from nova.errors import DeviceError, NovaError, RuntimeFailure
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from nova.runtime.cpu.device import CpuDevice

_ids = itertools.count(1)
_STOP = object()


class _Queue:
    """The state a worker thread shares with its Stream (never the Stream itself, so the
    Stream can be collected and its finalizer can stop the thread)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.items: queue.SimpleQueue = queue.SimpleQueue()
        self.cond = threading.Condition()
        self.submitted = 0
        self.completed = 0
        self.error: tuple[str, BaseException] | None = None
        self.closed = False
        self.thread = threading.Thread(target=self._run, name=f"nova-{label}", daemon=True)
        self.thread.start()

    def put(self, fn: Callable[[], None], what: str, always: bool = False) -> None:
        with self.cond:
            if self.closed:
                raise DeviceError(f"{self.label} was closed")
            self.submitted += 1
        self.items.put((fn, what, always))

    def _run(self) -> None:
        while True:
            item = self.items.get()
            if item is _STOP:
                return
            fn, what, always = item
            if always or self.error is None:
                try:
                    fn()
                except BaseException as exc:
                    if self.error is None:
                        self.error = (what, exc)
            with self.cond:
                self.completed += 1
                self.cond.notify_all()

    def drain(self) -> None:
        if threading.current_thread() is self.thread:
            raise DeviceError(f"{self.label}: work running on a stream cannot wait for that "
                              f"same stream")
        with self.cond:
            target = self.submitted
            self.cond.wait_for(lambda: self.completed >= target)

    def take_error(self) -> None:
        if self.error is None:
            return
        what, exc = self.error
        self.error = None
        if isinstance(exc, NovaError):
            raise exc
        raise RuntimeFailure(f"{what} on {self.label} failed: {type(exc).__name__}: {exc}") \
            from exc

    def stop(self) -> None:
        with self.cond:
            if self.closed:
                return
            self.closed = True
        self.items.put(_STOP)


def _stop_queue(q: _Queue) -> None:
    q.stop()


class CpuStream(Stream):
    """A cpu stream. `enqueue(fn, what)` runs any Python callable in stream order."""

    def __init__(self, device: CpuDevice) -> None:
        super().__init__(device)
        self._id = next(_ids)
        self._q = _Queue(f"cpu stream {self._id}")
        self._finalizer = weakref.finalize(self, _stop_queue, self._q)
        self._finalizer.atexit = False

    @property
    def handle(self) -> int:
        return self._id

    def enqueue(self, fn: Callable[[], None], what: str = "host task",
                always: bool = False) -> None:
        """Run `fn()` on this stream's thread after everything enqueued before it."""
        self._q.put(fn, what, always)

    def run_if_idle(self, fn: Callable[[], object]) -> bool:
        """Run `fn()` on the calling thread if the stream has no pending work or error (so
        stream order holds); False (and nothing run) otherwise."""
        q = self._q
        if threading.current_thread() is q.thread:
            return False
        with q.cond:
            idle = q.completed >= q.submitted and q.error is None and not q.closed
        if idle:
            fn()
        return idle

    def synchronize(self) -> None:
        self._q.drain()
        self._q.take_error()

    def query(self) -> bool:
        with self._q.cond:
            return self._q.completed >= self._q.submitted

    def wait(self, event: Event) -> None:
        if not isinstance(event, CpuEvent):
            raise DeviceError(f"{event!r} is not a cpu event")
        mark = event._mark
        if mark is not None:
            self._q.put(mark.done.wait, "wait for event", always=True)

    def close(self) -> None:
        if self._q.closed:
            return
        if self is self.device._default_stream:
            raise DeviceError("the device's default stream cannot be closed")
        self._q.drain()
        self.device.pool.forget_stream(self.pool_key)
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._q.closed

    def _pending_error(self) -> bool:
        return self._q.error is not None


class _Mark:
    """One recording of an event: set when the stream's worker reaches it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.time = 0.0

    def hit(self) -> None:
        self.time = time.perf_counter()
        self.done.set()


class CpuEvent(Event):
    """A cpu event: the latest position recorded in some stream."""

    def __init__(self, device: CpuDevice, timing: bool) -> None:
        super().__init__(device, timing)
        self._id = next(_ids)
        self._mark: _Mark | None = None

    @property
    def handle(self) -> int:
        return self._id

    def record(self, stream: Stream | None = None) -> Event:
        s = self.device._stream(stream)
        assert isinstance(s, CpuStream)
        mark = _Mark()
        s.enqueue(mark.hit, "event record", always=True)
        self._mark = mark
        return self

    def query(self) -> bool:
        return self._mark is None or self._mark.done.is_set()

    def synchronize(self) -> None:
        if self._mark is not None:
            self._mark.done.wait()

    def elapsed_ms(self, other: Event) -> float:
        if not isinstance(other, CpuEvent):
            raise DeviceError(f"{other!r} is not a cpu event")
        for ev in (self, other):
            if not ev.timing:
                raise DeviceError("elapsed_ms needs events created with timing=True")
            if ev._mark is None:
                raise DeviceError("elapsed_ms: an event was never recorded")
            if not ev._mark.done.is_set():
                raise DeviceError("elapsed_ms: an event has not completed yet")
        assert self._mark is not None and other._mark is not None
        return (other._mark.time - self._mark.time) * 1000.0

    def close(self) -> None:
        self._mark = None

"""cpu streams and events: real in-order queues, one worker thread per stream.

Each stream owns a daemon thread that runs enqueued callables in order, so work on different
streams runs concurrently (a kernel spinning on another stream's progress terminates). An event
records a position in a stream's queue: recording enqueues a marker that completes (and stamps the
time) when the worker reaches it. An error raised by a stream's work is kept and re-raised at the
next `synchronize` of that stream; later work on the stream is skipped until then (markers and
cross-stream waits still run, so nobody waiting on this stream deadlocks).

A thread that synchronizes a stream runs the stream's next items itself while the worker is idle
and those items were enqueued with `inline=True` (tiny kernels, copies, memsets, event records):
a synchronous launch then costs no thread hand-off (two wake-ups and GIL transfers, ~80% of a
small entry call). So that the synchronizing thread gets there first, the worker leaves an inline
item alone for `INLINE_GRACE_S` after it was enqueued, unless something waits for the stream's
progress otherwise (an event wait or query, a stream query: `hurry`), so only work that nobody
waits for starts up to that much later. Enqueuing an inline item does not wake the worker at
all: a process-wide grace timer (`_GraceTimer`) wakes it if the item is still queued when its
grace ends. Items still run one at a time, in order, and report
errors as on the worker. The cost: Ctrl-C reaches the synchronizing thread only between stolen
items.
"""

from __future__ import annotations

import _thread
import contextlib
import itertools
import os
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from nova.errors import DeviceError, NovaError, RuntimeFailure
from nova.runtime.cpu.helpers import Condition
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from threading import Thread

    from nova.runtime.cpu.device import CpuDevice

_ids = itertools.count(1)
_STOP = object()
INLINE_GRACE_S = 200e-6
"""How long the worker leaves a new inline item for a synchronizing thread to take."""


class _GraceTimer:
    """One process-wide thread that wakes a stream's worker when an inline item it was not told
    about (no hand-off: `put` does not wake it) is still queued after its grace. In a loop of
    synchronous tiny launches it wakes at most once per grace period instead of the worker waking
    for every launch."""

    def __init__(self) -> None:
        self.cond = Condition()
        self.queues: dict[int, tuple[_Queue, float]] = {}  # id -> (queue, when to look at it)
        self.wake_at: float | None = None  # None: waiting until told; -inf: busy (looks again)
        self.thread: Thread | None = None
        self.pid = 0

    def schedule(self, q: _Queue, deadline: float) -> None:
        with self.cond:
            entry = self.queues.get(id(q))
            if entry is None or deadline < entry[1]:
                self.queues[id(q)] = (q, deadline)
            if self.thread is None or self.pid != os.getpid():  # first use, or a forked child
                import threading  # here, not at the top: a cached kernel's first call starts none

                self.pid = os.getpid()
                self.thread = threading.Thread(target=self._run, name="nova-cpu-grace",
                                               daemon=True)
                self.thread.start()
            if self.wake_at is None or deadline < self.wake_at:
                self.cond.notify()

    def _run(self) -> None:
        while True:
            with self.cond:
                while True:
                    if not self.queues:
                        self.wake_at = None
                        self.cond.wait()
                        continue
                    now = time.monotonic()
                    wake = min(due for _, due in self.queues.values())
                    if wake <= now:
                        break
                    self.wake_at = wake
                    self.cond.wait(wake - now)
                due_now = [(key, q) for key, (q, due) in self.queues.items() if due <= now]
                for key, _ in due_now:
                    del self.queues[key]  # a put from now on schedules the queue afresh
                self.wake_at = float("-inf")
            for key, q in due_now:
                later = q.wake_if_due(time.monotonic())
                if later is not None:
                    with self.cond:
                        entry = self.queues.get(key)
                        if entry is None or later < entry[1]:
                            self.queues[key] = (q, later)


_grace_timer = _GraceTimer()


class _Queue:
    """The state a worker thread shares with its Stream (never the Stream itself, so the
    Stream can be collected and its finalizer can stop the thread).

    Items run one at a time in order: whoever runs one (the worker, or a synchronizing thread
    that steals it) pops it and sets `runner` under the lock, and clears `runner` when done.
    The worker waits on `work` (new work it must run), synchronizing threads on `cond`
    (completions); both share one lock."""

    def __init__(self, label: str) -> None:
        self.label = label
        # (fn, what, always, inline deadline: 0.0 = not inline) or _STOP
        self.items: deque[tuple[Callable[[], object], str, bool, float] | object] = deque()
        self.cond = Condition()
        self.work = Condition(self.cond._lock)
        self.submitted = 0
        self.completed = 0
        self.error: tuple[str, BaseException] | None = None
        self.closed = False
        self.runner: int | None = None  # the ident of the thread running an item, if any
        self.hurried = False  # someone waits for progress: no grace until the queue empties
        # started on first need (`_wake`): a stream whose work synchronizing threads run
        # themselves (copies, tiny synchronous launches) never pays for a thread
        self.thread: Thread | None = None
        self.worker: int | None = None  # the worker thread's ident while its loop runs

    def _wake(self) -> None:
        """Tell the worker there is work, starting it first if it has not run yet (with `cond`
        held)."""
        if self.thread is None:
            import threading  # only where a worker starts: a cached first call runs none

            self.thread = threading.Thread(target=self._run, name=f"nova-{self.label}",
                                           daemon=True)
            self.thread.start()  # it looks at the queue before it first waits
        self.work.notify()

    def put(self, fn: Callable[[], object], what: str, always: bool = False,
            inline: bool = False) -> None:
        with self.cond:
            if self.closed:
                raise DeviceError(f"{self.label} was closed")
            self.submitted += 1
            deadline = time.monotonic() + INLINE_GRACE_S if inline else 0.0
            self.items.append((fn, what, always, deadline))
            if not inline or self.hurried:
                self._wake()
                return
        _grace_timer.schedule(self, deadline)  # outside our lock: the timer takes it too

    def wake_if_due(self, now: float) -> float | None:
        """For the grace timer: wake the worker if an idle queue's head is due; the head's
        deadline if it is not due yet; None when there is nothing to watch."""
        with self.cond:
            if not self.items or self.runner is not None:
                return None  # empty, or whoever runs an item continues (or wakes the worker)
            head = self.items[0]
            due = head[3] if head is not _STOP else 0.0  # type: ignore[index]
            if due > now and not self.hurried:
                return due
            self._wake()
            return None

    def _execute(self, item: tuple[Callable[[], object], str, bool, float]) -> None:
        fn, what, always, _ = item
        if always or self.error is None:
            try:
                fn()
            except BaseException as exc:
                if self.error is None:
                    self.error = (what, exc)

    def _run(self) -> None:
        me = self.worker = _thread.get_ident()
        try:
            self._serve(me)
        finally:
            self.worker = None  # idents are reused once a thread has ended

    def _serve(self, me: int) -> None:
        while True:
            with self.cond:
                while True:
                    if not self.items or self.runner is not None:
                        if not self.items:
                            self.hurried = False
                        self.work.wait()
                        continue
                    head = self.items[0]
                    if head is _STOP:
                        return
                    wait = (head[3] - time.monotonic()  # type: ignore[index]
                            if head[3] and not self.hurried else 0.0)  # type: ignore[index]
                    if wait <= 0.0:
                        break
                    self.work.wait(wait)  # leave it to a synchronizing thread for a moment
                item = self.items.popleft()
                self.runner = me
            self._execute(item)  # type: ignore[arg-type]
            with self.cond:
                self.completed += 1
                self.runner = None
                self.cond.notify_all()

    def hurry(self) -> None:
        """Let the worker take inline items at once (a thread waits for this queue's progress
        by other means than `drain`)."""
        with self.cond:
            if self.items and not self.hurried:
                self.hurried = True
                self._wake()

    def in_item(self) -> bool:
        """Whether the calling thread is this queue's worker or is running one of its items."""
        me = _thread.get_ident()
        return me == self.worker or me == self.runner

    def on_worker(self) -> bool:
        """Whether the calling thread is this queue's worker."""
        return _thread.get_ident() == self.worker

    def drain(self) -> None:
        if self.in_item():
            raise DeviceError(f"{self.label}: work running on a stream cannot wait for that "
                              f"same stream")
        me = _thread.get_ident()
        with self.cond:
            target = self.submitted
            while self.completed < target:
                head = self.items[0] if self.items else None
                if head is not None and self.runner is None and (
                        head is _STOP or not head[3]):  # type: ignore[index]
                    self._wake()  # the worker's next item: make sure it knows
                if (self.runner is not None or head is None or head is _STOP
                        or not head[3]):  # type: ignore[index]
                    self.cond.wait()
                    continue
                self.items.popleft()
                self.runner = me
                self.cond.release()
                try:
                    self._execute(head)  # type: ignore[arg-type]
                except KeyboardInterrupt:  # signals reach this thread, never the worker
                    if self.error is None:
                        self.error = (head[1], RuntimeFailure("interrupted"))  # type: ignore[index]
                    raise
                finally:
                    self.cond.acquire()
                    self.completed += 1
                    self.runner = None
                    self.cond.notify_all()
                    if self.items:
                        self._wake()  # the rest may be the worker's
                    else:
                        self.hurried = False

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
            if self.thread is None and not self.items:
                return  # no worker to stop, nothing left for one
            self.items.append(_STOP)
            # no new threads at interpreter shutdown (RuntimeError): nobody waits for them then
            with contextlib.suppress(RuntimeError):
                self._wake()


StreamQueue = _Queue
"""A stream's queue, for the device's bookkeeping (it outlives a collected CpuStream until its
worker has run the work queued before)."""


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

    def enqueue(self, fn: Callable[[], object], what: str = "host task",
                always: bool = False, inline: bool = False) -> None:
        """Run `fn()` on this stream's thread after everything enqueued before it. `inline`:
        `fn` is short native work that a thread synchronizing the stream may run itself."""
        self._q.put(fn, what, always, inline)

    def run_if_idle(self, fn: Callable[[], object]) -> bool:
        """Run `fn()` on the calling thread if the stream has no pending work or error (so
        stream order holds); False (and nothing run) otherwise. While it runs the stream counts
        it as its running item, so work another thread enqueues meanwhile waits for it and a
        synchronize from elsewhere waits too. Its exception propagates to the caller (the
        stream's error state is left alone)."""
        q = self._q
        if q.in_item():
            return False
        with q.cond:
            if q.completed < q.submitted or q.error is not None or q.closed \
                    or q.runner is not None:
                return False
            q.submitted += 1
            q.runner = _thread.get_ident()
        try:
            fn()
        finally:
            with q.cond:
                q.completed += 1
                q.runner = None
                q.cond.notify_all()
                if q.items:
                    q._wake()  # enqueued meanwhile: the worker's now
        return True

    def synchronize(self) -> None:
        self._q.drain()
        self._q.take_error()

    def query(self) -> bool:
        with self._q.cond:
            done = self._q.completed >= self._q.submitted
        if not done:
            self._q.hurry()
        return done

    def wait(self, event: Event) -> None:
        from nova.runtime.cpu.events import CpuEvent

        if not isinstance(event, CpuEvent):
            raise DeviceError(f"{event!r} is not a cpu event")
        mark = event._mark
        if mark is not None:
            self._q.put(mark.wait, "wait for event", always=True)

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

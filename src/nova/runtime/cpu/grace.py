"""The cpu streams' grace timer: one process-wide thread that wakes a stream's worker when an
inline item nobody took is still queued after its grace (see nova.runtime.cpu.stream).

Its own module, made by the first inline item a stream queues: a cached kernel's first call
(which runs its launch on the calling thread) never loads it, nor `threading`.
"""

from __future__ import annotations

import os
import threading
import time

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from nova.runtime.cpu.stream import _Queue


class GraceTimer:
    """One process-wide thread that wakes a stream's worker when an inline item it was not told
    about (no hand-off: `put` does not wake it) is still queued after its grace. In a loop of
    synchronous tiny launches it wakes at most once per grace period instead of the worker waking
    for every launch."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.queues: dict[int, tuple[_Queue, float]] = {}  # id -> (queue, when to look at it)
        self.wake_at: float | None = None  # None: waiting until told; -inf: busy (looks again)
        self.thread: threading.Thread | None = None
        self.pid = 0

    def schedule(self, q: _Queue, deadline: float) -> None:
        with self.cond:
            entry = self.queues.get(id(q))
            if entry is None or deadline < entry[1]:
                self.queues[id(q)] = (q, deadline)
            if self.thread is None or self.pid != os.getpid():  # first use, or a forked child
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


timer = GraceTimer()
"""The one timer of this process (a forked child starts its own thread: `schedule`)."""

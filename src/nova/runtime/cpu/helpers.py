"""The cpu device's block helper threads: run submitted calls on up to `count` daemon threads.

A minimal stand-in for `concurrent.futures.ThreadPoolExecutor` (only `submit`, without a Future):
importing concurrent.futures pulls in `logging`, about 3 ms of every cold start that launches a
kernel. Threads start on demand, one per submitted call until `count` run, and wait for more work
afterwards; they are daemons like the streams' own threads (a launch in progress never keeps the
interpreter alive: `BlockRun` hands out its chunks to whoever asks, so a helper that never starts
only leaves more chunks to the stream's thread).

They are started with `_thread.start_new_thread`, not `threading.Thread`: `Thread.start` waits
until the new thread runs, which made the first launch of a process wait for the scheduler
(0.3 ms on an idle 2-core machine, milliseconds on a loaded one), while `BlockRun` needs no
helper to have started. So they are not listed by `threading.enumerate()`; `close` joins them
through a lock each holds while it runs.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import weakref
from collections import deque

from nova.runtime.sync import Condition

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from collections.abc import Callable


class HelperThreads:
    """Runs `submit`ted calls on at most `count` threads (`thread_name_prefix` names the pool in
    its repr). Exceptions of the calls are swallowed, as an executor's unobserved Futures would
    hold them; `BlockRun` reports its own failures."""

    def __init__(self, count: int, thread_name_prefix: str) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self.count = count
        self.prefix = thread_name_prefix
        self._work: deque[Callable[[], object]] = deque()
        self._cond = Condition(_thread.allocate_lock())
        self._threads: list[_thread.LockType] = []
        """One lock per started thread, held while it runs (`close` joins by acquiring it)."""
        self._running: dict[int, _thread.LockType] = {}  # thread id -> its lock, while it runs
        self._idle = 0
        self._closing = False
        _POOLS.add(self)

    def close(self, timeout: float = 5.0) -> None:
        """Let the threads finish the calls queued so far and end; wait for them (at most
        `timeout` seconds each). Run for every pool at interpreter exit, before finalization
        tears down what a call may still touch (a daemon thread still running native kernel
        code then could crash the exiting process: seen once, SIGSEGV after a program's
        output, under load)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            running = list(self._threads)
            mine = self._running.get(_thread.get_ident())  # close() from a helper's own call
        for lock in running:
            if lock is not mine and lock.acquire(timeout=timeout):
                lock.release()

    def __repr__(self) -> str:
        return f"<HelperThreads {self.prefix!r}: {len(self._threads)} of {self.count} started>"

    def submit(self, fn: Callable[[], object]) -> None:
        """Run `fn()` on a helper thread as soon as one is free."""
        with self._cond:
            self._work.append(fn)
            if self._idle > 0:  # wake a waiting thread, counted busy from now on (so the next
                self._idle -= 1  # call starts another thread rather than counting on this one)
                self._cond.notify()
                return
            if len(self._threads) >= self.count:
                return
            running = _thread.allocate_lock()
            running.acquire()  # released by the thread as it ends
            self._threads.append(running)
        try:
            _thread.start_new_thread(self._run, (running,))
        except BaseException:  # e.g. RuntimeError at interpreter shutdown: the caller's to handle
            with self._cond:
                self._threads.remove(running)
            raise

    def _run(self, running: _thread.LockType) -> None:
        with self._cond:
            self._running[_thread.get_ident()] = running
        try:
            self._serve()
        finally:
            with self._cond:
                self._running.pop(_thread.get_ident(), None)
            running.release()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not self._work:
                    if self._closing:
                        return
                    self._idle += 1
                    self._cond.wait()  # submit() (or close()) took it off the idle count
                    if self._closing and not self._work:
                        return
                fn = self._work.popleft()
            with contextlib.suppress(BaseException):  # a Future would have held it
                fn()


_POOLS: weakref.WeakSet[HelperThreads] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()

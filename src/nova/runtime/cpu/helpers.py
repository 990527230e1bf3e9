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

`Condition` is `threading.Condition` without importing `threading`. The runtime's locks are
`_thread`'s (`threading.Lock` and `threading.RLock` are those very types, `threading.local` is
`_thread._local`), so the one thing it took from `threading` on a cached kernel's first call was
its Condition, for these helpers, the cpu streams' queues and `BlockRun`; `threading` itself (70 KB
of bytecode, 11 classes, 2.4 million instructions) came with it. This one is
`threading.Condition`'s algorithm over `_thread` locks, with its semantics: a Lock or RLock
(default: a new RLock, released fully while waiting) shared with other Conditions through `_lock`,
`with`, `acquire`/`release`, `wait(timeout)` returning whether it was notified,
`wait_for(predicate, timeout)`, `notify(n)` and `notify_all` (RuntimeError where the caller does
not hold the lock). It lives here, beside its first user, rather than in a module of its own: each
module a cold start imports costs about 0.25 million instructions in importlib alone. Threads
themselves (`threading.Thread`, whose `start` and `current_thread` bookkeeping need the module) are
still `threading`'s, imported where a stream's worker or the grace timer first starts.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import weakref
from collections import deque
from time import monotonic

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Condition:
    """A condition variable over a `_thread` Lock or RLock: `threading.Condition` without
    `threading` (see the module docstring)."""

    def __init__(self, lock: Any = None) -> None:
        if lock is None:
            lock = _thread.RLock()
        self._lock = lock
        self.acquire = lock.acquire
        self.release = lock.release
        # an RLock is released fully while waiting (and its depth restored), as in threading
        self._release_save = getattr(lock, "_release_save", self._plain_release)
        self._acquire_restore = getattr(lock, "_acquire_restore", self._plain_acquire)
        self._is_owned = getattr(lock, "_is_owned", self._plain_is_owned)
        self._waiters: deque[_thread.LockType] = deque()

    def __enter__(self) -> bool:
        return bool(self._lock.__enter__())

    def __exit__(self, *args: object) -> None:
        self._lock.__exit__(*args)

    def __repr__(self) -> str:
        return f"<Condition({self._lock}, {len(self._waiters)})>"

    def _plain_release(self) -> None:
        self._lock.release()

    def _plain_acquire(self, _state: object) -> None:
        self._lock.acquire()

    def _plain_is_owned(self) -> bool:
        if self._lock.acquire(False):
            self._lock.release()
            return False
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Release the lock until notified or `timeout` seconds passed, then take it again;
        whether it was notified."""
        if not self._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        waiter = _thread.allocate_lock()
        waiter.acquire()
        self._waiters.append(waiter)
        saved = self._release_save()
        got = False
        try:  # the lock is taken back whatever happens (e.g. KeyboardInterrupt)
            if timeout is None:
                waiter.acquire()
                got = True
            elif timeout > 0:
                got = waiter.acquire(True, timeout)
            else:
                got = waiter.acquire(False)
            return got
        finally:
            self._acquire_restore(saved)
            if not got:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        """Wait until `predicate()` is true or `timeout` seconds passed; its last result."""
        end = None
        left = timeout
        result = predicate()
        while not result:
            if left is not None:
                if end is None:
                    end = monotonic() + left
                else:
                    left = end - monotonic()
                    if left <= 0:
                        break
            self.wait(left)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        """Wake up to `n` of the threads waiting (none waiting: nothing happens)."""
        if not self._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        waiters = self._waiters
        while waiters and n > 0:
            waiter = waiters[0]
            try:
                waiter.release()
            except RuntimeError:  # released by a notify interrupted before it removed it
                pass
            else:
                n -= 1
            with contextlib.suppress(ValueError):
                waiters.remove(waiter)

    def notify_all(self) -> None:
        """Wake every thread waiting."""
        self.notify(len(self._waiters))


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

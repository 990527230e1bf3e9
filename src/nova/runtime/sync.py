"""`Condition`: `threading.Condition` without importing `threading`.

The runtime's locks are `_thread`'s (`threading.Lock` and `threading.RLock` are those very types,
`threading.local` is `_thread._local`), so the one thing the runtime took from `threading` on a
cached kernel's first call was its Condition, for the cpu device's stream queues and block
helpers; `threading` itself (70 KB of bytecode, 11 classes, about 2.4 million instructions, a
sixth of that call's import work) then came with it. This Condition is `threading.Condition`'s
algorithm over `_thread` locks, with the same semantics for what the runtime uses: a Lock or RLock
(default: a new RLock) shared with other Conditions through `_lock`, `with`, `acquire`/`release`,
`wait(timeout)` returning whether it was notified, `wait_for(predicate, timeout)`, `notify(n)`
and `notify_all` (both raise RuntimeError where the caller does not hold the lock, as `wait`
does). Threads themselves
(`threading.Thread`, whose `start` and `current_thread` bookkeeping need the module) are still
started through `threading`, imported where a stream's worker first starts.
"""

from __future__ import annotations

import _thread
import contextlib
from collections import deque
from time import monotonic

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Condition:
    """A condition variable over a `_thread` Lock or RLock (see the module docstring)."""

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

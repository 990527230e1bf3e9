"""nova.runtime.cpu.helpers.Condition behaves as threading.Condition for what the runtime uses:
waits that are notified or time out, notify(n)/notify_all, wait_for, RLock depth kept across a
wait, a lock shared by two conditions, and RuntimeError without the lock. Each test runs against
both classes, so a difference between them fails here."""

from __future__ import annotations

import _thread
import threading
import time

import pytest

from nova.runtime.cpu.helpers import Condition

KINDS = [Condition, threading.Condition]


def _start(fn: object) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


@pytest.mark.parametrize("make", KINDS)
def test_wait_returns_true_when_notified_and_false_on_timeout(make: type) -> None:
    cond = make()
    with cond:
        start = time.monotonic()
        assert cond.wait(0.05) is False
        assert time.monotonic() - start >= 0.04
        assert cond.wait(0) is False
    got: list[bool] = []

    def waiter() -> None:
        with cond:
            got.append(cond.wait(30))

    thread = _start(waiter)
    while True:  # notify only once the waiter waits
        with cond:
            if cond._waiters:
                cond.notify()
                break
        time.sleep(0.001)
    thread.join(30)
    assert got == [True]


@pytest.mark.parametrize("make", KINDS)
def test_notify_wakes_n_waiters_and_notify_all_the_rest(make: type) -> None:
    cond = make(_thread.allocate_lock())
    woken: list[int] = []
    threads = []
    for i in range(4):
        def waiter(i: int = i) -> None:
            with cond:
                cond.wait()
                woken.append(i)
        threads.append(_start(waiter))
    while True:
        with cond:
            if len(cond._waiters) == 4:
                cond.notify(2)
                break
        time.sleep(0.001)
    deadline = time.monotonic() + 30
    while len(woken) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.02)
    assert len(woken) == 2
    with cond:
        assert len(cond._waiters) == 2
        cond.notify_all()
    for thread in threads:
        thread.join(30)
    assert sorted(woken) == [0, 1, 2, 3]


@pytest.mark.parametrize("make", KINDS)
def test_an_rlock_is_released_fully_while_waiting_and_its_depth_restored(make: type) -> None:
    lock = _thread.RLock()
    cond = make(lock)
    other = make(lock)  # a second condition over the same lock (the stream queue's `work`)
    taken: list[bool] = []

    def taker() -> None:
        with other:
            taken.append(True)
            cond.notify()  # the lock is held (through `other`)

    with cond, cond:  # depth 2
        thread = _start(taker)
        assert cond.wait_for(lambda: taken, 30) == [True]
        assert lock._is_owned()  # type: ignore[attr-defined]
        lock.release()
        assert lock._is_owned()  # type: ignore[attr-defined]  # still held once
        lock.acquire()  # back to depth 2 for the two exits
    thread.join(30)
    assert lock.acquire(False)
    lock.release()


@pytest.mark.parametrize("make", KINDS)
def test_wait_for_times_out_with_the_predicate_value(make: type) -> None:
    cond = make()
    calls: list[int] = []
    with cond:
        assert cond.wait_for(lambda: calls.append(1) or 0, 0.03) == 0
    assert len(calls) >= 2


@pytest.mark.parametrize("make", KINDS)
def test_without_the_lock_wait_and_notify_raise(make: type) -> None:
    cond = make(_thread.allocate_lock())
    with pytest.raises(RuntimeError, match="un-acquired lock"):
        cond.wait(0)
    with pytest.raises(RuntimeError, match="un-acquired lock"):
        cond.notify()
    with pytest.raises(RuntimeError, match="un-acquired lock"):
        cond.notify_all()

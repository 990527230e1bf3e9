"""cpu streams: a synchronizing thread runs `inline` items itself (no worker hand-off), in
order, with the same error behaviour as the worker."""

from __future__ import annotations

import threading
import time

import pytest

import nova
from nova.errors import DeviceError, RuntimeFailure
from nova.runtime.cpu.device import INLINE_KERNEL_THREADS
from nova.runtime.cpu.stream import CpuStream


@pytest.fixture
def stream():
    s = nova.get_device("cpu").create_stream()
    assert isinstance(s, CpuStream)
    yield s
    s.close()


def _recorder(log: list[tuple[str, str]], name: str):
    return lambda: log.append((name, threading.current_thread().name))


def test_inline_item_runs_on_the_synchronizing_thread(stream: CpuStream) -> None:
    log: list[tuple[str, str]] = []
    gate = threading.Event()
    stream.enqueue(gate.wait, "gate")  # keeps the worker busy, so the next item stays queued
    stream.enqueue(_recorder(log, "inline"), "inline", inline=True)
    stream.enqueue(_recorder(log, "plain"), "plain")
    threading.Timer(0.05, gate.set).start()
    stream.synchronize()
    me = threading.current_thread().name
    assert [name for name, _ in log] == ["inline", "plain"]  # stream order kept
    ran_on = dict(log)
    assert ran_on["plain"].startswith("nova-cpu stream")  # never stolen: not inline
    assert ran_on["inline"] in (me, ran_on["plain"])  # stolen, unless the worker got there first


def test_synchronous_tiny_work_needs_no_worker(stream: CpuStream) -> None:
    log: list[tuple[str, str]] = []
    for i in range(50):
        stream.enqueue(_recorder(log, str(i)), "x", inline=True)
    stream.synchronize()
    assert [name for name, _ in log] == [str(i) for i in range(50)]


def test_errors_of_stolen_items_surface_at_synchronize_and_skip_later_work(
        stream: CpuStream) -> None:
    log: list[tuple[str, str]] = []

    def boom() -> None:
        raise ValueError("bad work")

    stream.enqueue(boom, "stolen work", inline=True)
    stream.enqueue(_recorder(log, "skipped"), "later", inline=True)
    with pytest.raises(RuntimeFailure, match=r"stolen work .* ValueError: bad work"):
        stream.synchronize()
    assert log == []
    stream.enqueue(_recorder(log, "after"), "after", inline=True)
    stream.synchronize()
    assert [name for name, _ in log] == ["after"]


def test_stolen_item_cannot_wait_for_its_own_stream(stream: CpuStream) -> None:
    stream.enqueue(stream.synchronize, "self wait", inline=True)
    with pytest.raises(DeviceError, match="cannot wait for that same stream"):
        stream.synchronize()


def test_items_never_overlap(stream: CpuStream) -> None:
    active = []
    overlaps = []

    def work() -> None:
        active.append(1)
        if len(active) > 1:
            overlaps.append(1)
        time.sleep(0.001)
        active.pop()

    threads = []
    for i in range(40):
        stream.enqueue(work, "w", inline=i % 2 == 0)
        if i % 10 == 0:
            t = threading.Thread(target=stream.synchronize)
            t.start()
            threads.append(t)
    stream.synchronize()
    for t in threads:
        t.join()
    assert not overlaps


PROGRAM = """
func.func @one(%x: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %x[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
"""


@pytest.mark.usefixtures("long_grace")
def test_synchronous_tiny_launch_runs_on_the_calling_thread(monkeypatch) -> None:
    """The launch is an inline item the synchronizing caller takes. A long grace keeps the
    worker off it: with the default 200 us a loaded machine (CI's two cores shared with other
    processes) let the worker win 6 of 20 now and then (`14 >= 15` failed)."""
    import numpy as np

    from nova.runtime.cpu import module as cpu_module

    assert INLINE_KERNEL_THREADS >= 32
    threads: list[str] = []
    original = cpu_module.BlockRun.run

    def run(self) -> None:
        threads.append(threading.current_thread().name)
        original(self)

    monkeypatch.setattr(cpu_module.BlockRun, "run", run)
    mod = nova.compile(PROGRAM, device="cpu", cubin=False, ptx=False)
    x = np.zeros(32, np.float32)
    for _ in range(20):
        mod.one(x)
    mod.close()
    assert (x == 20).all()
    me = threading.current_thread().name
    assert threads == [me] * 20


@pytest.fixture
def long_grace(monkeypatch):
    """A grace so long that a test finishing quickly proves nobody waited it out."""
    from nova.runtime.cpu import stream as cpu_stream

    monkeypatch.setattr(cpu_stream, "INLINE_GRACE_S", 60.0)


def _inline_work_then_event(s: CpuStream, log: list[tuple[str, str]]):
    dev = nova.get_device("cpu")
    s.enqueue(_recorder(log, "work"), "work", inline=True)
    return dev.create_event().record(s)


@pytest.mark.usefixtures("long_grace")
def test_cross_stream_wait_hurries_the_other_worker(stream: CpuStream) -> None:
    log: list[tuple[str, str]] = []
    event = _inline_work_then_event(stream, log)
    other = nova.get_device("cpu").create_stream()
    try:
        other.wait(event)
        start = time.monotonic()
        other.synchronize()  # other's wait must hurry stream's worker (not idle 60 s)
        assert time.monotonic() - start < 30
        assert [name for name, _ in log] == ["work"]
    finally:
        other.close()


@pytest.mark.usefixtures("long_grace")
def test_event_synchronize_and_polling_hurry(stream: CpuStream) -> None:
    log: list[tuple[str, str]] = []
    start = time.monotonic()
    _inline_work_then_event(stream, log).synchronize()
    event = _inline_work_then_event(stream, log)
    while not event.query():
        time.sleep(0.001)
    while not stream.query():
        time.sleep(0.001)
    assert time.monotonic() - start < 30
    assert [name for name, _ in log] == ["work", "work"]


def test_inline_work_nobody_waits_for_still_runs(stream: CpuStream) -> None:
    # `put` does not wake the worker for inline items; the grace timer must
    for _ in range(20):
        ran = threading.Event()
        stream.enqueue(ran.set, "unwatched", inline=True)
        assert ran.wait(10), "an inline item nobody synchronized never ran"
    flags = [threading.Event() for _ in range(5)]
    for flag in flags:  # a burst, then a non-inline item behind it
        stream.enqueue(flag.set, "burst", inline=True)
    done = threading.Event()
    stream.enqueue(done.set, "plain")
    assert done.wait(10) and all(f.is_set() for f in flags)


def test_many_streams_with_unwatched_inline_work() -> None:
    dev = nova.get_device("cpu")
    streams = [dev.create_stream() for _ in range(8)]
    try:
        events = []
        for s in streams:
            ran = threading.Event()
            s.enqueue(ran.set, "unwatched", inline=True)
            events.append(ran)
        assert all(e.wait(10) for e in events)
    finally:
        for s in streams:
            s.close()


def test_the_worker_thread_starts_on_first_need() -> None:
    """A stream whose work synchronizing threads run themselves never starts its worker; work
    only the worker may run starts it."""
    s = nova.get_device("cpu").create_stream()
    assert isinstance(s, CpuStream)
    try:
        log: list[tuple[str, str]] = []
        s.enqueue(_recorder(log, "inline"), "inline", inline=True)
        s.synchronize()
        assert s._q.thread is None and log == [("inline", threading.current_thread().name)]
        s.enqueue(_recorder(log, "plain"), "plain")
        s.synchronize()
        assert s._q.thread is not None and log[-1][1].startswith("nova-cpu stream")
    finally:
        s.close()


def test_items_left_when_a_stream_without_worker_closes_still_run() -> None:
    s = nova.get_device("cpu").create_stream()
    assert isinstance(s, CpuStream)
    ran = threading.Event()
    s.enqueue(ran.set, "inline, never synchronized", inline=True)
    s._q.stop()  # what closing the stream does
    assert ran.wait(30)
    q = nova.get_device("cpu").create_stream()
    assert isinstance(q, CpuStream)
    q._q.stop()  # nothing queued, no worker: nothing to start
    assert q._q.thread is None and q._q.closed


def test_small_synchronous_launches_run_on_the_caller(stream: CpuStream) -> None:
    """A Python kernel launch with NumPy arrays (waited for) runs on the calling thread when
    the stream is idle: no queue entry, so no worker and no grace timer is needed."""
    import numpy as np

    @nova.kernel(device="cpu")
    def who(out):
        i = nova.global_id(0)
        if i < out.shape[0]:
            out[i] = i

    out = np.zeros(64, np.int32)
    runs: list[str] = []
    from nova.runtime.cpu import module

    real = module.BlockRun.run

    def spy(self: module.BlockRun) -> None:
        runs.append(threading.current_thread().name)
        real(self)

    module.BlockRun.run = spy  # type: ignore[method-assign]
    try:
        who[1, 64, stream](out)
        np.testing.assert_array_equal(out, np.arange(64))
        assert runs == [threading.current_thread().name]
        big = np.zeros(INLINE_KERNEL_THREADS * 2, np.int32)
        who[big.size // 64, 64, stream](big)  # too large to run inline: the worker runs it
        np.testing.assert_array_equal(big, np.arange(big.size))
        assert runs[-1].startswith("nova-cpu stream")
    finally:
        module.BlockRun.run = real  # type: ignore[method-assign]


def test_work_enqueued_while_run_if_idle_runs_waits_for_it(stream: CpuStream) -> None:
    """`run_if_idle` counts as the stream's running item: work another thread enqueues in the
    meantime runs after it, and a synchronize from elsewhere waits for it."""
    order: list[str] = []
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        started.set()
        assert release.wait(30)
        order.append("first")

    runner = threading.Thread(target=lambda: stream.run_if_idle(first))
    runner.start()
    assert started.wait(30)
    assert not stream.run_if_idle(lambda: order.append("never"))  # busy: not run
    stream.enqueue(lambda: order.append("second"), "second")
    synced = threading.Event()
    waiter = threading.Thread(target=lambda: (stream.synchronize(), synced.set()))
    waiter.start()
    time.sleep(0.05)
    assert order == [] and not synced.is_set()
    release.set()
    runner.join(30)
    waiter.join(30)
    assert synced.is_set() and order == ["first", "second"]

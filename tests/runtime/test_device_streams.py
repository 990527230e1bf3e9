"""Streams and events on every device: ordering, queries, cross-stream waits, timing, concurrency,
and (cpu) errors raised by stream work."""

from __future__ import annotations

import ctypes
import threading
import time

import device_test_kernels as tk
import numpy as np
import pytest

from nova.errors import DeviceError, RuntimeFailure
from nova.runtime.stream import Event, Stream


def test_default_stream_is_a_real_non_null_stream(device):
    s = device.default_stream
    assert isinstance(s, Stream) and s.handle != 0
    assert device.default_stream is s
    with pytest.raises(DeviceError, match="default stream"):
        s.close()


def test_stream_orders_its_work(device):
    s = device.create_stream()
    n = 1 << 20
    buf = device.allocate(n, stream=s)
    for value in range(1, 40):
        device.memset(buf, value, stream=s)
    out = np.empty(n, np.uint8)
    device.copy_dtoh(out, buf, stream=s)
    s.synchronize()
    assert s.query()
    assert (out == 39).all()


def test_stream_context_manager_synchronizes_and_closes(device):
    out = np.zeros(16, np.uint8)
    with device.create_stream() as s:
        buf = device.allocate(16, stream=s)
        device.memset(buf, 5, stream=s)
        device.copy_dtoh(out, buf, stream=s)
    assert (out == 5).all()
    with pytest.raises(DeviceError):
        device.memset(buf, 1, stream=s)


def test_events_record_query_synchronize(device):
    s = device.create_stream()
    ev = device.create_event()
    assert isinstance(ev, Event) and ev.query()  # never recorded: complete
    buf = device.allocate(1 << 20, stream=s)
    device.memset(buf, 3, stream=s)
    assert s.record(ev) is ev
    ev.synchronize()
    assert ev.query()
    fresh = s.record()
    fresh.synchronize()
    assert fresh.query()


def test_event_elapsed_time(device):
    s = device.create_stream()
    start, end = device.create_event(timing=True), device.create_event(timing=True)
    start.record(s)
    buf = device.allocate(16 << 20, stream=s)
    for _ in range(8):
        device.memset(buf, 1, stream=s)
    end.record(s)
    end.synchronize()
    assert start.elapsed_ms(end) >= 0.0
    plain = device.create_event()
    plain.record(s)
    plain.synchronize()
    with pytest.raises(DeviceError, match="timing=True"):
        start.elapsed_ms(plain)


def test_cross_stream_wait_on_event(device):
    a, b = device.create_stream(), device.create_stream()
    n = 4 << 20
    src = device.allocate(n, stream=a)
    for v in range(1, 9):
        device.memset(src, v, stream=a)
    done = a.record()
    b.wait(done)
    dst = device.allocate(n, stream=b)
    device.copy_dtod(dst, src, stream=b)
    out = np.empty(n, np.uint8)
    device.copy_dtoh(out, dst, stream=b)
    b.synchronize()
    assert (out == 8).all()


def test_spin_wait_on_another_streams_work_terminates(device):
    """A kernel on stream A spins until a kernel on stream B sets a flag: needs real concurrency."""
    spin, setter = tk.function(device, "spin_wait"), tk.function(device, "set_flag")
    a, b = device.create_stream(), device.create_stream()
    flag = device.allocate(4)
    out = device.allocate(4)
    device.memset(flag, 0)
    device.memset(out, 0)
    device.launch(spin, 1, 1, [flag, out], stream=a)
    device.launch(setter, 1, 1, [flag], stream=b)
    b.synchronize()
    a.synchronize()
    assert out.view(np.int32).numpy()[0] == 1  # saw the flag (2 would mean it timed out)


def test_device_synchronize_waits_for_all_streams(device):
    streams = [device.create_stream() for _ in range(3)]
    bufs = [device.allocate(1 << 20, stream=s) for s in streams]
    for s, buf in zip(streams, bufs, strict=True):
        device.memset(buf, 9, stream=s)
    device.synchronize()
    assert all(s.query() for s in streams)


def test_cpu_streams_run_concurrently(cpu_device):
    a, b = cpu_device.create_stream(), cpu_device.create_stream()
    gate = threading.Event()
    a.enqueue(lambda: gate.wait(5), "wait for gate")
    b.enqueue(gate.set, "open gate")
    b.synchronize()
    a.synchronize()
    assert gate.is_set()


def test_cpu_stream_error_is_raised_at_next_synchronize_and_named(cpu_device):
    s = cpu_device.create_stream()
    ran = []

    def boom() -> None:
        raise ValueError("bad host task")

    s.enqueue(boom, "my task")
    s.enqueue(lambda: ran.append(1), "skipped after the error")
    marker = s.record()
    with pytest.raises(RuntimeFailure, match=r"my task on cpu stream \d+ failed: ValueError"):
        s.synchronize()
    assert marker.query() and not ran
    s.synchronize()  # reported once
    s.enqueue(lambda: ran.append(2))
    s.synchronize()
    assert ran == [2]


def test_cpu_stream_cannot_wait_for_itself(cpu_device):
    s = cpu_device.create_stream()
    s.enqueue(s.synchronize, "self sync")
    with pytest.raises(DeviceError, match="same stream"):
        s.synchronize()


def test_cpu_event_timing_measures_host_work(cpu_device):
    s = cpu_device.create_stream()
    t0, t1 = cpu_device.create_event(True), cpu_device.create_event(True)
    t0.record(s)
    s.enqueue(lambda: time.sleep(0.02))
    t1.record(s)
    t1.synchronize()
    assert 15.0 <= t0.elapsed_ms(t1) < 1000.0


def test_closed_streams_release_their_thread(cpu_device):
    before = threading.active_count()
    for _ in range(5):
        with cpu_device.create_stream() as s:
            s.enqueue(lambda: None)
    deadline = time.monotonic() + 2
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


def test_cpu_synchronous_copy_waits_for_pending_default_stream_work(cpu_device):
    buf = cpu_device.allocate(64)
    cpu_device.memset(buf, 0)
    s = cpu_device.default_stream

    def slow_fill() -> None:
        time.sleep(0.05)
        ctypes.memset(buf.ptr, 1, 64)

    s.enqueue(slow_fill, "slow fill")
    assert (buf.numpy() == 1).all()  # not run inline: the stream was busy
    assert s.query()

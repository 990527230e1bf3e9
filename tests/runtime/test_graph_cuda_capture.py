"""The cuda capture bindings (`nova.runtime.cuda.graph.CudaCaptureAbi`) against a mock driver,
without a GPU: the native ABI is compiled with renamed driver symbols bound to ctypes mocks (as in
test_cuda_abi.py, with distinct handles per created stream/event), and the capture callbacks are
called the way compiled host code calls them. Checks the protocol that makes a capture valid:
null stream -> capture stream, forks from and joins into the capture stream through events, host
synchronizations turned into stream waits (never a cuStreamSynchronize/cuEventSynchronize while
capturing), deferred destruction, and error statuses passed through."""

from __future__ import annotations

import ctypes
import itertools
from types import SimpleNamespace
from typing import Any

import pytest
from test_cuda_abi import CONTEXT, DEFAULT_STREAM, MockDriver

from nova.abi import ABI_BY_NAME
from nova.errors import CudaError
from nova.runtime.cuda import abi as cuda_abi
from nova.runtime.cuda.graph import CudaCaptureAbi
from nova.runtime.native_support import clear_error, take_error

PREFIX = "nova_mockcap_"
ORIGIN = 0xCA97


class HandleDriver(MockDriver):
    """The mock driver, with a new handle for every created stream and event."""

    def __init__(self) -> None:
        super().__init__()
        self._handles = itertools.count(0x1000, 0x10)

    def _effect(self, name: str, args: tuple[Any, ...]) -> None:
        if name in ("cuStreamCreate", "cuEventCreate"):
            ctypes.c_void_p.from_address(args[0]).value = next(self._handles)
        else:
            super()._effect(name, args)

    def symbols(self) -> dict[str, int]:
        return {PREFIX + n: ctypes.cast(cb, ctypes.c_void_p).value or 0
                for n, cb in self._callbacks.items()}


@pytest.fixture(scope="module")
def mock() -> HandleDriver:
    return HandleDriver()


@pytest.fixture(scope="module")
def native(mock: HandleDriver) -> cuda_abi.NativeCudaAbi:
    module = cuda_abi.compile_native(None, PREFIX, mock.symbols())
    module.set_default_stream(DEFAULT_STREAM)
    module.set_context(CONTEXT)
    return module


class PyDriver:
    """Stands in for CudaDriver where the capture bindings call the driver from Python."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.raw = SimpleNamespace(CUstream=lambda h: ("CUstream", h))

    def call(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def quiet(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))


@pytest.fixture
def capture(native: cuda_abi.NativeCudaAbi, mock: HandleDriver):
    mock.calls.clear()
    mock.results.clear()
    clear_error()
    device = SimpleNamespace(driver=PyDriver())
    base = cuda_abi.CudaAbi(device, None, native=native)  # type: ignore[arg-type]
    cap = CudaCaptureAbi(device, None, ORIGIN, base=base)
    symbols = cap.symbols()

    def fn(name: str) -> Any:
        return ABI_BY_NAME[name].ctypes_prototype()(symbols[name])

    return cap, fn, mock


def _create_stream(fn: Any) -> int:
    out = ctypes.c_void_p()
    assert fn("nova_rt_stream_create")(ctypes.addressof(out)) == 0
    return out.value or 0


def _calls(mock: HandleDriver, *names: str) -> list[tuple[str, tuple[Any, ...]]]:
    return [c for c in mock.calls if c[0] in names]


def test_null_stream_work_goes_to_the_capture_stream(capture) -> None:
    cap, fn, mock = capture
    params = (ctypes.c_void_p * 1)(0x1234)
    assert fn("nova_rt_launch")(0xF00, 2, 1, 1, 32, 1, 1, 0, None, ctypes.addressof(params),
                                1) == 0
    assert fn("nova_rt_memcpy")(0x10, 0x20, 64, None) == 0
    assert fn("nova_rt_memset32")(0x10, 7, 16, None) == 0
    out = ctypes.c_void_p()
    assert fn("nova_rt_mem_alloc")(ctypes.addressof(out), 256, None, 0) == 0
    launch, = _calls(mock, "cuLaunchKernel")
    assert launch[1][8] == ORIGIN and launch[1][8] != DEFAULT_STREAM
    assert _calls(mock, "cuMemcpyAsync")[0][1][3] == ORIGIN
    assert _calls(mock, "cuMemsetD32Async")[0][1][3] == ORIGIN
    assert _calls(mock, "cuMemAllocAsync")[0][1][2] == ORIGIN
    assert cap.kernels == 1


def test_streams_fork_from_and_join_into_the_capture_stream(capture) -> None:
    cap, fn, mock = capture
    s = _create_stream(fn)
    records = _calls(mock, "cuEventRecord")
    waits = _calls(mock, "cuStreamWaitEvent")
    assert records[-1][1][1] == ORIGIN  # fork: an event at the capture stream's end ...
    assert waits[-1][1][:2] == (s, records[-1][1][0])  # ... that the new stream waits for
    fn("nova_rt_launch")(0xF00, 1, 1, 1, 1, 1, 1, 0, s, None, 0)
    assert _calls(mock, "cuLaunchKernel")[-1][1][8] == s
    mock.calls.clear()
    assert fn("nova_rt_stream_synchronize")(s) == 0
    assert fn("nova_rt_stream_destroy")(s) == 0
    names = [n for n, _ in mock.calls]
    assert "cuStreamSynchronize" not in names and "cuStreamDestroy_v2" not in names
    record = _calls(mock, "cuEventRecord")[0][1]
    assert record[1] == s
    assert (ORIGIN, record[0], 0) in [w[1] for w in _calls(mock, "cuStreamWaitEvent")]
    assert s not in cap.live and s in cap.dead_streams
    mock.calls.clear()
    cap.release_deferred()
    assert len(_calls(mock, "cuEventDestroy_v2")) >= 2
    # the stream is given back to the native module (kept for reuse, or destroyed when its
    # free list is full): the next stream created is this one, without cuStreamCreate
    mock.calls.clear()
    assert _create_stream(fn) == s and not _calls(mock, "cuStreamCreate")
    cap.release_deferred()


def test_host_waits_become_waits_of_every_live_stream(capture) -> None:
    cap, fn, mock = capture
    a, b = _create_stream(fn), _create_stream(fn)
    ev = ctypes.c_void_p()
    fn("nova_rt_event_create")(ctypes.addressof(ev))
    fn("nova_rt_event_record")(ev.value, a)
    mock.calls.clear()
    assert fn("nova_rt_event_synchronize")(ev.value) == 0
    assert "cuEventSynchronize" not in [n for n, _ in mock.calls]
    waiters = {w[1][0] for w in _calls(mock, "cuStreamWaitEvent") if w[1][1] == ev.value}
    assert waiters == {ORIGIN, a, b}
    mock.calls.clear()
    assert fn("nova_rt_stream_synchronize")(None) == 0  # the capture stream itself
    record = _calls(mock, "cuEventRecord")[0][1]
    assert record[1] == ORIGIN
    assert {w[1][0] for w in _calls(mock, "cuStreamWaitEvent")} == {a, b}
    mock.calls.clear()
    cap.finish()  # still-live streams join the capture stream before the capture ends
    joined = {r[1][1] for r in _calls(mock, "cuEventRecord")}
    assert joined == {a, b}
    assert {w[1][0] for w in _calls(mock, "cuStreamWaitEvent")} == {ORIGIN}
    fn("nova_rt_event_destroy")(ev.value)
    assert "cuEventDestroy_v2" not in [n for n, _ in mock.calls]  # deferred
    cap.release_deferred()


def test_graph_allocations_are_freed_in_the_graph(capture) -> None:
    cap, fn, mock = capture
    out = ctypes.c_void_p()
    fn("nova_rt_mem_alloc")(ctypes.addressof(out), 128, None, 0)
    pointer = out.value
    assert fn("nova_rt_mem_free")(pointer, None) == 0
    assert ("cuMemFreeAsync", (pointer, ("CUstream", ORIGIN))) in cap.device.driver.calls
    assert "cuPointerGetAttribute" not in [n for n, _ in mock.calls]
    fn("nova_rt_mem_alloc")(ctypes.addressof(out), 128, None, 1)  # host_shared: managed
    managed = out.value
    assert fn("nova_rt_mem_free")(managed, None) == 0
    assert "cuStreamSynchronize" not in [n for n, _ in mock.calls]
    cap.close()
    assert ("cuMemFree", (managed,)) in cap.device.driver.calls


def test_driver_failures_pass_through_as_statuses(capture) -> None:
    _cap, fn, mock = capture
    mock.results["cuLaunchKernel"] = 1
    assert fn("nova_rt_launch")(0xF00, 1, 1, 1, 1, 1, 1, 0, None, None, 0) == 1
    error = take_error()
    assert isinstance(error, CudaError) and error.call == "cuLaunchKernel"
    mock.results.clear()
    mock.results["cuEventRecord"] = 400
    assert fn("nova_rt_stream_synchronize")(None) == 1  # a failure inside the join protocol
    error = take_error()
    assert isinstance(error, CudaError) and error.call == "cuEventRecord"
    assert "graph capture" in "".join(getattr(error, "__notes__", []))


def test_null_stream_allocation_orders_the_live_streams_after_it(capture) -> None:
    """A synchronous gpu.alloc no longer blocks the host: while capturing, the streams the
    program has open wait for the capture stream (where the allocation node is) instead."""
    cap, fn, mock = capture
    a, b = _create_stream(fn), _create_stream(fn)
    mock.calls.clear()
    out = ctypes.c_void_p()
    assert fn("nova_rt_mem_alloc")(ctypes.addressof(out), 64, None, 0) == 0
    names = [n for n, _ in mock.calls]
    assert "cuStreamSynchronize" not in names and "cuEventSynchronize" not in names
    record = _calls(mock, "cuEventRecord")[0][1]
    assert record[1] == ORIGIN
    assert {w[1][0] for w in _calls(mock, "cuStreamWaitEvent") if w[1][1] == record[0]} == {a, b}
    mock.calls.clear()
    fn("nova_rt_mem_alloc")(ctypes.addressof(out), 64, a, 0)  # on a stream: nothing more
    fn("nova_rt_mem_alloc")(ctypes.addressof(out), 64, None, 1)  # managed: not stream-ordered
    assert _calls(mock, "cuEventRecord", "cuStreamWaitEvent") == []
    cap.finish()
    cap.release_deferred()
    cap.close()


def test_library_calls_go_to_the_capture_stream(native: cuda_abi.NativeCudaAbi,
                                                mock: HandleDriver) -> None:
    """A cuBLASLt call (nova_rt_library_call) is recorded like a launch: on the capture stream
    for the null stream, on its own stream otherwise, counted among the kernels."""
    seen: list[tuple[int, int, int]] = []
    proto = ABI_BY_NAME["nova_rt_library_call"].ctypes_prototype()

    def library_call(plan: int, operands: int, count: int, stream: int | None) -> int:
        seen.append((plan, count, stream or 0))
        return 0

    keep = proto(library_call)
    device = SimpleNamespace(driver=PyDriver())
    base = cuda_abi.CudaAbi(device, None, native=native)  # type: ignore[arg-type]
    base.library_call = ctypes.cast(keep, ctypes.c_void_p).value or 0
    cap = CudaCaptureAbi(device, None, ORIGIN, base=base)
    call = proto(cap.symbols()["nova_rt_library_call"])
    assert call(0x9A, 0x10, 3, None) == 0
    assert call(0x9A, 0x10, 3, 0x5150) == 0
    assert seen == [(0x9A, 3, ORIGIN), (0x9A, 3, 0x5150)]
    assert cap.kernels == 2

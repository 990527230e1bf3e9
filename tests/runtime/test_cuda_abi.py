"""The native cuda ABI against a mock driver (runs without a GPU).

The native module is compiled with every driver symbol renamed (`nova_mock_cuX`) and bound to
ctypes mocks that record their arguments, so each ABI function's driver calls, the null-stream
rule, the error path (call name, CUresult, kernel name, sticky errors) and the launch-dimension
checks are tested exactly as the GPU would see them.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import pytest

from nova.abi import ABI_BY_NAME
from nova.errors import CudaError
from nova.runtime.cuda import abi as cuda_abi
from nova.runtime.cuda.native import DRIVER_FUNCTIONS, FREE_STREAMS, native_ir
from nova.runtime.native_support import clear_error, take_error

PREFIX = "nova_mock_"
DEFAULT_STREAM = 0xD5
CONTEXT = 0xC0

_CTYPES = {"ptr": ctypes.c_void_p, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
           "i16": ctypes.c_int16, "i8": ctypes.c_int8}


class MockDriver:
    """Records every driver call; `results[name]` makes a call fail with that CUresult."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.results: dict[str, int] = {}
        self.queued: dict[str, list[int]] = {}  # results of the next calls, before `results`
        self.managed = False
        self.current_context = CONTEXT
        self.cluster_seen: tuple[int, ...] = ()
        self._callbacks: dict[str, object] = {}
        for name, signature in DRIVER_FUNCTIONS.items():
            params = [_CTYPES[p.strip()] for p in signature.split("(", 1)[1].rstrip(")").split(",")]
            proto = ctypes.CFUNCTYPE(ctypes.c_int32, *params)
            self._callbacks[name] = proto(self._make(name))

    def _make(self, name: str) -> Callable[..., int]:
        def mock(*args: Any) -> int:
            self.calls.append((name, args))
            self._effect(name, args)
            if self.queued.get(name):
                return self.queued[name].pop(0)
            return self.results.get(name, 0)
        return mock

    def _effect(self, name: str, args: tuple[Any, ...]) -> None:
        if name in ("cuStreamCreate", "cuEventCreate", "cuMemAllocAsync", "cuMemAllocManaged",
                    "cuMemAllocFromPoolAsync"):
            ctypes.c_void_p.from_address(args[0]).value = 0xABC000
        elif name == "cuPointerGetAttribute":
            ctypes.c_int32.from_address(args[0]).value = int(self.managed)
        elif name == "cuCtxGetCurrent":
            ctypes.c_void_p.from_address(args[0]).value = self.current_context
        elif name == "cuLaunchKernelEx":
            config = (ctypes.c_uint32 * 7).from_address(args[0])
            attrs = ctypes.c_void_p.from_address(args[0] + 40).value
            num = ctypes.c_uint32.from_address(args[0] + 48).value
            attr_id = ctypes.c_uint32.from_address(attrs).value
            cluster = tuple((ctypes.c_uint32 * 3).from_address(attrs + 8))
            stream = ctypes.c_void_p.from_address(args[0] + 32).value
            self.cluster_seen = (*config, stream, num, attr_id, *cluster)

    def symbols(self) -> dict[str, int]:
        return {PREFIX + n: ctypes.cast(cb, ctypes.c_void_p).value or 0
                for n, cb in self._callbacks.items()}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.fixture(scope="module")
def mock_driver() -> MockDriver:
    return MockDriver()


@pytest.fixture(scope="module")
def native(mock_driver: MockDriver) -> cuda_abi.NativeCudaAbi:
    module = cuda_abi.compile_native(None, PREFIX, mock_driver.symbols())
    module.set_default_stream(DEFAULT_STREAM)
    module.set_context(CONTEXT)
    return module


@pytest.fixture
def driver(mock_driver: MockDriver) -> MockDriver:
    mock_driver.calls.clear()
    mock_driver.results.clear()
    mock_driver.queued.clear()
    mock_driver.managed = False
    mock_driver.current_context = CONTEXT
    clear_error()
    return mock_driver


def abi(native: cuda_abi.NativeCudaAbi, name: str) -> Any:
    return ABI_BY_NAME[name].ctypes_prototype()(native.addresses[name])


def test_ir_declares_only_driver_functions() -> None:
    text = native_ir()
    declared = {line.split("@")[1].split("(")[0] for line in text.splitlines()
                if line.startswith("declare")}
    # libc: the open-stream registry grows with realloc and tags entries with pthread_self
    assert declared - {"nova_rt_call_entry", "realloc", "pthread_self"} == set(DRIVER_FUNCTIONS)
    assert "cudart" not in text and "cudaLaunch" not in text


def test_launch_uses_default_stream_for_null(native: Any, driver: MockDriver) -> None:
    params = (ctypes.c_void_p * 1)(0x1234)
    status = abi(native, "nova_rt_launch")(0xF00, 2, 3, 4, 32, 1, 1, 128, None,
                                           ctypes.addressof(params), 1)
    assert status == 0
    name, args = driver.calls[-1]
    assert name == "cuLaunchKernel"
    assert args[0] == 0xF00
    assert args[1:8] == (2, 3, 4, 32, 1, 1, 128)
    assert args[8] == DEFAULT_STREAM
    assert args[9] == ctypes.addressof(params)
    assert args[10] is None


def test_launch_on_explicit_stream(native: Any, driver: MockDriver) -> None:
    abi(native, "nova_rt_launch")(0xF00, 1, 1, 1, 1, 1, 1, 0, 0x5555, None, 0)
    assert driver.calls[-1][1][8] == 0x5555


def test_failed_launch_records_call_code_and_kernel(native: Any, driver: MockDriver,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    cuda_abi._kernel_names[0xF01] = "saxpy_kernel"
    driver.results["cuLaunchKernel"] = 700
    status = abi(native, "nova_rt_launch")(0xF01, 1, 1, 1, 1, 1, 1, 0, None, None, 0)
    assert status == 1
    error = take_error()
    assert isinstance(error, CudaError)
    assert error.call == "cuLaunchKernel"
    assert error.code == 700
    assert error.kernel == "saxpy_kernel"
    assert error.context_lost
    assert "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700) in kernel @saxpy_kernel: " \
        "the fault is in GPU work enqueued before this launch, found when launching it" \
        in str(error)


def test_launch_blocking_fault_is_the_launched_kernels(native: Any, driver: MockDriver,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With CUDA_LAUNCH_BLOCKING=1 a launch returns its own kernel's fault: no 'before'."""
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    cuda_abi._kernel_names[0xF04] = "blocking_kernel"
    driver.results["cuLaunchKernel"] = 710
    assert abi(native, "nova_rt_launch")(0xF04, 1, 1, 1, 1, 1, 1, 0, None, None, 0) == 1
    error = take_error()
    assert isinstance(error, CudaError) and error.kernel == "blocking_kernel"
    assert "in kernel @blocking_kernel. The CUDA context is lost" in str(error)


def test_fault_found_at_sync_names_the_latest_kernel(native: Any, driver: MockDriver) -> None:
    cuda_abi._kernel_names[0xF03] = "stencil"
    assert abi(native, "nova_rt_launch")(0xF03, 1, 1, 1, 1, 1, 1, 0, None, None, 0) == 0
    driver.results["cuStreamSynchronize"] = 719
    assert abi(native, "nova_rt_stream_synchronize")(None) == 1
    error = take_error()
    assert isinstance(error, CudaError)
    assert error.call == "cuStreamSynchronize" and error.context_lost
    assert "the latest kernel launched was @stencil (the fault is in it or in GPU work " \
        "enqueued before it)" in str(error)


def test_launch_dimension_overflow_never_reaches_the_driver(native: Any,
                                                            driver: MockDriver) -> None:
    cuda_abi._kernel_names[0xF02] = "big"
    status = abi(native, "nova_rt_launch")(0xF02, 1 << 32, 1, 1, 1, 1, 1, 0, None, None, 0)
    assert status == 1
    assert driver.calls == []
    error = take_error()
    assert isinstance(error, CudaError)
    assert error.code == 1 and error.kernel == "big"


class _LaunchDevice:
    """What compile_launch reads of a device."""

    context_handle = CONTEXT

    class default_stream:  # stands for the stream object
        handle = DEFAULT_STREAM


def test_packed_launch_builds_the_parameter_array(driver: MockDriver) -> None:
    """nova_cuda_launch_packed (the launch module): header words, stream and the void** over the
    slots it builds, the context switch, the dimension check."""
    module = cuda_abi.compile_launch(_LaunchDevice(), PREFIX, driver.symbols())
    launch = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                              ctypes.c_char_p)(module.launch_packed)
    seen: list[list[int]] = []
    driver.results.clear()

    def effect(name: str, args: tuple[Any, ...]) -> None:
        if name == "cuLaunchKernel" and args[9]:
            pointers = (ctypes.c_void_p * 3).from_address(args[9])
            seen.append([ctypes.c_int64.from_address(p).value for p in pointers])
    real_effect = driver._effect
    driver._effect = lambda name, args: (effect(name, args), real_effect(name, args))  # type: ignore[method-assign]
    try:
        fixed = (ctypes.c_uint64 * 2)(0xF00, 3)
        header = struct.pack("<7q", 2, 3, 4, 32, 1, 1, 256)
        slots = struct.pack("<3q", 11, -22, 33)
        assert launch(ctypes.addressof(fixed), header, 0x5555, slots) == 0
        name, args = driver.calls[-1]
        assert name == "cuLaunchKernel" and args[0] == 0xF00
        assert args[1:9] == (2, 3, 4, 32, 1, 1, 256, 0x5555)
        assert seen == [[11, -22, 33]]
        assert launch(ctypes.addressof(fixed), header, None, slots) == 0
        assert driver.calls[-1][1][8] == DEFAULT_STREAM  # null: the default stream
        empty = (ctypes.c_uint64 * 2)(0xF00, 0)
        assert launch(ctypes.addressof(empty), header, None, b"") == 0
        assert driver.calls[-1][1][9] is None  # no parameters: a null array
        driver.current_context = 0x99  # another context is current: switch first
        assert launch(ctypes.addressof(fixed), header, None, slots) == 0
        assert ("cuCtxSetCurrent", (CONTEXT,)) in driver.calls
        big = struct.pack("<7q", 1 << 32, 1, 1, 1, 1, 1, 0)
        before = len(driver.calls)
        assert launch(ctypes.addressof(fixed), big, None, slots) == 1
        assert all(n != "cuLaunchKernel" for n, _ in driver.calls[before:])
        error = take_error()
        assert isinstance(error, CudaError) and error.code == 1
    finally:
        driver._effect = real_effect  # type: ignore[method-assign]


def test_cluster_launch_builds_launch_config(native: Any, driver: MockDriver) -> None:
    status = abi(native, "nova_rt_launch_cluster")(0xF00, 2, 1, 1, 8, 4, 1, 128, 1, 1, 1024,
                                                   None, None, 0)
    assert status == 0
    assert driver.names() == ["cuLaunchKernelEx"]
    assert driver.cluster_seen == (8, 4, 1, 128, 1, 1, 1024, DEFAULT_STREAM, 1, 4, 2, 1, 1)


def test_streams_and_events(native: Any, driver: MockDriver) -> None:
    out = ctypes.c_void_p()
    assert abi(native, "nova_rt_stream_create")(ctypes.addressof(out)) == 0
    assert out.value == 0xABC000
    assert driver.calls[0] == ("cuStreamCreate", (ctypes.addressof(out), 1))
    # the new stream forks from the default stream (an event recorded there, then waited for)
    assert [name for name, _ in driver.calls[1:]] == [
        "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy_v2"]
    assert driver.calls[2][1] == (0xABC000, DEFAULT_STREAM)
    assert driver.calls[3][1] == (0xABC000, 0xABC000, 0)
    assert abi(native, "nova_rt_event_create")(ctypes.addressof(out)) == 0
    assert driver.calls[-1] == ("cuEventCreate", (ctypes.addressof(out), 2))
    abi(native, "nova_rt_stream_synchronize")(None)
    abi(native, "nova_rt_stream_wait_event")(None, 0xE1)
    abi(native, "nova_rt_event_record")(0xE1, 0x77)
    abi(native, "nova_rt_event_synchronize")(0xE1)
    abi(native, "nova_rt_event_destroy")(0xE1)
    abi(native, "nova_rt_stream_destroy")(0x77)
    abi(native, "nova_rt_stream_destroy")(None)  # never destroys the executor's stream
    assert driver.calls[6:] == [
        ("cuStreamSynchronize", (DEFAULT_STREAM,)),
        ("cuStreamWaitEvent", (DEFAULT_STREAM, 0xE1, 0)),
        ("cuEventRecord", (0xE1, 0x77)),
        ("cuEventSynchronize", (0xE1,)),
        ("cuEventDestroy_v2", (0xE1,)),  # stream 0x77 is kept for reuse: no driver call
    ]
    abi(native, "nova_rt_stream_destroy")(0xABC000)  # leave no stream open for later tests
    _drain_free_list(native)


def _free_count(native: Any) -> ctypes.c_int64:
    """The native module's count of streams kept for reuse (a test may reset it to 0)."""
    return ctypes.c_int64.from_address(native.engine.get_global_value_address("nova_free_count"))


def _drain_free_list(native: Any) -> None:
    """Forget the (mock) streams kept for reuse, so a test starts from fresh creations."""
    _free_count(native).value = 0


def test_destroyed_streams_are_reused(native: Any, driver: MockDriver) -> None:
    _drain_free_list(native)
    create, destroy = abi(native, "nova_rt_stream_create"), abi(native, "nova_rt_stream_destroy")
    out = ctypes.c_void_p()
    assert create(ctypes.addressof(out)) == 0
    first = out.value
    assert destroy(first) == 0
    assert _free_count(native).value == 1 and "cuStreamDestroy_v2" not in driver.names()
    driver.calls.clear()
    assert create(ctypes.addressof(out)) == 0
    assert out.value == first and "cuStreamCreate" not in driver.names()
    # a reused stream still forks from the default stream
    assert driver.names() == ["cuEventCreate", "cuEventRecord", "cuStreamWaitEvent",
                              "cuEventDestroy_v2"]
    # a full free list destroys instead
    _free_count(native).value = FREE_STREAMS
    driver.calls.clear()
    assert destroy(first) == 0
    assert driver.calls == [("cuStreamDestroy_v2", (first,))]
    _drain_free_list(native)


def test_memory_allocation_paths(native: Any, driver: MockDriver) -> None:
    out = ctypes.c_void_p(0x1)
    alloc = abi(native, "nova_rt_mem_alloc")
    assert alloc(ctypes.addressof(out), 0, None, 0) == 0
    assert out.value is None and driver.calls == []
    assert alloc(ctypes.addressof(out), 64, None, 0) == 0
    assert driver.calls[-1] == ("cuMemAllocAsync", (ctypes.addressof(out), 64, DEFAULT_STREAM))
    assert alloc(ctypes.addressof(out), 64, None, 1) == 0
    assert driver.calls[-1] == ("cuMemAllocManaged", (ctypes.addressof(out), 64, 1))


def test_free_is_stream_ordered_unless_managed(native: Any, driver: MockDriver) -> None:
    free = abi(native, "nova_rt_mem_free")
    assert free(None, None) == 0 and driver.calls == []
    free(0x9000, 0x77)
    assert driver.names() == ["cuPointerGetAttribute", "cuMemFreeAsync"]
    assert driver.calls[-1][1] == (0x9000, 0x77)
    driver.calls.clear()
    driver.managed = True
    free(0x9000, None)
    assert driver.names() == ["cuPointerGetAttribute", "cuStreamSynchronize", "cuMemFree_v2"]


def test_copies_and_memsets(native: Any, driver: MockDriver) -> None:
    assert abi(native, "nova_rt_memcpy")(0x10, 0x20, 0, None) == 0
    assert driver.calls == []
    abi(native, "nova_rt_memcpy")(0x10, 0x20, 48, None)
    abi(native, "nova_rt_memset32")(0x10, -1, 12, 0x77)
    abi(native, "nova_rt_memset16")(0x10, 0x12345, 24, None)
    abi(native, "nova_rt_memset8")(0x10, 0x1FF, 48, None)
    abi(native, "nova_rt_host_register")(0x10, 4096)
    abi(native, "nova_rt_host_unregister")(0x10)
    assert driver.calls == [
        ("cuMemcpyAsync", (0x10, 0x20, 48, DEFAULT_STREAM)),
        ("cuMemsetD32Async", (0x10, -1, 12, 0x77)),
        ("cuMemsetD16Async", (0x10, 0x2345, 24, DEFAULT_STREAM)),
        ("cuMemsetD8Async", (0x10, -1, 48, DEFAULT_STREAM)),
        ("cuMemHostRegister_v2", (0x10, 4096, 0)),
        ("cuMemHostUnregister", (0x10,)),
    ]


def test_failed_copy_is_reported_without_kernel(native: Any, driver: MockDriver) -> None:
    driver.results["cuMemcpyAsync"] = 1
    assert abi(native, "nova_rt_memcpy")(0x10, 0x20, 8, None) == 1
    error = take_error()
    assert isinstance(error, CudaError)
    assert (error.call, error.error_name, error.kernel) == ("cuMemcpyAsync",
                                                             "CUDA_ERROR_INVALID_VALUE", None)
    assert not error.context_lost


def test_call_entry_makes_the_context_current(native: Any, driver: MockDriver) -> None:
    entry_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
    seen: list[int] = []
    entry = entry_type(lambda args, results: seen.append(1))
    call = cuda_abi._CALL_ENTRY_TYPE(native.call_entry)
    assert call(ctypes.cast(entry, ctypes.c_void_p).value, None, None) == 0
    assert driver.names() == ["cuCtxGetCurrent"] and seen == [1]
    driver.calls.clear()
    driver.current_context = 0xBAD
    assert call(ctypes.cast(entry, ctypes.c_void_p).value, None, None) == 0
    assert driver.calls[-1] == ("cuCtxSetCurrent", (CONTEXT,))


def test_error_name_without_gpu() -> None:
    assert cuda_abi.error_name(700) == "CUDA_ERROR_ILLEGAL_ADDRESS"


def _entry_creating(native: Any, keep: int, destroy: int) -> tuple[Any, Any, list[int]]:
    """An entry (a Python callback) that creates `keep + destroy` streams and destroys the last
    `destroy` of them, as a program with unwaited async tokens would; returns it, its ctypes
    callback (keep it alive) and the handles it created."""
    create, destroy_fn = abi(native, "nova_rt_stream_create"), abi(native, "nova_rt_stream_destroy")
    handles: list[int] = []

    def body(args: Any, results: Any) -> None:
        for _ in range(keep + destroy):
            out = ctypes.c_void_p()
            assert create(ctypes.addressof(out)) == 0
            handles.append(out.value or 0)
        for handle in handles[keep:]:
            destroy_fn(handle)

    entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(body)
    return ctypes.cast(entry, ctypes.c_void_p).value, entry, handles


def test_streams_left_open_join_the_default_stream_at_entry_exit(
        native: Any, driver: MockDriver) -> None:
    handles = iter(range(0x5000, 0x6000, 0x10))

    def distinct_streams(name: str, args: tuple[Any, ...]) -> None:
        if name == "cuStreamCreate":
            ctypes.c_void_p.from_address(args[0]).value = next(handles)

    original = driver._effect
    driver._effect = lambda name, args: (original(name, args), distinct_streams(name, args))
    try:
        call = cuda_abi._CALL_ENTRY_TYPE(native.call_entry)
        _drain_free_list(native)
        address, keepalive, created = _entry_creating(native, keep=2, destroy=1)
        driver.calls.clear()
        assert call(address, None, None) == 0
        assert len(set(created)) == 3
        # the destroyed stream (by the program) and each open one (at exit) are kept for reuse
        assert _free_count(native).value == 3
        for stream in created[:2]:
            record = driver.calls.index(("cuEventRecord", (0xABC000, stream)))
            assert driver.calls[record + 1] == ("cuStreamWaitEvent",
                                                (DEFAULT_STREAM, 0xABC000, 0))
        # nothing left open: the next call costs one context check, as before
        address2, keepalive2, _ = _entry_creating(native, keep=0, destroy=1)
        driver.calls.clear()
        assert call(address2, None, None) == 0
        assert "cuStreamCreate" not in driver.names()  # reused
        assert not any(name == "cuStreamWaitEvent" and args[0] == DEFAULT_STREAM
                       for name, args in driver.calls)  # no join
        del keepalive, keepalive2
    finally:
        driver._effect = original
        _drain_free_list(native)


def test_streams_of_another_thread_stay_open(native: Any, driver: MockDriver) -> None:
    import threading

    create, destroy = abi(native, "nova_rt_stream_create"), abi(native, "nova_rt_stream_destroy")
    out = ctypes.c_void_p()
    worker = threading.Thread(target=lambda: create(ctypes.addressof(out)))
    worker.start()
    worker.join()
    try:
        entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(lambda a, r: None)
        driver.calls.clear()
        call = cuda_abi._CALL_ENTRY_TYPE(native.call_entry)
        assert call(ctypes.cast(entry, ctypes.c_void_p).value, None, None) == 0
        assert "cuEventRecord" not in driver.names()  # the other thread's program owns it
    finally:
        destroy(out.value)
        _drain_free_list(native)


# --- stream-ordered allocation from the device's pool -----------------------------------------
POOL = 0x9001
_SYNCS = {"cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize"}


@pytest.fixture
def pooled(native: Any, driver: MockDriver):
    """The native module allocating from a (mock) pool, as native_for sets it up."""
    native.set_mem_pool(POOL)
    yield native
    native.set_mem_pool(0)
    native.set_reclaim(None)


def test_allocation_draws_from_the_pool_without_waiting(pooled: Any, driver: MockDriver) -> None:
    alloc, free = abi(pooled, "nova_rt_mem_alloc"), abi(pooled, "nova_rt_mem_free")
    out = ctypes.c_void_p()
    assert alloc(ctypes.addressof(out), 256, 0x77, 0) == 0
    assert driver.calls == [("cuMemAllocFromPoolAsync", (ctypes.addressof(out), 256, POOL, 0x77))]
    assert out.value == 0xABC000
    assert alloc(ctypes.addressof(out), 256, None, 0) == 0  # null: the default stream
    assert driver.calls[-1][1][3] == DEFAULT_STREAM
    assert free(out.value, None) == 0
    assert driver.calls[-1] == ("cuMemFreeAsync", (0xABC000, DEFAULT_STREAM))
    assert not _SYNCS & set(driver.names())
    assert alloc(ctypes.addressof(out), 64, None, 1) == 0  # managed memory is not pooled
    assert driver.calls[-1][0] == "cuMemAllocManaged"


def test_out_of_memory_reclaims_then_retries_once(pooled: Any, driver: MockDriver) -> None:
    seen: list[int] = []

    def reclaim(stream: int) -> bool:
        seen.append(stream)
        return True

    pooled.set_reclaim(reclaim)
    alloc = abi(pooled, "nova_rt_mem_alloc")
    out = ctypes.c_void_p()
    driver.queued["cuMemAllocFromPoolAsync"] = [2]  # CUDA_ERROR_OUT_OF_MEMORY, then success
    assert alloc(ctypes.addressof(out), 1 << 20, 0x77, 0) == 0
    assert seen == [0x77] and driver.names() == ["cuMemAllocFromPoolAsync"] * 2
    assert out.value == 0xABC000 and take_error() is None
    # still out of memory after reclaiming: the second failure is reported
    driver.calls.clear()
    driver.queued["cuMemAllocFromPoolAsync"] = [2, 2]
    assert alloc(ctypes.addressof(out), 1 << 20, None, 0) == 1
    error = take_error()
    assert isinstance(error, CudaError)
    assert (error.call, error.error_name) == ("cuMemAllocFromPoolAsync",
                                              "CUDA_ERROR_OUT_OF_MEMORY")
    assert seen == [0x77, DEFAULT_STREAM] and len(driver.calls) == 2


def test_no_retry_when_reclaim_declines_or_fails(pooled: Any, driver: MockDriver) -> None:
    alloc = abi(pooled, "nova_rt_mem_alloc")
    out = ctypes.c_void_p()

    def broken(stream: int) -> bool:
        raise RuntimeError("reclaiming failed")

    for reclaim in (None, lambda stream: False, broken):
        pooled.set_reclaim(reclaim)
        driver.calls.clear()
        driver.queued["cuMemAllocFromPoolAsync"] = [2]
        assert alloc(ctypes.addressof(out), 64, None, 0) == 1
        assert driver.names() == ["cuMemAllocFromPoolAsync"]
        error = take_error()
        assert isinstance(error, CudaError) and error.code == 2
    # other failures never reclaim
    calls: list[int] = []
    pooled.set_reclaim(lambda stream: bool(calls.append(stream)) or True)
    driver.queued["cuMemAllocFromPoolAsync"] = [1]
    assert alloc(ctypes.addressof(out), 64, None, 0) == 1
    assert calls == [] and take_error().error_name == "CUDA_ERROR_INVALID_VALUE"


def test_null_stream_allocation_orders_this_threads_open_streams(
        pooled: Any, driver: MockDriver) -> None:
    """A synchronous gpu.alloc (the null stream) no longer blocks the host: the streams this
    thread's program has open wait for an event recorded on the default stream after the
    allocation instead, so their later work sees it, as after a host synchronization."""
    import threading

    handles = iter(range(0x7000, 0x8000, 0x10))

    def distinct(name: str, args: tuple[Any, ...]) -> None:
        if name == "cuStreamCreate":
            ctypes.c_void_p.from_address(args[0]).value = next(handles)

    original = driver._effect
    driver._effect = lambda name, args: (original(name, args), distinct(name, args))
    create, destroy = abi(pooled, "nova_rt_stream_create"), abi(pooled, "nova_rt_stream_destroy")
    alloc = abi(pooled, "nova_rt_mem_alloc")
    _drain_free_list(pooled)
    mine = [ctypes.c_void_p(), ctypes.c_void_p()]
    theirs = ctypes.c_void_p()
    try:
        out = ctypes.c_void_p()
        assert alloc(ctypes.addressof(out), 64, None, 0) == 0  # nothing open: one call
        assert driver.names() == ["cuMemAllocFromPoolAsync"]
        for slot in mine:
            assert create(ctypes.addressof(slot)) == 0
        worker = threading.Thread(target=lambda: create(ctypes.addressof(theirs)))
        worker.start()
        worker.join()
        driver.calls.clear()
        assert alloc(ctypes.addressof(out), 64, None, 0) == 0
        assert driver.names() == ["cuMemAllocFromPoolAsync", "cuEventCreate", "cuEventRecord",
                                  "cuStreamWaitEvent", "cuStreamWaitEvent", "cuEventDestroy_v2"]
        assert driver.calls[2] == ("cuEventRecord", (0xABC000, DEFAULT_STREAM))
        waiters = {args[0] for name, args in driver.calls if name == "cuStreamWaitEvent"}
        assert waiters == {mine[0].value, mine[1].value}  # not the other thread's stream
        driver.calls.clear()
        assert alloc(ctypes.addressof(out), 64, mine[0].value, 0) == 0  # on a stream: ordered
        assert alloc(ctypes.addressof(out), 64, None, 1) == 0  # managed: not stream-ordered
        assert driver.names() == ["cuMemAllocFromPoolAsync", "cuMemAllocManaged"]
        # a failed wait is reported after the registry is unlocked (a later call still works)
        driver.calls.clear()
        driver.queued["cuStreamWaitEvent"] = [1]
        assert alloc(ctypes.addressof(out), 64, None, 0) == 1
        assert take_error().call == "cuStreamWaitEvent"
        assert "cuEventDestroy_v2" in driver.names()
        # ... and the allocation the caller never sees is given back
        assert driver.calls[-1] == ("cuMemFreeAsync", (0xABC000, DEFAULT_STREAM))
        assert out.value is None
        assert alloc(ctypes.addressof(out), 64, None, 0) == 0
        driver.calls.clear()
        driver.queued["cuEventRecord"] = [1]  # the event is destroyed, the failure reported
        assert alloc(ctypes.addressof(out), 64, None, 0) == 1
        assert take_error().call == "cuEventRecord"
        assert driver.names() == ["cuMemAllocFromPoolAsync", "cuEventCreate", "cuEventRecord",
                                  "cuEventDestroy_v2", "cuMemFreeAsync"]
    finally:
        driver._effect = original
        for slot in (*mine, theirs):
            destroy(slot.value)
        _drain_free_list(pooled)

"""The native block cache in front of the stream-ordered pool (nova.runtime.cuda.native_blocks),
against a mock driver (runs without a GPU).

The driver mock hands out distinct addresses and, like the real pool, reuses addresses given
back with cuMemFreeAsync. Unit tests pin each rule (same-stream reuse without a driver call, no
reuse by another stream or another size, no pointer query for tracked blocks, flush on stream
destruction and out of memory, the byte and slot limits, the direct functions of graph capture);
a hypothesis state machine checks the invariants over random alloc/free/flush/destroy sequences
on several streams.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from nova.abi import ABI_BY_NAME
from nova.errors import CudaError
from nova.runtime.cuda import abi as cuda_abi
from nova.runtime.cuda.native import DRIVER_FUNCTIONS, FREE_STREAMS
from nova.runtime.cuda.native_blocks import (
    ALLOC_DIRECT,
    BLOCK_SLOTS,
    CACHE_MAX_BYTES,
    FREE_DIRECT,
    TRACK_MAX_BYTES,
)
from nova.runtime.native_support import clear_error, take_error

PREFIX = "nova_bmock_"
DEFAULT_STREAM = 0xD5
CONTEXT = 0xC0
POOL = 0x9001
S1, S2 = 0x51, 0x52
MANAGED_BASE = 0x7_0000_0000

_CTYPES = {"ptr": ctypes.c_void_p, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
           "i16": ctypes.c_int16, "i8": ctypes.c_int8}


class PoolDriver:
    """Records every driver call; pool allocations get distinct addresses, reusing the ones
    given back with cuMemFreeAsync (most recent first), as the real pool may."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.queued: dict[str, list[int]] = {}
        self.live: set[int] = set()  # pool blocks the driver has handed out
        self.returned: list[int] = []  # freed to the driver, reusable
        self.managed: set[int] = set()
        self._next = 0x1_0000_0000
        self._next_managed = MANAGED_BASE
        self._callbacks: dict[str, object] = {}
        for name, signature in DRIVER_FUNCTIONS.items():
            params = [_CTYPES[p.strip()] for p in signature.split("(", 1)[1].rstrip(")").split(",")]
            self._callbacks[name] = ctypes.CFUNCTYPE(ctypes.c_int32, *params)(self._make(name))

    def _make(self, name: str) -> Callable[..., int]:
        def mock(*args: Any) -> int:
            self.calls.append((name, args))
            if self.queued.get(name):
                status = self.queued[name].pop(0)
                if status:
                    return status
            self._effect(name, args)
            return 0
        return mock

    def _effect(self, name: str, args: tuple[Any, ...]) -> None:
        if name in ("cuMemAllocFromPoolAsync", "cuMemAllocAsync"):
            if self.returned:
                block = self.returned.pop()
            else:
                block, self._next = self._next, self._next + (1 << 32)
            assert block not in self.live
            self.live.add(block)
            ctypes.c_void_p.from_address(args[0]).value = block
        elif name == "cuMemAllocManaged":
            block, self._next_managed = self._next_managed, self._next_managed + (1 << 20)
            self.managed.add(block)
            ctypes.c_void_p.from_address(args[0]).value = block
        elif name == "cuMemFreeAsync":
            assert args[0] in self.live, f"cuMemFreeAsync of {args[0]:#x}: not a live block"
            self.live.discard(args[0])
            self.returned.append(args[0])
        elif name == "cuMemFree_v2":
            self.managed.discard(args[0])
        elif name == "cuPointerGetAttribute":
            ctypes.c_int32.from_address(args[0]).value = int(args[2] in self.managed)
        elif name == "cuCtxGetCurrent":
            ctypes.c_void_p.from_address(args[0]).value = CONTEXT
        elif name in ("cuStreamCreate", "cuEventCreate"):
            ctypes.c_void_p.from_address(args[0]).value = 0xE000

    def symbols(self) -> dict[str, int]:
        return {PREFIX + n: ctypes.cast(cb, ctypes.c_void_p).value or 0
                for n, cb in self._callbacks.items()}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


_driver = PoolDriver()
_native: Any = None


def _module() -> Any:
    global _native
    if _native is None:
        _native = cuda_abi.compile_native(None, PREFIX, _driver.symbols())
        _native.set_default_stream(DEFAULT_STREAM)
        _native.set_context(CONTEXT)
        _native.set_mem_pool(POOL)
    return _native


def _fn(name: str, address: int | None = None) -> Any:
    abi_name = {ALLOC_DIRECT: "nova_rt_mem_alloc", FREE_DIRECT: "nova_rt_mem_free"}.get(name, name)
    native = _module()
    if address is None:
        address = native.addresses.get(name) or (native.direct or {})[name]
    return ABI_BY_NAME[abi_name].ctypes_prototype()(address)


class Runtime:
    """The native module's allocation functions, with the block cache on."""

    def __init__(self) -> None:
        self.native = _module()
        self.driver = _driver
        self._alloc = _fn("nova_rt_mem_alloc")
        self._free = _fn("nova_rt_mem_free")
        self.alloc_direct = _fn(ALLOC_DIRECT)
        self.free_direct = _fn(FREE_DIRECT)
        self.destroy_stream = _fn("nova_rt_stream_destroy")

    def alloc(self, size: int, stream: int | None = None, managed: int = 0,
              fn: Any = None) -> int:
        out = ctypes.c_void_p()
        status = (fn or self._alloc)(ctypes.addressof(out), size, stream, managed)
        assert status == 0, take_error()
        return out.value or 0

    def free(self, pointer: int, stream: int | None = None, fn: Any = None) -> None:
        assert (fn or self._free)(pointer, stream) == 0, take_error()

    def destroy(self, stream: int) -> None:
        """Destroy `stream` for real (the native free list is full, so it is not kept)."""
        free_count = ctypes.c_int64.from_address(
            self.native.engine.get_global_value_address("nova_free_count"))
        free_count.value = FREE_STREAMS
        try:
            assert self.destroy_stream(stream) == 0, take_error()
        finally:
            free_count.value = 0

    def reset(self, live: list[int]) -> None:
        """Free what a test left allocated, then empty the cache."""
        for pointer in live:
            self.free(pointer, None)
        self.native.flush_blocks()
        assert self.native.cached_bytes() == 0


@pytest.fixture
def rt() -> Iterator[Runtime]:
    runtime = Runtime()
    runtime.native.set_block_cache(True)
    runtime.native.set_reclaim(None)
    _driver.calls.clear()
    _driver.queued.clear()
    clear_error()
    yield runtime
    runtime.native.flush_blocks()
    runtime.native.set_block_cache(False)
    runtime.native.set_reclaim(None)


def test_same_stream_same_size_reuses_without_the_driver(rt: Runtime) -> None:
    a = rt.alloc(4096, S1)
    assert rt.driver.names() == ["cuMemAllocFromPoolAsync"]
    rt.driver.calls.clear()
    rt.free(a, S1)
    assert rt.driver.calls == [] and rt.native.cached_bytes() == 4096
    assert rt.alloc(4096, S1) == a
    assert rt.driver.calls == [] and rt.native.cached_bytes() == 0
    rt.free(a, S1)


def test_null_stream_is_the_default_streams_key(rt: Runtime) -> None:
    a = rt.alloc(256, None)
    rt.free(a, DEFAULT_STREAM)
    rt.driver.calls.clear()
    assert rt.alloc(256, None) == a and rt.driver.calls == []
    rt.free(a, None)


def test_no_reuse_by_another_stream_or_size(rt: Runtime) -> None:
    a = rt.alloc(4096, S1)
    rt.free(a, S1)
    rt.driver.calls.clear()
    b = rt.alloc(4096, S2)  # another stream: the driver decides (events), never the cache
    c = rt.alloc(2048, S1)  # another size
    assert a not in (b, c)
    assert rt.driver.names() == ["cuMemAllocFromPoolAsync"] * 2
    assert rt.native.cached_bytes() == 4096
    rt.reset([b, c])


def test_free_on_another_stream_caches_for_that_stream(rt: Runtime) -> None:
    """The stream of the free counts, not the allocation's: its later work follows the free."""
    a = rt.alloc(512, S1)
    rt.free(a, S2)
    rt.driver.calls.clear()
    b = rt.alloc(512, S1)
    assert b != a and rt.driver.names() == ["cuMemAllocFromPoolAsync"]
    assert rt.alloc(512, S2) == a
    rt.reset([a, b])


def test_tracked_blocks_need_no_pointer_query(rt: Runtime) -> None:
    rt.native.set_block_cache(False)
    rt.native.set_block_cache(True)
    big = rt.alloc(TRACK_MAX_BYTES + 1, S1)  # too big to track: asked about, freed by the driver
    rt.driver.calls.clear()
    rt.free(big, S1)
    assert rt.driver.names() == ["cuPointerGetAttribute", "cuMemFreeAsync"]
    managed = rt.alloc(64, S1, managed=1)  # managed memory is never tracked
    rt.driver.calls.clear()
    rt.free(managed, S1)
    assert rt.driver.names() == ["cuPointerGetAttribute", "cuStreamSynchronize", "cuMemFree_v2"]


def test_a_second_free_of_a_cached_block_is_an_error(rt: Runtime) -> None:
    """Freeing twice would otherwise hand the block out from the cache after the driver got it
    back: it is reported as the driver reports a second free."""
    a = rt.alloc(64, S1)
    rt.free(a, S1)
    rt.driver.calls.clear()
    assert _fn("nova_rt_mem_free")(a, S2) == 1
    error = take_error()
    assert isinstance(error, CudaError)
    assert (error.call, error.error_name) == ("cuMemFreeAsync", "CUDA_ERROR_INVALID_VALUE")
    assert rt.driver.calls == [] and rt.native.cached_bytes() == 64
    assert rt.alloc(64, S1) == a  # still cached once, for S1
    rt.reset([a])


def test_a_stale_slot_never_shadows_a_new_block(rt: Runtime) -> None:
    """A tracked block given back to the driver past the cache (no such path exists in Nova;
    defence in depth) and handed out again with another size: its free uses the new size."""
    a = rt.alloc(64, S1)
    rt.driver.live.discard(a)  # "freed" without the cache seeing it
    rt.driver.returned.append(a)
    b = rt.alloc(4096, S1)
    assert b == a
    rt.free(b, S1)
    assert rt.native.cached_bytes() == 4096
    c, d = rt.alloc(64, S1), rt.alloc(4096, S1)
    assert c != a and d == a
    rt.reset([c, d])


def test_cache_byte_limit(rt: Runtime) -> None:
    size = TRACK_MAX_BYTES
    count = CACHE_MAX_BYTES // size
    blocks = [rt.alloc(size, S1) for _ in range(count + 1)]
    rt.driver.calls.clear()
    for block in blocks:
        rt.free(block, S1)
    # the last one would pass the limit: freed by the driver, without a pointer query
    assert rt.driver.calls == [("cuMemFreeAsync", (blocks[-1], S1))]
    assert rt.native.cached_bytes() == CACHE_MAX_BYTES


def test_slot_limit(rt: Runtime) -> None:
    blocks = [rt.alloc(64, S1) for _ in range(BLOCK_SLOTS + 2)]
    rt.driver.calls.clear()
    for block in blocks:
        rt.free(block, S1)
    # the untracked ones are asked about and freed by the driver
    assert rt.driver.names() == ["cuPointerGetAttribute", "cuMemFreeAsync"] * 2
    assert rt.native.cached_bytes() == 64 * BLOCK_SLOTS


def test_flush_gives_blocks_back_on_their_streams(rt: Runtime) -> None:
    a, b, c = rt.alloc(64, S1), rt.alloc(64, S2), rt.alloc(128, None)
    rt.free(a, S1)
    rt.free(b, S2)
    rt.free(c, None)
    rt.driver.calls.clear()
    rt.native.flush_blocks(S1)
    assert rt.driver.calls == [("cuMemFreeAsync", (a, S1))]
    rt.native.flush_blocks()
    assert sorted(rt.driver.calls[1:]) == sorted([("cuMemFreeAsync", (b, S2)),
                                                  ("cuMemFreeAsync", (c, DEFAULT_STREAM))])
    assert rt.native.cached_bytes() == 0


def test_failed_flush_raises_after_trying_every_block(rt: Runtime) -> None:
    a, b = rt.alloc(64, S1), rt.alloc(64, S1)
    rt.free(a, S1)
    rt.free(b, S1)
    rt.driver.calls.clear()
    rt.driver.queued["cuMemFreeAsync"] = [1]
    with pytest.raises(CudaError, match="cuMemFreeAsync"):
        rt.native.flush_blocks()
    assert rt.driver.names() == ["cuMemFreeAsync"] * 2 and rt.native.cached_bytes() == 0
    rt.driver.live.discard(a if rt.driver.calls[0][1][0] == a else b)  # the one that "failed"


def test_destroying_a_stream_flushes_its_blocks_first(rt: Runtime) -> None:
    a, b = rt.alloc(64, S1), rt.alloc(64, S2)
    rt.free(a, S1)
    rt.free(b, S2)
    rt.driver.calls.clear()
    rt.destroy(S1)
    assert rt.driver.calls == [("cuMemFreeAsync", (a, S1)), ("cuStreamDestroy_v2", (S1,))]
    # a new stream with the same handle value starts without the old stream's blocks
    rt.driver.calls.clear()
    c = rt.alloc(64, S1)
    assert rt.driver.names() == ["cuMemAllocFromPoolAsync"]
    rt.reset([c])


def test_kept_streams_keep_their_blocks(rt: Runtime) -> None:
    """A stream the native module keeps for reuse (not destroyed) is still the same stream."""
    a = rt.alloc(64, S1)
    rt.free(a, S1)
    rt.driver.calls.clear()
    assert rt.destroy_stream(S1) == 0
    assert rt.driver.calls == []
    assert rt.alloc(64, S1) == a
    rt.reset([a])
    ctypes.c_int64.from_address(
        rt.native.engine.get_global_value_address("nova_free_count")).value = 0


def test_out_of_memory_flushes_the_cache_before_reclaiming(rt: Runtime) -> None:
    a = rt.alloc(4096, S1)
    rt.free(a, S1)
    seen: list[tuple[int, int]] = []

    def reclaim(stream: int) -> bool:
        seen.append((stream, rt.native.cached_bytes()))
        return True

    rt.native.set_reclaim(reclaim)
    rt.driver.calls.clear()
    rt.driver.queued["cuMemAllocFromPoolAsync"] = [2]  # out of memory, then success
    b = rt.alloc(1 << 20, S2)
    assert seen == [(S2, 0)]  # the cached block was already given back
    assert rt.driver.names() == ["cuMemAllocFromPoolAsync", "cuMemFreeAsync",
                                 "cuMemAllocFromPoolAsync"]
    assert rt.driver.calls[1] == ("cuMemFreeAsync", (a, S1))
    rt.reset([b])


def test_out_of_memory_is_still_reported(rt: Runtime) -> None:
    rt.driver.queued["cuMemAllocFromPoolAsync"] = [2]
    out = ctypes.c_void_p()
    assert _fn("nova_rt_mem_alloc")(ctypes.addressof(out), 64, None, 0) == 1
    error = take_error()
    assert isinstance(error, CudaError) and error.error_name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert out.value is None


def test_direct_functions_bypass_the_cache(rt: Runtime) -> None:
    """Graph capture's allocation and free: never cached, never taken from the cache."""
    a = rt.alloc(64, S1)
    rt.free(a, S1)
    rt.driver.calls.clear()
    g = rt.alloc(64, S1, fn=rt.alloc_direct)
    assert g != a and rt.driver.names() == ["cuMemAllocFromPoolAsync"]
    rt.driver.calls.clear()
    rt.free(g, S1, fn=rt.free_direct)
    assert rt.driver.names() == ["cuPointerGetAttribute", "cuMemFreeAsync"]
    # a tracked block freed directly is forgotten (no query) and goes to the driver
    t = rt.alloc(64, S2)
    rt.driver.calls.clear()
    rt.free(t, S2, fn=rt.free_direct)
    assert rt.driver.calls == [("cuMemFreeAsync", (t, S2))]
    assert rt.native.cached_bytes() == 64  # only `a`


def test_turning_the_cache_off_flushes_it(rt: Runtime) -> None:
    a = rt.alloc(64, S1)
    rt.free(a, S1)
    rt.driver.calls.clear()
    rt.native.set_block_cache(False)
    assert rt.driver.calls == [("cuMemFreeAsync", (a, S1))]
    assert not rt.native.block_cache_enabled()
    b = rt.alloc(64, S1)
    rt.driver.calls.clear()
    rt.free(b, S1)  # tracked before? no: the cache was off, so asked about
    assert rt.driver.names() == ["cuPointerGetAttribute", "cuMemFreeAsync"]


# --- invariants over random sequences --------------------------------------------------------
STREAMS = (None, S1, S2)
SIZES = (256, 4096, 1 << 20, TRACK_MAX_BYTES + 4096)


class BlockCacheMachine(RuleBasedStateMachine):
    """Random alloc/free/flush/destroy on three streams against a model of what the cache may
    do: a block handed out without a driver call must have been freed on the same stream (and
    the same stream generation: a destroyed stream's handle value may come back), with the same
    size, and not be in use; the driver never frees a block in use; the cached bytes are the
    sizes freed and not yet given back; nothing leaks once everything is freed and flushed."""

    @initialize()
    def setup(self) -> None:
        self.rt = Runtime()
        self.rt.native.set_block_cache(True)
        self.rt.native.set_reclaim(None)
        _driver.queued.clear()
        clear_error()
        self.live: dict[int, int] = {}  # pointer -> size, held by the "program"
        self.freed: dict[int, tuple[int, int | None, int]] = {}  # pointer -> size, stream, gen
        self.generation = {s: 0 for s in STREAMS}

    def _key(self, stream: int | None) -> int | None:
        return None if stream in (None, DEFAULT_STREAM) else stream

    @rule(stream=st.sampled_from(STREAMS), size=st.sampled_from(SIZES))
    def alloc(self, stream: int | None, size: int) -> None:
        before = len(_driver.calls)
        pointer = self.rt.alloc(size, stream)
        driver_calls = [n for n, _ in _driver.calls[before:]]
        assert pointer not in self.live, "handed out twice"
        if "cuMemAllocFromPoolAsync" not in driver_calls:  # from the cache
            assert pointer in self.freed, "a cache hit of a block never freed"
            freed_size, freed_on, generation = self.freed[pointer]
            assert freed_size == size
            assert freed_on == self._key(stream)
            assert generation == self.generation[self._key(stream)]
        self.freed.pop(pointer, None)
        self.live[pointer] = size

    @rule(data=st.data(), stream=st.sampled_from(STREAMS))
    def free(self, data: st.DataObject, stream: int | None) -> None:
        if not self.live:
            return
        pointer = data.draw(st.sampled_from(sorted(self.live)))
        size = self.live.pop(pointer)
        self.rt.free(pointer, stream)
        if pointer in _driver.live:  # cached (else given back to the driver at once)
            self.freed[pointer] = (size, self._key(stream), self.generation[self._key(stream)])

    @rule(stream=st.sampled_from((None, S1, S2, 0)))
    def flush(self, stream: int | None) -> None:
        target = DEFAULT_STREAM if stream is None else stream
        self.rt.native.flush_blocks(target)
        for pointer, (_, freed_on, _) in list(self.freed.items()):
            if stream == 0 or freed_on == self._key(target):
                self.freed.pop(pointer)

    @rule(stream=st.sampled_from((S1, S2)))
    def destroy(self, stream: int) -> None:
        self.rt.destroy(stream)  # its cached blocks go back to the driver first
        self.generation[stream] += 1
        for pointer, (_, freed_on, _) in list(self.freed.items()):
            if freed_on == stream:
                self.freed.pop(pointer)

    @invariant()
    def accounting(self) -> None:
        if not hasattr(self, "rt"):
            return
        for pointer in self.freed:
            assert pointer in _driver.live, "the cache lost a block"
        for pointer in self.live:
            assert pointer in _driver.live, "the driver freed a block in use"
        cached = sum(size for size, _, _ in self.freed.values())
        assert self.rt.native.cached_bytes() == cached

    def teardown(self) -> None:
        if not hasattr(self, "rt"):
            return
        self.rt.reset(list(self.live))
        held = {p for p in _driver.live if p < MANAGED_BASE}
        assert not held, f"leaked {len(held)} blocks"
        self.rt.native.set_block_cache(False)


TestBlockCacheMachine = BlockCacheMachine.TestCase
TestBlockCacheMachine.settings = settings(max_examples=60, stateful_step_count=40,
                                          deadline=None,
                                          suppress_health_check=[HealthCheck.too_slow])

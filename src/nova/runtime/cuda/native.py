"""The native part of the cuda runtime ABI: LLVM IR that calls libcuda's driver API directly.

Launches, streams, events, allocation, copies, memsets and host registration run as native code
(JIT-compiled once per device with llvmlite), so no launch passes through Python. Each function
checks its CUresult; on failure it calls an error-path-only callback (set by
`nova.runtime.cuda.abi`) with the driver call's name, the CUresult and, for launches, the
CUfunction, then returns 1 so the host code calls `nova_rt_raise`. The null stream handle means
`@nova_default_stream`, which the runtime sets to the device's default non-blocking stream. Only
the driver API is used (never libcudart). `prefix` renames every driver symbol (tests bind
`<prefix>cuX` to mocks, which keeps the real names untouched in the process-wide symbol table).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from nova.runtime.cuda.native_blocks import ALLOC_DIRECT, FLUSH_BLOCKS, FREE_DIRECT, blocks_ir
from nova.runtime.cuda.py_checked import py_checked_ir
from nova.runtime.cuda.py_launch import py_launch_ir
from nova.runtime.cuda.spinlock_ir import spinlock_ir

DRIVER_FUNCTIONS: dict[str, str] = {
    "cuCtxGetCurrent": "i32 (ptr)",
    "cuCtxSetCurrent": "i32 (ptr)",
    "cuLaunchKernel": "i32 (ptr, i32, i32, i32, i32, i32, i32, i32, ptr, ptr, ptr)",
    "cuLaunchKernelEx": "i32 (ptr, ptr, ptr, ptr)",
    "cuStreamCreate": "i32 (ptr, i32)",
    "cuStreamDestroy_v2": "i32 (ptr)",
    "cuStreamSynchronize": "i32 (ptr)",
    "cuStreamWaitEvent": "i32 (ptr, ptr, i32)",
    "cuEventCreate": "i32 (ptr, i32)",
    "cuEventDestroy_v2": "i32 (ptr)",
    "cuEventRecord": "i32 (ptr, ptr)",
    "cuEventSynchronize": "i32 (ptr)",
    "cuMemAllocAsync": "i32 (ptr, i64, ptr)",
    "cuMemAllocFromPoolAsync": "i32 (ptr, i64, ptr, ptr)",
    "cuMemAllocManaged": "i32 (ptr, i64, i32)",
    "cuMemFreeAsync": "i32 (ptr, ptr)",
    "cuMemFree_v2": "i32 (ptr)",
    "cuPointerGetAttribute": "i32 (ptr, i32, ptr)",
    "cuMemcpyAsync": "i32 (ptr, ptr, i64, ptr)",
    "cuMemsetD32Async": "i32 (ptr, i32, i64, ptr)",
    "cuMemsetD16Async": "i32 (ptr, i16, i64, ptr)",
    "cuMemsetD8Async": "i32 (ptr, i8, i64, ptr)",
    "cuMemHostRegister_v2": "i32 (ptr, i64, i32)",
    "cuMemHostUnregister": "i32 (ptr)",
}
"""Every driver entry point the native ABI calls (exported names, with their _v2 suffixes)."""

CU_STREAM_NON_BLOCKING = 1
CU_EVENT_DISABLE_TIMING = 2
CU_MEM_ATTACH_GLOBAL = 1
CU_POINTER_ATTRIBUTE_IS_MANAGED = 8
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CUDA_ERROR_INVALID_VALUE = 1

# CUlaunchConfig {7 x u32, CUstream, CUlaunchAttribute*, u32} and CUlaunchAttribute
# {u32 id, pad[4], union value[64]} with value.clusterDim = {u32 x, y, z}.
_CONFIG_TYPE = "{ i32, i32, i32, i32, i32, i32, i32, ptr, ptr, i32 }"
_ATTR_TYPE = "{ i32, [4 x i8], [3 x i32], [52 x i8] }"

ERROR_CALLBACK_GLOBAL = "nova_cuda_error_callback"
DEFAULT_STREAM_GLOBAL = "nova_default_stream"
CONTEXT_GLOBAL = "nova_cuda_context"
LAST_FUNCTION_GLOBAL = "nova_last_function"
"""The CUfunction of the latest launch: a fault found later (at a synchronization) names it."""
OPEN_COUNT_GLOBAL = "nova_open_count"
"""How many streams programs created and have not destroyed (see `_streams_join`)."""
CUDA_ERROR_OUT_OF_MEMORY = 2
FORGET_STREAM = "nova_streams_forget"
"""`void nova_streams_forget(stream)`: drop a stream from the open-stream registry (so entry exit
does not join it): graph capture joins the streams it creates into the capture stream itself."""
FREE_STREAMS = 64
"""How many streams programs are done with the native module keeps for reuse."""
LAUNCH_PACKED = "nova_cuda_launch_packed"
"""`i32 nova_cuda_launch_packed(fixed, header, stream, slots)`: make the device's context current,
then launch `fixed`'s kernel (`fixed`: the words CUfunction, slot count) with `header`'s
configuration (words gx, gy, gz, bx, by, bz, shared_bytes) on `stream` (null: the default
stream) and parameters `slots` (8-byte words; the `void**` array over them is built on the native
stack), through `nova_rt_launch` (same checks, same error path). Launchers of Python kernels
(nova.runtime.cuda.launcher) call it once per launch with bytes objects packed by `struct`; it
lives in the small module of `launch_ir`."""
CALL_ENTRY = "nova_cuda_call_entry"
"""`i32 nova_cuda_call_entry(entry, args, results)`: make the device's context current on this
thread (cheap when it already is), then `nova_rt_call_entry`."""


class _Body:
    """Accumulates one function's IR lines, with numbered CUresult checks."""

    def __init__(self, prefix: str, counter: Iterator[int]) -> None:
        self.lines: list[str] = []
        self.prefix = prefix
        self.counter = counter

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def call(self, driver: str, args: str, function: str = "null") -> None:
        """Call a driver function and return 1 (after reporting) unless it yields CUDA_SUCCESS."""
        n = next(self.counter)
        self(f"  %r{n} = call i32 @{self.prefix}{driver}({args})")
        self.check(f"%r{n}", driver, function)

    def check(self, result: str, driver: str, function: str = "null") -> None:
        n = next(self.counter)
        self(f"  %ok{n} = icmp eq i32 {result}, 0")
        self(f"  br i1 %ok{n}, label %cont{n}, label %fail{n}")
        self(f"fail{n}:")
        self(f"  call void @nova_cuda_fail(ptr @name.{driver}, i32 {result}, ptr {function})")
        self("  ret i32 1")
        self(f"cont{n}:")

    def stream(self, value: str = "%stream") -> str:
        n = next(self.counter)
        self(f"  %s{n} = call ptr @nova_cuda_stream(ptr {value})")
        return f"%s{n}"

    def return_if_zero(self, value: str, kind: str = "i64") -> None:
        """Empty operations (size or count 0) succeed without calling the driver."""
        n = next(self.counter)
        self(f"  %empty{n} = icmp eq {kind} {value}, {'null' if kind == 'ptr' else 0}")
        self(f"  br i1 %empty{n}, label %done{n}, label %work{n}")
        self(f"done{n}:")
        self("  ret i32 0")
        self(f"work{n}:")


def _define(name: str, params: str, body: _Body) -> str:
    tail = [] if body.lines[-1].startswith("  ret ") else ["  ret i32 0"]
    return "\n".join([f"define i32 @{name}({params}) {{", "start:", *body.lines, *tail, "}", ""])


def _launch_dims(b: _Body, names: tuple[str, ...]) -> tuple[list[str], str]:
    """Truncate i64 dimensions to u32, failing with CUDA_ERROR_INVALID_VALUE when one does not
    fit (the driver then never sees a wrapped-around value)."""
    n = next(b.counter)
    b(f"  %hi{n}.0 = or i64 0, 0")
    for i, dim in enumerate(names):
        b(f"  %hi{n}.{i + 1} = or i64 %hi{n}.{i}, %{dim}")
    b(f"  %wide{n} = lshr i64 %hi{n}.{len(names)}, 32")
    b(f"  %toobig{n} = icmp eq i64 %wide{n}, 0")
    b(f"  %dimstatus{n} = select i1 %toobig{n}, i32 0, i32 {CUDA_ERROR_INVALID_VALUE}")
    out = []
    for dim in names:
        b(f"  %{dim}.32 = trunc i64 %{dim} to i32")
        out.append(f"i32 %{dim}.32")
    return out, f"%dimstatus{n}"


_LAUNCH_TAIL = "i32 %shared, ptr %stream, ptr %params, i64 %num_params"
_GRID_BLOCK = "i64 %gx, i64 %gy, i64 %gz, i64 %bx, i64 %by, i64 %bz"
_DIMS = ("gx", "gy", "gz", "bx", "by", "bz")


def _functions(prefix: str) -> list[str]:
    counter = itertools.count()
    out: list[str] = []

    def body() -> _Body:
        return _Body(prefix, counter)

    out.append(_rt_launch(body()))

    b = body()
    _, status = _launch_dims(b, (*_DIMS, "cx", "cy", "cz"))
    b.check(status, "cuLaunchKernelEx", "%function")
    s = b.stream()
    b(f"  %attr = alloca {_ATTR_TYPE}, align 8")
    b(f"  %config = alloca {_CONFIG_TYPE}, align 8")
    b(f"  store {_ATTR_TYPE} zeroinitializer, ptr %attr")
    b(f"  store i32 {CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION}, ptr %attr")
    for i, dim in enumerate(("cx", "cy", "cz")):
        b(f"  %attr.{dim} = getelementptr {_ATTR_TYPE}, ptr %attr, i32 0, i32 2, i32 {i}")
        b(f"  store i32 %{dim}.32, ptr %attr.{dim}")
    fields = [*(f"i32 %{d}.32" for d in _DIMS), "i32 %shared", f"ptr {s}", "ptr %attr", "i32 1"]
    for i, value in enumerate(fields):
        b(f"  %field{i} = getelementptr {_CONFIG_TYPE}, ptr %config, i32 0, i32 {i}")
        b(f"  store {value}, ptr %field{i}")
    b(f"  store ptr %function, ptr @{LAST_FUNCTION_GLOBAL}")
    b.call("cuLaunchKernelEx", "ptr %config, ptr %function, ptr %params, ptr null", "%function")
    out.append(_define("nova_rt_launch_cluster",
                       f"ptr %function, i64 %cx, i64 %cy, i64 %cz, {_GRID_BLOCK}, {_LAUNCH_TAIL}",
                       b))

    b = body()
    # A stream programs destroyed earlier is reused (cuStreamCreate costs several microseconds;
    # upstream's runtime pays it for every `gpu.wait async`).
    b("  %reused = call ptr @nova_streams_reuse()")
    b("  %have.reused = icmp ne ptr %reused, null")
    b("  br i1 %have.reused, label %recycled, label %fresh")
    b("fresh:")
    b.call("cuStreamCreate", f"ptr %out, i32 {CU_STREAM_NON_BLOCKING}")
    b("  br label %fork.start")
    b("recycled:")
    b("  store ptr %reused, ptr %out")
    b("  br label %fork.start")
    b("fork.start:")
    # Fork from the default stream: the new stream follows the work already enqueued there
    # (staging copies of arguments, the caller's async work), as upstream's legacy stream does.
    b("  %fork = alloca ptr, align 8")
    b.call("cuEventCreate", f"ptr %fork, i32 {CU_EVENT_DISABLE_TIMING}")
    b("  %fork.event = load ptr, ptr %fork")
    b("  %fork.stream = load ptr, ptr %out")
    b(f"  %fork.default = load ptr, ptr @{DEFAULT_STREAM_GLOBAL}")
    b.call("cuEventRecord", "ptr %fork.event, ptr %fork.default")
    b.call("cuStreamWaitEvent", "ptr %fork.stream, ptr %fork.event, i32 0")
    b.call("cuEventDestroy_v2", "ptr %fork.event")
    b("  %added = call i32 @nova_streams_add(ptr %fork.stream)")
    b("  %add.ok = icmp eq i32 %added, 0")
    b("  br i1 %add.ok, label %registered, label %add.failed")
    b("add.failed:")  # no host memory to track it: report, and give the stream back
    b("  call void @nova_cuda_fail(ptr @name.cuStreamCreate, i32 %added, ptr null)")
    b(f"  %dropped = call i32 @{b.prefix}cuStreamDestroy_v2(ptr %fork.stream)")
    b("  ret i32 1")
    b("registered:")
    out.append(_define("nova_rt_stream_create", "ptr %out", b))

    b = body()
    b.return_if_zero("%stream", "ptr")  # the default stream belongs to the executor
    b("  call void @nova_streams_remove(ptr %stream)")
    _recycle_or_destroy(b, "%stream")
    out.append(_define("nova_rt_stream_destroy", "ptr %stream", b))

    out.append(_streams_join(body()))

    b = body()
    b.call("cuStreamSynchronize", f"ptr {b.stream()}")
    out.append(_define("nova_rt_stream_synchronize", "ptr %stream", b))

    b = body()
    b.call("cuStreamWaitEvent", f"ptr {b.stream()}, ptr %event, i32 0")
    out.append(_define("nova_rt_stream_wait_event", "ptr %stream, ptr %event", b))

    b = body()
    b.call("cuEventCreate", f"ptr %out, i32 {CU_EVENT_DISABLE_TIMING}")
    out.append(_define("nova_rt_event_create", "ptr %out", b))

    b = body()
    b.call("cuEventDestroy_v2", "ptr %event")
    out.append(_define("nova_rt_event_destroy", "ptr %event", b))

    b = body()
    b.call("cuEventRecord", f"ptr %event, ptr {b.stream()}")
    out.append(_define("nova_rt_event_record", "ptr %event, ptr %stream", b))

    b = body()
    b.call("cuEventSynchronize", "ptr %event")
    out.append(_define("nova_rt_event_synchronize", "ptr %event", b))

    out.append(_mem_alloc(body(), body(), body()))
    out.append(_mem_free(body(), body()))

    b = body()
    b.return_if_zero("%size")
    b.call("cuMemcpyAsync", f"ptr %dst, ptr %src, i64 %size, ptr {b.stream()}")
    out.append(_define("nova_rt_memcpy", "ptr %dst, ptr %src, i64 %size, ptr %stream", b))

    for bits in (32, 16, 8):
        b = body()
        b.return_if_zero("%count")
        value = "%value" if bits == 32 else f"%value.{bits}"
        if bits != 32:
            b(f"  %value.{bits} = trunc i32 %value to i{bits}")
        b.call(f"cuMemsetD{bits}Async", f"ptr %dst, i{bits} {value}, i64 %count, "
               f"ptr {b.stream()}")
        out.append(_define(f"nova_rt_memset{bits}",
                           "ptr %dst, i32 %value, i64 %count, ptr %stream", b))

    b = body()
    b.return_if_zero("%size")
    b.call("cuMemHostRegister_v2", "ptr %pointer, i64 %size, i32 0")
    out.append(_define("nova_rt_host_register", "ptr %pointer, i64 %size", b))

    b = body()
    b.call("cuMemHostUnregister", "ptr %pointer")
    out.append(_define("nova_rt_host_unregister", "ptr %pointer", b))

    out.append(_make_current(body()))
    return out


MEM_POOL_GLOBAL = "nova_mem_pool"
"""The CUmemoryPool `gpu.alloc` draws from (the device's stream-ordered pool, whose release
threshold keeps freed memory cached); null: the device's default pool (cuMemAllocAsync)."""
RECLAIM_CALLBACK_GLOBAL = "nova_cuda_reclaim"
"""`i32 reclaim(stream)`, called only when an allocation from the pool ran out of memory: frees
what other allocators of the device cache (nonzero: retry the allocation once). Null: no retry."""


def _rt_launch(b: _Body) -> str:
    dims, status = _launch_dims(b, _DIMS)
    b.check(status, "cuLaunchKernel", "%function")
    s = b.stream()
    b(f"  store ptr %function, ptr @{LAST_FUNCTION_GLOBAL}")
    b.call("cuLaunchKernel", f"ptr %function, {', '.join(dims)}, i32 %shared, ptr {s}, "
           "ptr %params, ptr null", "%function")
    return _define("nova_rt_launch", f"ptr %function, {_GRID_BLOCK}, {_LAUNCH_TAIL}", b)


def _ensure_current(b: _Body) -> None:
    """Make `@nova_cuda_context` current on the calling thread unless it already is."""
    n = next(b.counter)
    b(f"  %current{n} = alloca ptr, align 8")
    b.call("cuCtxGetCurrent", f"ptr %current{n}")
    b(f"  %have{n} = load ptr, ptr %current{n}")
    b(f"  %want{n} = load ptr, ptr @{CONTEXT_GLOBAL}")
    b(f"  %same{n} = icmp eq ptr %have{n}, %want{n}")
    b(f"  br i1 %same{n}, label %current.ok{n}, label %switch{n}")
    b(f"switch{n}:")
    b.call("cuCtxSetCurrent", f"ptr %want{n}")
    b(f"  br label %current.ok{n}")
    b(f"current.ok{n}:")


def _launch_packed(b: _Body) -> str:
    _ensure_current(b)
    b("  br label %prepare")
    b("prepare:")
    b("  %function = load ptr, ptr %fixed, align 8")
    b("  %count.at = getelementptr i64, ptr %fixed, i64 1")
    b("  %count = load i64, ptr %count.at, align 8")
    for i, word in enumerate((*_DIMS, "shared")):
        b(f"  %{word}.at = getelementptr i64, ptr %header, i64 {i}")
        b(f"  %{word} = load i64, ptr %{word}.at, align 1")
    b("  %shared.32 = trunc i64 %shared to i32")
    b("  %array = alloca ptr, i64 %count, align 8")
    b("  br label %fill")
    b("fill:")
    b("  %i = phi i64 [0, %prepare], [%i.next, %fill.one]")
    b("  %more = icmp ult i64 %i, %count")
    b("  br i1 %more, label %fill.one, label %filled")
    b("fill.one:")
    b("  %slot = getelementptr i64, ptr %slots, i64 %i")
    b("  %entry = getelementptr ptr, ptr %array, i64 %i")
    b("  store ptr %slot, ptr %entry, align 8")
    b("  %i.next = add i64 %i, 1")
    b("  br label %fill")
    b("filled:")
    b("  %none = icmp eq i64 %count, 0")
    b("  %params = select i1 %none, ptr null, ptr %array")
    dims = ", ".join(f"i64 %{d}" for d in _DIMS)
    b(f"  %status = call i32 @nova_rt_launch(ptr %function, {dims}, i32 %shared.32, "
      "ptr %stream, ptr %params, i64 %count)")
    b("  ret i32 %status")
    return _define(LAUNCH_PACKED, "ptr %fixed, ptr %header, ptr %stream, ptr %slots", b)


def _mem_alloc(b: _Body, follow: _Body, direct: _Body) -> str:
    """`nova_rt_mem_alloc` (through the block cache, `native_blocks`), `ALLOC_DIRECT` (the
    same without it, for graph captures) and the helper they share."""
    return "\n".join([f"@{MEM_POOL_GLOBAL} = global ptr null",
                      f"@{RECLAIM_CALLBACK_GLOBAL} = global ptr null",
                      _streams_follow(follow),
                      _define("nova_rt_mem_alloc",
                              "ptr %out, i64 %size, ptr %stream, i32 %host_shared",
                              _alloc_body(b, cached=True)),
                      _define(ALLOC_DIRECT, "ptr %out, i64 %size, ptr %stream, i32 %host_shared",
                              _alloc_body(direct, cached=False))])


def _alloc_body(b: _Body, cached: bool) -> _Body:
    """Stream-ordered allocation from the device's pool, never waiting: memory freed on a
    stream is reused by later allocations ordered after the free (the driver's pool tracks
    that, across streams too; with `cached`, a block the block cache holds for this stream and
    size is taken first, without a driver call, and a new block is tracked). Out of memory:
    flush the block cache, reclaim, then one retry. An allocation on the null stream (a
    synchronous `gpu.alloc`) is also ordered before the thread's open streams' later work
    (`nova_streams_follow`), as a host synchronization used to do."""
    b("  store ptr null, ptr %out")  # a zero-byte allocation is the null pointer
    b.return_if_zero("%size")
    b("  %is.shared = icmp ne i32 %host_shared, 0")
    b("  br i1 %is.shared, label %managed, label %ordered")
    b("managed:")
    b.call("cuMemAllocManaged", f"ptr %out, i64 %size, i32 {CU_MEM_ATTACH_GLOBAL}")
    b("  ret i32 0")
    b("ordered:")
    s = b.stream()
    if cached:
        b(f"  %reused = call ptr @nova_blocks_take(i64 %size, ptr {s})")
        b("  %have.reused = icmp ne ptr %reused, null")
        b("  br i1 %have.reused, label %reuse, label %from.driver")
        b("reuse:")
        b("  store ptr %reused, ptr %out")
        b("  br label %allocated")
        b("from.driver:")
    b(f"  %pool = load ptr, ptr @{MEM_POOL_GLOBAL}")
    b("  %have.pool = icmp ne ptr %pool, null")
    b("  br i1 %have.pool, label %from.pool, label %default.pool")
    b("default.pool:")
    b.call("cuMemAllocAsync", f"ptr %out, i64 %size, ptr {s}")
    b("  br label %fresh")
    b("from.pool:")
    args = f"ptr %out, i64 %size, ptr %pool, ptr {s}"
    b(f"  %first = call i32 @{b.prefix}cuMemAllocFromPoolAsync({args})")
    b(f"  %out.of.memory = icmp eq i32 %first, {CUDA_ERROR_OUT_OF_MEMORY}")
    b(f"  %reclaim.fn = load ptr, ptr @{RECLAIM_CALLBACK_GLOBAL}")
    b("  %can.reclaim = icmp ne ptr %reclaim.fn, null")
    b("  %try.reclaim = and i1 %out.of.memory, %can.reclaim")
    b("  br i1 %try.reclaim, label %reclaiming, label %first.result")
    b("reclaiming:")
    # cached blocks back to the driver first: the reclaim synchronizes and trims after it
    b(f"  %flushed = call i32 @{FLUSH_BLOCKS}(ptr null)")
    b(f"  %reclaimed = call i32 %reclaim.fn(ptr {s})")
    b("  %retry = icmp ne i32 %reclaimed, 0")
    b("  br i1 %retry, label %second.try, label %first.result")
    b("second.try:")
    b.call("cuMemAllocFromPoolAsync", args)
    b("  br label %fresh")
    b("first.result:")
    b.check("%first", "cuMemAllocFromPoolAsync")
    b("  br label %fresh")
    b("fresh:")
    if cached:
        b("  %block = load ptr, ptr %out")
        b("  call void @nova_blocks_track(ptr %block, i64 %size)")
    b("  br label %allocated")
    b("allocated:")
    b("  %on.null = icmp eq ptr %stream, null")
    b("  br i1 %on.null, label %publish, label %finished")
    b("publish:")
    b(f"  %followed = call i32 @nova_streams_follow(ptr {s})")
    b("  %follow.ok = icmp eq i32 %followed, 0")
    b("  br i1 %follow.ok, label %finished, label %unwind")
    b("unwind:")  # the failure is reported; the caller raises and never sees the pointer
    b("  %orphan = load ptr, ptr %out")
    b(f"  %untracked = call i32 @nova_blocks_free(ptr %orphan, ptr {s}, i1 0)")
    b(f"  %orphan.freed = call i32 @{b.prefix}cuMemFreeAsync(ptr %orphan, ptr {s})")
    b("  store ptr null, ptr %out")
    b("  ret i32 1")
    b("finished:")
    b("  ret i32 0")
    return b


def _streams_follow(b: _Body) -> str:
    """`nova_streams_follow(source)`: every stream the calling thread's program has open waits
    for the work enqueued so far on `source` (one event; nothing when no stream is open)."""
    b(f"  %open = load atomic i64, ptr @{OPEN_COUNT_GLOBAL} monotonic, align 8")
    b("  %none.open = icmp eq i64 %open, 0")
    b("  br i1 %none.open, label %nothing, label %some")
    b("nothing:")
    b("  ret i32 0")
    b("some:")
    b("  %event.slot = alloca ptr, align 8")
    b.call("cuEventCreate", f"ptr %event.slot, i32 {CU_EVENT_DISABLE_TIMING}")
    b("  %event = load ptr, ptr %event.slot")
    b(f"  %recorded = call i32 @{b.prefix}cuEventRecord(ptr %event, ptr %source)")
    b("  %record.ok = icmp eq i32 %recorded, 0")
    b("  br i1 %record.ok, label %record.done, label %record.failed")
    b("record.failed:")
    b(f"  %dropped = call i32 @{b.prefix}cuEventDestroy_v2(ptr %event)")
    b.check("%recorded", "cuEventRecord")
    b("  ret i32 1")  # (check returned already: the status was nonzero)
    b("record.done:")
    b("  %thread = call i64 @pthread_self()")
    b("  call void @nova_streams_lock()")  # the driver calls below cannot fail out of the loop
    b(f"  %count = load i64, ptr @{OPEN_COUNT_GLOBAL}")
    b("  %array = load ptr, ptr @nova_open_streams")
    b("  br label %scan")
    b("scan:")
    b("  br label %loop")
    b("loop:")
    b("  %i = phi i64 [0, %scan], [%i.next, %next]")
    b("  %status = phi i32 [0, %scan], [%status.next, %next]")
    b("  %end = icmp eq i64 %i, %count")
    b("  br i1 %end, label %scanned, label %test")
    b("test:")
    b("  %owner.slot = getelementptr {ptr, i64}, ptr %array, i64 %i, i32 1")
    b("  %owner = load i64, ptr %owner.slot")
    b("  %mine = icmp eq i64 %owner, %thread")
    b("  br i1 %mine, label %wait, label %next")
    b("wait:")
    b("  %stream.slot = getelementptr {ptr, i64}, ptr %array, i64 %i, i32 0")
    b("  %open.stream = load ptr, ptr %stream.slot")
    b(f"  %waited = call i32 @{b.prefix}cuStreamWaitEvent(ptr %open.stream, ptr %event, i32 0)")
    b("  %no.failure.yet = icmp eq i32 %status, 0")
    b("  %status.wait = select i1 %no.failure.yet, i32 %waited, i32 %status")
    b("  br label %next")
    b("next:")
    b("  %status.next = phi i32 [%status, %test], [%status.wait, %wait]")
    b("  %i.next = add i64 %i, 1")
    b("  br label %loop")
    b("scanned:")
    b("  call void @nova_streams_unlock()")
    b("  %destroyed = call i32 @" + b.prefix + "cuEventDestroy_v2(ptr %event)")
    b.check("%status", "cuStreamWaitEvent")
    b.check("%destroyed", "cuEventDestroy_v2")
    return _define("nova_streams_follow", "ptr %source", b).replace(
        "define i32 @nova_streams_follow", "define internal i32 @nova_streams_follow")


def _mem_free(b: _Body, direct: _Body) -> str:
    """`nova_rt_mem_free` (through the block cache) and `FREE_DIRECT` (without it)."""
    return "\n".join([_define("nova_rt_mem_free", "ptr %pointer, ptr %stream",
                              _free_body(b, keep=True)),
                      _define(FREE_DIRECT, "ptr %pointer, ptr %stream",
                              _free_body(direct, keep=False))])


def _free_body(b: _Body, keep: bool) -> _Body:
    """Stream-ordered free. A block the block cache tracks is known to be stream-ordered
    memory: with `keep` it is cached for this stream (no driver call), else (or when the cache
    is full) freed with cuMemFreeAsync. Any other pointer is asked about (managed memory, not
    from a stream-ordered pool, is freed after the stream drained, with cuMemFree)."""
    b.return_if_zero("%pointer", "ptr")
    s = b.stream()
    b(f"  %known = call i32 @nova_blocks_free(ptr %pointer, ptr {s}, i1 {int(keep)})")
    b("  switch i32 %known, label %ask [i32 1, label %kept i32 2, label %ordered "
      "i32 3, label %twice]")
    b("kept:")
    b("  ret i32 0")
    b("twice:")  # a cached block freed again: the error the driver gives a second free
    b(f"  call void @nova_cuda_fail(ptr @name.cuMemFreeAsync, i32 {CUDA_ERROR_INVALID_VALUE}, "
      "ptr null)")
    b("  ret i32 1")
    b("ask:")
    b("  %managed.flag = alloca i32, align 4")
    b("  store i32 0, ptr %managed.flag")
    b.call("cuPointerGetAttribute",
           f"ptr %managed.flag, i32 {CU_POINTER_ATTRIBUTE_IS_MANAGED}, ptr %pointer")
    b("  %managed.value = load i32, ptr %managed.flag")
    b("  %is.managed = icmp ne i32 %managed.value, 0")
    b("  br i1 %is.managed, label %managed, label %ordered")
    b("managed:")
    b.call("cuStreamSynchronize", f"ptr {s}")
    b.call("cuMemFree_v2", "ptr %pointer")
    b("  ret i32 0")
    b("ordered:")
    b.call("cuMemFreeAsync", f"ptr %pointer, ptr {s}")
    return b


def _make_current(b: _Body) -> str:
    b("  %current = alloca ptr, align 8")
    b.call("cuCtxGetCurrent", "ptr %current")
    b("  %have = load ptr, ptr %current")
    b(f"  %want = load ptr, ptr @{CONTEXT_GLOBAL}")
    b("  %same = icmp eq ptr %have, %want")
    b("  br i1 %same, label %run, label %switch")
    b("switch:")
    b.call("cuCtxSetCurrent", "ptr %want")
    b("  br label %run")
    b("run:")
    b("  %status = call i32 @nova_rt_call_entry(ptr %entry, ptr %args, ptr %results)")
    b(f"  %open = load atomic i64, ptr @{OPEN_COUNT_GLOBAL} monotonic, align 8")
    b("  %any.open = icmp ne i64 %open, 0")
    b("  br i1 %any.open, label %join, label %exit")
    b("join:")
    b("  %joined = call i32 @nova_streams_join()")
    b("  %entry.failed = icmp ne i32 %status, 0")
    b("  %final = select i1 %entry.failed, i32 %status, i32 %joined")
    b("  ret i32 %final")
    b("exit:")
    b("  ret i32 %status")
    return _define(CALL_ENTRY, "ptr %entry, ptr %args, ptr %results", b)


def _recycle_or_destroy(b: _Body, stream: str) -> None:
    """Keep a stream the program is done with for reuse (up to FREE_STREAMS), else destroy it.
    A kept stream may still have queued work: whoever reuses it forks it from the default stream
    first, and in-order execution puts its new work after the old."""
    n = next(b.counter)
    b(f"  %kept{n} = call i1 @nova_streams_recycle(ptr {stream})")
    b(f"  br i1 %kept{n}, label %recycled{n}, label %destroy{n}")
    b(f"destroy{n}:")
    # blocks cached for the stream go back first: a later stream may get the same handle value
    b(f"  %flushed{n} = call i32 @{FLUSH_BLOCKS}(ptr {stream})")
    b.check(f"%flushed{n}", "cuMemFreeAsync")
    b.call("cuStreamDestroy_v2", f"ptr {stream}")
    b(f"  br label %recycled{n}")
    b(f"recycled{n}:")


def _streams_join(b: _Body) -> str:
    """`nova_streams_join()`: every stream this thread's program created and did not destroy
    (an async token never waited) joins the default stream (an event recorded on it, waited for
    by the default stream) and is destroyed; CUDA releases a destroyed stream once its queued
    work is done. The call is then stream-ordered like any other: later work on the default
    stream, and a synchronize, come after the work left in flight."""
    b("  %event.slot = alloca ptr, align 8")
    b("  br label %next")
    b("next:")
    b("  %stream = call ptr @nova_streams_take()")
    b("  %none = icmp eq ptr %stream, null")
    b("  br i1 %none, label %all.joined, label %join.one")
    b("join.one:")
    b.call("cuEventCreate", f"ptr %event.slot, i32 {CU_EVENT_DISABLE_TIMING}")
    b("  %event = load ptr, ptr %event.slot")
    b.call("cuEventRecord", "ptr %event, ptr %stream")
    b(f"  %default = load ptr, ptr @{DEFAULT_STREAM_GLOBAL}")
    b.call("cuStreamWaitEvent", "ptr %default, ptr %event, i32 0")
    b.call("cuEventDestroy_v2", "ptr %event")
    _recycle_or_destroy(b, "%stream")
    b("  br label %next")
    b("all.joined:")
    b("  ret i32 0")
    return _define("nova_streams_join", "", b)


_REGISTRY_IR = f"""
@{OPEN_COUNT_GLOBAL} = global i64 0
@nova_open_streams = global ptr null
@nova_open_capacity = global i64 0
{spinlock_ir("nova_open_lock", "nova_streams_lock", "nova_streams_unlock")}
declare ptr @realloc(ptr, i64)
declare i64 @pthread_self()


; entries are {{stream, pthread_self of the creating thread}} pairs, unordered
define internal i32 @nova_streams_add(ptr %stream) {{
entry:
  %thread = call i64 @pthread_self()
  call void @nova_streams_lock()
  %count = load i64, ptr @{OPEN_COUNT_GLOBAL}
  %capacity = load i64, ptr @nova_open_capacity
  %full = icmp eq i64 %count, %capacity
  br i1 %full, label %grow, label %store
grow:
  %empty = icmp eq i64 %capacity, 0
  %twice = shl i64 %capacity, 1
  %grown.capacity = select i1 %empty, i64 16, i64 %twice
  %bytes = mul i64 %grown.capacity, 16
  %old = load ptr, ptr @nova_open_streams
  %new = call ptr @realloc(ptr %old, i64 %bytes)
  %failed = icmp eq ptr %new, null
  br i1 %failed, label %out.of.memory, label %grown
out.of.memory:
  call void @nova_streams_unlock()
  ret i32 {CUDA_ERROR_OUT_OF_MEMORY}
grown:
  store ptr %new, ptr @nova_open_streams
  store i64 %grown.capacity, ptr @nova_open_capacity
  br label %store
store:
  %array = load ptr, ptr @nova_open_streams
  %slot = getelementptr {{ptr, i64}}, ptr %array, i64 %count
  store ptr %stream, ptr %slot
  %owner = getelementptr {{ptr, i64}}, ptr %array, i64 %count, i32 1
  store i64 %thread, ptr %owner
  %next = add i64 %count, 1
  store atomic i64 %next, ptr @{OPEN_COUNT_GLOBAL} monotonic, align 8
  call void @nova_streams_unlock()
  ret i32 0
}}

@nova_free_streams = global [{FREE_STREAMS} x ptr] zeroinitializer
@nova_free_count = global i64 0

; a stream to reuse, or null
define internal ptr @nova_streams_reuse() {{
entry:
  call void @nova_streams_lock()
  %count = load i64, ptr @nova_free_count
  %empty = icmp eq i64 %count, 0
  br i1 %empty, label %none, label %take
take:
  %last = sub i64 %count, 1
  %slot = getelementptr [{FREE_STREAMS} x ptr], ptr @nova_free_streams, i64 0, i64 %last
  %stream = load ptr, ptr %slot
  store i64 %last, ptr @nova_free_count
  call void @nova_streams_unlock()
  ret ptr %stream
none:
  call void @nova_streams_unlock()
  ret ptr null
}}

; keep `stream` for reuse unless the free list is full (then the caller destroys it)
define internal i1 @nova_streams_recycle(ptr %stream) {{
entry:
  call void @nova_streams_lock()
  %count = load i64, ptr @nova_free_count
  %full = icmp eq i64 %count, {FREE_STREAMS}
  br i1 %full, label %no, label %keep
keep:
  %slot = getelementptr [{FREE_STREAMS} x ptr], ptr @nova_free_streams, i64 0, i64 %count
  store ptr %stream, ptr %slot
  %next = add i64 %count, 1
  store i64 %next, ptr @nova_free_count
  call void @nova_streams_unlock()
  ret i1 1
no:
  call void @nova_streams_unlock()
  ret i1 0
}}

; remove entry `index` (the last one moves into its place); the lock is held
define internal void @nova_streams_drop(ptr %array, i64 %index, i64 %count) {{
entry:
  %last = sub i64 %count, 1
  %from = getelementptr {{ptr, i64}}, ptr %array, i64 %last
  %to = getelementptr {{ptr, i64}}, ptr %array, i64 %index
  %moved = load {{ptr, i64}}, ptr %from
  store {{ptr, i64}} %moved, ptr %to
  store atomic i64 %last, ptr @{OPEN_COUNT_GLOBAL} monotonic, align 8
  ret void
}}

; the index of the first entry whose field `field` (0: the stream, 1: its owner thread) equals
; `key`, or `count` when there is none; the lock is held
define internal i64 @nova_streams_find(ptr %array, i64 %count, i32 %field, i64 %key) {{
entry:
  %by.owner = icmp eq i32 %field, 1
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %miss]
  %end = icmp eq i64 %i, %count
  br i1 %end, label %done, label %test
test:
  %stream.slot = getelementptr {{ptr, i64}}, ptr %array, i64 %i, i32 0
  %owner.slot = getelementptr {{ptr, i64}}, ptr %array, i64 %i, i32 1
  %slot = select i1 %by.owner, ptr %owner.slot, ptr %stream.slot
  %value = load i64, ptr %slot
  %hit = icmp eq i64 %value, %key
  br i1 %hit, label %done, label %miss
miss:
  %i.next = add i64 %i, 1
  br label %loop
done:
  %found = phi i64 [%count, %loop], [%i, %test]
  ret i64 %found
}}

define internal void @nova_streams_remove(ptr %stream) {{
entry:
  %key = ptrtoint ptr %stream to i64
  call void @nova_streams_lock()
  %count = load i64, ptr @{OPEN_COUNT_GLOBAL}
  %array = load ptr, ptr @nova_open_streams
  %i = call i64 @nova_streams_find(ptr %array, i64 %count, i32 0, i64 %key)
  %found = icmp ne i64 %i, %count
  br i1 %found, label %drop, label %done
drop:
  call void @nova_streams_drop(ptr %array, i64 %i, i64 %count)
  br label %done
done:
  call void @nova_streams_unlock()
  ret void
}}

; not the program's to join: a graph capture tracks the streams it creates itself
define void @{FORGET_STREAM}(ptr %stream) {{
entry:
  call void @nova_streams_remove(ptr %stream)
  ret void
}}

; take (remove and return) one open stream of the calling thread; null when it has none
define internal ptr @nova_streams_take() {{
entry:
  %thread = call i64 @pthread_self()
  call void @nova_streams_lock()
  %count = load i64, ptr @{OPEN_COUNT_GLOBAL}
  %array = load ptr, ptr @nova_open_streams
  %i = call i64 @nova_streams_find(ptr %array, i64 %count, i32 1, i64 %thread)
  %found = icmp ne i64 %i, %count
  br i1 %found, label %take, label %none
take:
  %slot = getelementptr {{ptr, i64}}, ptr %array, i64 %i
  %stream = load ptr, ptr %slot
  call void @nova_streams_drop(ptr %array, i64 %i, i64 %count)
  call void @nova_streams_unlock()
  ret ptr %stream
none:
  call void @nova_streams_unlock()
  ret ptr null
}}
"""


_HELPERS_IR = [
    "define internal void @nova_cuda_fail(ptr %call, i32 %result, ptr %function) noinline {",
    "entry:",
    f"  %callback = load ptr, ptr @{ERROR_CALLBACK_GLOBAL}",
    "  call void %callback(ptr %call, i32 %result, ptr %function)",
    "  ret void",
    "}",
    "define internal ptr @nova_cuda_stream(ptr %stream) alwaysinline {",
    "entry:",
    "  %none = icmp eq ptr %stream, null",
    f"  %default = load ptr, ptr @{DEFAULT_STREAM_GLOBAL}",
    "  %chosen = select i1 %none, ptr %default, ptr %stream",
    "  ret ptr %chosen",
    "}",
    "",
]


def _head(prefix: str, driver: list[str]) -> list[str]:
    """The globals every module defines and the declarations of the `driver` functions."""
    head = [
        f"@{ERROR_CALLBACK_GLOBAL} = global ptr null",
        f"@{DEFAULT_STREAM_GLOBAL} = global ptr null",
        f"@{CONTEXT_GLOBAL} = global ptr null",
        f"@{LAST_FUNCTION_GLOBAL} = global ptr null",
    ]
    for name in driver:
        result, params = DRIVER_FUNCTIONS[name].split(" ", 1)
        head.append(f"declare {result} @{prefix}{name}{params}")
        text = name.encode()
        head.append(f'@name.{name} = private unnamed_addr constant [{len(text) + 1} x i8] '
                    f'c"{name}\\00"')
    return head


def native_ir(prefix: str = "") -> str:
    """The LLVM IR module implementing the native part of the cuda ABI."""
    head = _head(prefix, list(DRIVER_FUNCTIONS))
    head += ["declare i32 @nova_rt_call_entry(ptr, ptr, ptr)", _REGISTRY_IR,
             blocks_ir(prefix), *_HELPERS_IR]
    return "\n".join(head) + "\n".join(_functions(prefix))


LAUNCH_DRIVER_FUNCTIONS = ["cuCtxGetCurrent", "cuCtxSetCurrent", "cuLaunchKernel"]
"""The driver entry points `launch_ir`'s module calls."""


def launch_ir(prefix: str = "") -> str:
    """A small module for Python kernels' launches alone: `nova_rt_launch`, `LAUNCH_PACKED`
    (the same code as in `native_ir`'s module, with its own globals) and the Python-callable
    `PY_LAUNCH` over it (nova.runtime.cuda.py_launch) and `PY_CHECKED`, a prepared launch's
    checks and launch in one builtin (nova.runtime.cuda.py_checked). Small, so that the first
    launch of a process compiles it in milliseconds (the whole ABI module takes far longer)."""
    counter = itertools.count()
    head = [*_head(prefix, LAUNCH_DRIVER_FUNCTIONS), *_HELPERS_IR]
    body = [_rt_launch(_Body(prefix, counter)), _launch_packed(_Body(prefix, counter)),
            py_launch_ir(LAUNCH_PACKED), py_checked_ir(LAUNCH_PACKED)]
    return "\n".join(head) + "\n".join(body)


NATIVE_ABI_NAMES: tuple[str, ...] = (
    "nova_rt_launch", "nova_rt_launch_cluster", "nova_rt_stream_create",
    "nova_rt_stream_destroy", "nova_rt_stream_synchronize", "nova_rt_stream_wait_event",
    "nova_rt_event_create", "nova_rt_event_destroy", "nova_rt_event_record",
    "nova_rt_event_synchronize", "nova_rt_mem_alloc", "nova_rt_mem_free", "nova_rt_memcpy",
    "nova_rt_memset32", "nova_rt_memset16", "nova_rt_memset8", "nova_rt_host_register",
    "nova_rt_host_unregister",
)
"""The ABI functions this module defines natively (the rest are Python callbacks)."""

"""The cpu device's implementation of the runtime ABI: ctypes callbacks onto `CpuDevice`.

One `CpuAbi` per loaded program: its callbacks close over the program's manifest (kernel
parameter sizes for launches) and its handle tables, so two programs never share state. Handles
given to host code are small integers (never Python object addresses); device pointers are real
host addresses, since cpu device memory is host memory. Every callback catches every exception:
nothing may propagate through C frames, so a failure is recorded in the error slot and the
callback returns a nonzero status (host code then calls `nova_rt_raise`).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import threading
from _ctypes import CFuncPtr
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from nova.abi import ABI_BY_NAME, AnyPlan, DeviceModuleDescriptor, library_plans
from nova.bundle.format import Kernel, Manifest
from nova.errors import KernelFault, NovaError, RuntimeFailure
from nova.runtime.cpu import fault_guard
from nova.runtime.cpu.fault_record import FaultRecord, describe_host_fault
from nova.runtime.device import Device, DeviceFunction, DeviceModule, ModuleImages
from nova.runtime.memory import Buffer
from nova.runtime.native_support import (
    call_entry_function,
    guarded_callback,
    record_error,
    unwind_key,
    unwind_symbols,
)
from nova.runtime.pool import Block, MemoryPool
from nova.runtime.results import ResultMemory
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

CPU_ABI_NAMES: tuple[str, ...] = (
    "nova_rt_module_load", "nova_rt_module_get_function", "nova_rt_launch",
    "nova_rt_launch_cluster", "nova_rt_stream_create", "nova_rt_stream_destroy",
    "nova_rt_stream_synchronize", "nova_rt_stream_wait_event", "nova_rt_event_create",
    "nova_rt_event_destroy", "nova_rt_event_record", "nova_rt_event_synchronize",
    "nova_rt_mem_alloc", "nova_rt_mem_free", "nova_rt_memcpy", "nova_rt_memset32",
    "nova_rt_memset16", "nova_rt_memset8", "nova_rt_host_register", "nova_rt_host_unregister",
    "nova_rt_library_plan", "nova_rt_library_call",
)


FREE_STREAMS = 16
"""How many streams a program is done with the cpu ABI keeps for reuse."""


class _OrderedAllocation:
    """A stream-ordered `nova_rt_mem_alloc` block: the device pool's block and the stream it
    was allocated on. Lighter than a Buffer (no finalizer, shape or dtype), which is most of
    what an allocate/free pair cost in Python; the program frees it, or close() does, or the
    caller it is returned to (`take_allocation`)."""

    __slots__ = ("block", "freed", "pool", "stream")

    def __init__(self, block: Block, stream: Stream, pool: MemoryPool) -> None:
        self.block = block
        self.stream = stream
        self.pool = pool
        self.freed = False

    def free(self, used_on: Stream | None = None) -> None:
        """Back to the pool (once): cached for its stream at once; when `used_on` (another
        stream) may still use it, only once that stream's work so far has completed."""
        if self.freed:
            return
        self.freed = True
        # never raises (as a Buffer's finalizer): a failed event record keeps the block back
        with contextlib.suppress(Exception):
            after = () if used_on is None or used_on is self.stream else (used_on.record(),)
            self.pool.release(self.block, after)


def _store_pointer(out: int | None, value: int) -> None:
    if not out:
        raise RuntimeFailure("null out-pointer passed to the runtime")
    ctypes.c_void_p.from_address(out).value = value or None


def _span(array: np.ndarray) -> tuple[int, int]:
    """[low, high) byte offsets, from the array's data pointer, of the memory it spans."""
    if array.size == 0:
        return 0, 0
    low = sum(min(0, (n - 1) * st) for n, st in zip(array.shape, array.strides, strict=True))
    high = sum(max(0, (n - 1) * st) for n, st in zip(array.shape, array.strides, strict=True))
    return low, high + array.itemsize


class CpuAbi:
    """Runtime ABI callbacks of one program on the cpu device."""

    def __init__(self, device: Device, manifest: Manifest) -> None:
        self.device = device
        self.manifest = manifest
        self._ids = itertools.count(1)
        self._modules: dict[int, tuple[DeviceModule, tuple[Kernel, ...]]] = {}
        self._functions: dict[int, DeviceFunction] = {}
        self._streams: dict[int, Stream] = {}
        self._events: dict[int, Event] = {}
        self._allocations: dict[int, Buffer | _OrderedAllocation] = {}
        self._idle_blocks: set[int] = set()  # allocations from _allocate_idle
        self._module_handles: dict[int, int] = {}  # descriptor address -> handle
        self._function_handles: dict[tuple[int, str], int] = {}
        self._plans: dict[int, AnyPlan] = {}  # handle -> plan
        self._plan_handles: dict[int, int] = {}  # manifest index -> handle
        self._callbacks: dict[str, CFuncPtr] = {
            name: ABI_BY_NAME[name].ctypes_prototype()(fault_guard.outside_guard(
                guarded_callback(name, getattr(self, "_" + name.removeprefix("nova_rt_")))))
            for name in CPU_ABI_NAMES
        }
        self._call_native = call_entry_function()
        self._guard = fault_guard.guard()
        self._call_entry_address = unwind_symbols()["nova_rt_call_entry"]
        self._unwind_key = unwind_key()
        self._heap = getattr(device, "host_heap", None)  # the cpu device's; a test double: none
        # Stream bookkeeping, shared by every thread calling this program: guarded by _lock,
        # which is never held across blocking stream work (close drains, synchronize waits).
        self._lock = threading.Lock()
        self._owners: dict[int, int] = {}  # stream handle -> thread that created it
        self._retired: list[Stream] = []  # joined at an entry's exit, recycled once idle
        self._free: list[Stream] = []  # streams the program is done with, kept for reuse

    def call_entry(self, entry: int, args: object, results: object) -> int:
        """Run an entry (`nova_rt_call_entry`); then join the streams it left open (see
        `_join_open_streams`). Returns the entry's status, or 1 if only the join failed."""
        status = self._call_guarded(entry, args, results)
        if self._streams:  # a hint read without the lock; the join takes it
            try:
                self._join_open_streams()
            except Exception as exc:  # never lose the call's staged arrays to an exception
                record_error(exc if isinstance(exc, NovaError) else RuntimeFailure(
                    f"joining the streams the call left open failed: {exc}"))
                status = status or 1
        return status

    def _call_guarded(self, entry: int, args: object, results: object) -> int:
        """`nova_rt_call_entry` under the fault guard: a fault in host code (an out-of-bounds
        store into the guard around a buffer) is recorded as a KernelFault and the call fails
        with status 1, instead of killing the process."""
        if self._guard is None:
            return int(self._call_native(entry, args, results))
        record = FaultRecord()
        status = int(self._guard.entry(self._call_entry_address, entry, args, results,
                                       ctypes.addressof(record), self._unwind_key))
        if status != fault_guard.FAULT_STATUS:
            return status
        explain = getattr(self.device, "explain_address", lambda address: None)
        record_error(KernelFault(describe_host_fault(record, explain)))
        return 1

    def _join_open_streams(self) -> None:
        """Streams this thread's call created and did not destroy (async tokens never waited):
        the default stream waits for each (an event), so the call is stream-ordered like any
        other and the work left in flight comes before later default-stream work and a
        synchronize. They are recycled once idle (a later join, synchronize or close), so a
        fault in their work is still reported by the program's next synchronize."""
        me = threading.get_ident()
        with self._lock:
            mine = [h for h, owner in self._owners.items() if owner == me]
            streams = [self._streams.pop(h) for h in mine]
            for h in mine:
                del self._owners[h]
        default = self.device.default_stream
        for stream in streams:
            event = self.device.create_event()
            event.record(stream)
            default.wait(event)
            event.close()
        with self._lock:
            self._retired.extend(streams)
            done = [s for s in self._retired
                    if s.query() and not s._pending_error()]  # type: ignore[attr-defined]
            self._retired = [s for s in self._retired if s not in done]
            surplus = self._keep(done)
        for stream in surplus:
            stream.close()

    def _reusable(self) -> Stream | None:
        """A stream to reuse: a free one, else the oldest retired one even if its work is still
        running (in-order execution puts the new work after it; a fault in it is then raised
        where the program next waits for this stream, or by the join and synchronize after)."""
        with self._lock:
            if self._free:
                return self._free.pop()
            if self._retired:
                return self._retired.pop(0)
            return None

    def _keep(self, streams: list[Stream]) -> list[Stream]:
        """Keep streams for reuse (a cpu stream is a worker thread: starting one costs far more
        than a launch), up to FREE_STREAMS; returns the rest, for the caller to close outside
        the lock. Called with the lock held."""
        surplus = []
        for stream in streams:
            if len(self._free) < FREE_STREAMS and not stream.closed:
                self._free.append(stream)
            else:
                surplus.append(stream)
        return surplus

    def symbols(self) -> dict[str, int]:
        """ABI name -> callback address (valid while this object lives)."""
        heap = self._heap.symbols() if self._heap is not None else {}
        return heap | {n: ctypes.cast(cb, ctypes.c_void_p).value or 0
                       for n, cb in self._callbacks.items()}

    # --- handles -----------------------------------------------------------------------------
    def _new_handle(self) -> int:
        return next(self._ids)

    def _stream(self, handle: int | None) -> Stream:
        if not handle:
            return self.device.default_stream
        stream = self._streams.get(handle)
        if stream is None:
            raise RuntimeFailure(f"invalid stream handle {handle:#x}")
        return stream

    def _event(self, handle: int | None) -> Event:
        event = self._events.get(handle or 0)
        if event is None:
            raise RuntimeFailure(f"invalid event handle {handle or 0:#x}")
        return event

    def _launched_function(self, handle: int | None, num_params: int) -> DeviceFunction:
        """The function a launch names, with the parameter count host code passed checked."""
        fn = self._function(handle)
        if fn.kernel is not None and num_params != len(fn.kernel.params):
            raise RuntimeFailure(f"launch of @{fn.name}: {num_params} parameters passed, the "
                                 f"kernel takes {len(fn.kernel.params)}")
        return fn

    def _function(self, handle: int | None) -> DeviceFunction:
        function = self._functions.get(handle or 0)
        if function is None:
            raise RuntimeFailure(f"invalid kernel handle {handle or 0:#x}")
        return function

    # --- modules and launches ----------------------------------------------------------------
    def _module_load(self, out: int, descriptor: int) -> None:
        if not descriptor:
            raise RuntimeFailure("nova_rt_module_load: null module descriptor")
        cached = self._module_handles.get(descriptor)
        if cached is not None:  # host code caches handles too; this keeps repeats cheap
            _store_pointer(out, cached)
            return
        desc = DeviceModuleDescriptor.from_address(descriptor)
        images = ModuleImages.from_descriptor(desc, self.manifest.arch)
        module = self.device.load_module(images)
        listed = next((m for m in self.manifest.modules if m.name == images.name), None)
        handle = self._new_handle()
        self._modules[handle] = (module, listed.kernels if listed else ())
        self._module_handles[descriptor] = handle
        _store_pointer(out, handle)

    def _module_get_function(self, out: int, module: int, name: int) -> None:
        entry = self._modules.get(module or 0)
        if entry is None:
            raise RuntimeFailure(f"invalid module handle {module or 0:#x}")
        loaded, kernels = entry
        kernel_name = ctypes.string_at(name).decode() if name else ""
        cached = self._function_handles.get((module, kernel_name))
        if cached is not None:
            _store_pointer(out, cached)
            return
        kernel = next((k for k in kernels if k.name == kernel_name), None)
        function = loaded.get_function(kernel_name, kernel)
        handle = self._new_handle()
        self._functions[handle] = function
        self._function_handles[(module, kernel_name)] = handle
        _store_pointer(out, handle)

    def _launch(self, function: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                shared: int, stream: int | None, params: int | None, num_params: int) -> None:
        self._launch_cluster(function, 0, 0, 0, gx, gy, gz, bx, by, bz, shared, stream, params,
                             num_params)

    def _launch_cluster(self, function: int, cx: int, cy: int, cz: int, gx: int, gy: int,
                        gz: int, bx: int, by: int, bz: int, shared: int, stream: int | None,
                        params: int | None, num_params: int) -> None:
        fn = self._launched_function(function, num_params)
        cluster = (cx, cy, cz) if cx else None
        self.device.launch(fn, (gx, gy, gz), (bx, by, bz), params or 0, shared,
                           self._stream(stream), cluster)

    # --- streams and events ------------------------------------------------------------------
    def _stream_create(self, out: int) -> None:
        handle = self._new_handle()
        stream = self._reusable() or self.device.create_stream()
        # Ordered after the work already on the program's default stream (staging copies, the
        # caller's async work), as the legacy default stream orders new streams upstream.
        fork = self.device.create_event()
        fork.record(self.device.default_stream)
        stream.wait(fork)
        fork.close()
        with self._lock:
            self._streams[handle] = stream
            self._owners[handle] = threading.get_ident()
        _store_pointer(out, handle)

    def _stream_destroy(self, stream: int | None) -> None:
        if not stream:
            return  # the default stream belongs to the device
        target = self._stream(stream)
        with self._lock:
            del self._streams[stream]
            self._owners.pop(stream, None)
            surplus = self._keep([target])
        for s in surplus:
            s.close()

    def _stream_synchronize(self, stream: int | None) -> None:
        self._stream(stream).synchronize()

    def _stream_wait_event(self, stream: int | None, event: int | None) -> None:
        self._stream(stream).wait(self._event(event))

    def _event_create(self, out: int) -> None:
        handle = self._new_handle()
        self._events[handle] = self.device.create_event()
        _store_pointer(out, handle)

    def _event_destroy(self, event: int | None) -> None:
        self._event(event).close()
        del self._events[event or 0]

    def _event_record(self, event: int | None, stream: int | None) -> None:
        self._event(event).record(self._stream(stream))

    def _event_synchronize(self, event: int | None) -> None:
        self._event(event).synchronize()

    # --- memory ------------------------------------------------------------------------------
    def _mem_alloc(self, out: int, size: int, stream: int | None, host_shared: int) -> None:
        if size < 0:
            raise RuntimeFailure(f"nova_rt_mem_alloc: negative size {size}")
        if size == 0:
            _store_pointer(out, 0)
            return
        target = self._stream(stream)
        if host_shared:
            buffer = self._allocate_idle(size)
            self._idle_blocks.add(buffer.ptr)
            self._allocations[buffer.ptr] = buffer
            _store_pointer(out, buffer.ptr)
            return
        block = self.device.allocate_block(size, target)
        self._allocations[block.ptr] = _OrderedAllocation(block, target, self.device.pool)
        if not stream:
            self._order_open_streams_after(target)
        _store_pointer(out, block.ptr)

    def _allocate_idle(self, size: int) -> Buffer:
        """Memory no queued work uses (host code may touch it at once, unlike stream-ordered
        memory, which the pool may hand out while the work of its stream before the free still
        runs): the pool's blocks of no stream, which are given back only once their stream
        reached the free (`_mem_free`)."""
        return Buffer._from_pool(self.device, self.device.pool.allocate(size, None), size, None)

    def _order_open_streams_after(self, source: Stream) -> None:
        """A null-stream allocation (a synchronous gpu.alloc, which no longer blocks the host):
        this thread's open streams wait for `source`'s work so far (one event), so their later
        work comes after the allocation, as it did after a host synchronization."""
        if not self._streams:  # a hint read without the lock
            return
        me = threading.get_ident()
        with self._lock:
            mine = [self._streams[h] for h, owner in self._owners.items() if owner == me]
        if not mine:
            return
        event = self.device.create_event()
        event.record(source)
        for stream in mine:
            stream.wait(event)
        event.close()

    def _mem_free(self, pointer: int | None, stream: int | None) -> None:
        """Stream-ordered and never waiting: work enqueued before the free may still use the
        memory, and the device pool hands the block only to later allocations ordered after it
        (on the buffer's own stream; freed on another stream, once that stream has run the work
        enqueued so far). Host-shared memory (`_allocate_idle`) goes back to the pool only when
        the stream reaches the free."""
        if not pointer:
            return
        target = self._stream(stream)
        buffer = self._allocations.pop(pointer, None)
        if buffer is None:
            raise RuntimeFailure(f"nova_rt_mem_free: {pointer:#x} was not allocated by "
                                 "nova_rt_mem_alloc (or was freed already)")
        if isinstance(buffer, _OrderedAllocation):
            buffer.free(target)
            return
        self._idle_blocks.discard(pointer)
        self._enqueue(target, buffer.free, "free", inline=True)

    def _memcpy(self, dst: int | None, src: int | None, size: int, stream: int | None) -> None:
        if size == 0:
            return
        if not dst or not src:
            raise RuntimeFailure(f"nova_rt_memcpy of {size} bytes with a null pointer")
        self._submit_copy(dst, src, size, stream)

    def _submit_copy(self, dst: int, src: int, size: int, stream: int | None) -> None:
        """Copy `size` bytes in stream order (the checked part of `_memcpy`; the graph
        recorder overrides it to record the copy instead)."""
        self.device.copy_dtod(dst, src, size, self._stream(stream))

    def _memset(self, dst: int | None, value: int, count: int, stream: int | None,
                dtype: type[np.unsignedinteger]) -> None:
        if count == 0:
            return
        if not dst:
            raise RuntimeFailure("memset of a null pointer")
        pattern = dtype(value & int(np.iinfo(dtype).max))
        nbytes = count * np.dtype(dtype).itemsize

        def fill() -> None:
            raw = (ctypes.c_char * nbytes).from_address(dst)
            # numpy's stubs (Python < 3.12) do not list ctypes arrays among buffers
            np.frombuffer(raw, dtype=dtype)[:] = pattern  # type: ignore[call-overload]

        self._submit_task(stream, fill, f"memset of {nbytes} bytes")

    def _submit_task(self, stream: int | None, work: Callable[[], None], what: str) -> None:
        """Run `work` in the order of ABI stream `stream` (the checked part of `_memset`; the
        graph recorder overrides it to record the task instead)."""
        self._enqueue(self._stream(stream), work, what)

    def _memset32(self, dst: int | None, value: int, count: int, stream: int | None) -> None:
        self._memset(dst, value, count, stream, np.uint32)

    def _memset16(self, dst: int | None, value: int, count: int, stream: int | None) -> None:
        self._memset(dst, value, count, stream, np.uint16)

    def _memset8(self, dst: int | None, value: int, count: int, stream: int | None) -> None:
        self._memset(dst, value, count, stream, np.uint8)

    def _host_register(self, pointer: int | None, size: int) -> None:
        """Host memory is device memory on the cpu device: nothing to pin."""

    def _host_unregister(self, pointer: int | None) -> None:
        """See `_host_register`."""

    @staticmethod
    def _enqueue(stream: Stream, work: Callable[[], None], what: str,
                 inline: bool = False) -> None:
        enqueue = getattr(stream, "enqueue", None)
        if enqueue is None:
            stream.synchronize()
            work()
        else:
            enqueue(work, what, inline=inline)

    # --- library calls -----------------------------------------------------------------------
    def _library_plan(self, out: int, index: int) -> None:
        """Plan `index` of the manifest, run by NumPy (nova.runtime.cpu.library)."""
        handle = self._plan_handles.get(index)
        if handle is None:
            try:
                plans = library_plans(self.manifest.extra)
            except ValueError as exc:
                raise RuntimeFailure(f"nova_rt_library_plan: {exc}") from None
            if not 0 <= index < len(plans):
                raise RuntimeFailure(f"nova_rt_library_plan: plan {index} does not exist (the "
                                     f"manifest lists {len(plans)})")
            handle = self._new_handle()
            self._plans[handle] = plans[index]
            self._plan_handles[index] = handle
        _store_pointer(out, handle)

    def _library_call(self, plan: int | None, operands: int | None, num_operands: int,
                      stream: int | None) -> None:
        found = self._plans.get(plan or 0)
        if found is None:
            raise RuntimeFailure(f"nova_rt_library_call: invalid plan handle {plan or 0:#x}")
        count = len(found.operands)
        if num_operands != count:
            raise RuntimeFailure(f"nova_rt_library_call: {num_operands} operands passed, the plan "
                                 f"takes {count} ({', '.join(found.operands)})")
        if not operands:
            raise RuntimeFailure("nova_rt_library_call: null operand array")
        pointers = [p or 0 for p in (ctypes.c_void_p * count).from_address(operands)]

        from nova.runtime.cpu import library  # NumPy: only programs that call it

        def work() -> None:
            library.run_plan(found, pointers)

        self._submit_task(stream, work, library.describe(found))

    # --- what the executor needs -------------------------------------------------------------
    def stage_in(self, array: np.ndarray) -> tuple[int, object]:
        """Device address for a host array: the array itself when it already lies in the
        device's guarded memory (a returned result), else a copy of the memory it spans in a
        pool buffer, so that an out-of-bounds store by the program never reaches the Python
        heap (docs/device-layer.md, "Memory isolation on the cpu device")."""
        address = array.ctypes.data
        low, high = _span(array)
        if high == low or self.device.host_memory_in_place(address + low, high - low):
            return address, None
        buffer = self.device.allocate(high - low)
        ctypes.memmove(buffer.ptr, address + low, high - low)
        return buffer.ptr - low, (buffer, array, low)

    def stage_out(self, token: object) -> None:
        """Copy a staged array's elements back, in order on the default stream (after the
        call's work, which the executor's synchronize then waits for); read-only arrays stay
        as they are."""
        if token is None:
            return
        buffer, array, low = cast("tuple[Buffer, np.ndarray, int]", token)
        if not array.flags.writeable:
            return

        def copy_back() -> None:
            if array.flags.c_contiguous:
                ctypes.memmove(array.ctypes.data, buffer.ptr, array.nbytes)
                return
            raw = (ctypes.c_char * buffer.nbytes).from_address(buffer.ptr)
            np.copyto(array, np.ndarray(array.shape, array.dtype, buffer=memoryview(raw),
                                        offset=-low, strides=array.strides))

        self._enqueue(self.device.default_stream, copy_back, "copy of a staged argument back")

    def release(self, token: object) -> None:
        """Give a staged copy back to the pool."""
        if token is not None:
            cast("tuple[Buffer, np.ndarray, int]", token)[0].free()

    def fetch(self, address: int, nbytes: int) -> bytes:
        """Bytes at a device address (after the default stream drained)."""
        return ctypes.string_at(address, nbytes)

    def take_allocation(self, address: int) -> ResultMemory | None:
        """Hand a returned `gpu.alloc` allocation (at `address`) to the caller: the program no
        longer owns it (close() leaves it alone); its Buffer goes back to the device pool when
        the returned arrays are collected. None when `address` is not one of this program's
        live runtime allocations. The call has synchronized: no work still uses it."""
        with self._lock:
            buffer = self._allocations.pop(address, None)
            self._idle_blocks.discard(address)
        if buffer is None:
            return None
        return ResultMemory(address, buffer.free, host_addressable=True)

    def synchronize(self) -> None:
        """Wait for the program's default stream (and the streams joined into it); raises the
        first error of their work."""
        self.device.default_stream.synchronize()
        with self._lock:
            retired, self._retired = self._retired, []
        try:
            for stream in retired:
                stream.synchronize()
        finally:
            failed = [s for s in retired if s._pending_error()]  # type: ignore[attr-defined]
            with self._lock:
                surplus = self._keep([s for s in retired if s not in failed])
            for stream in [*failed, *surplus]:
                stream.close()

    def close(self) -> None:
        """Release what the program left behind: its streams, events and allocations."""
        with self._lock:
            streams = [*self._streams.values(), *self._retired, *self._free]
            self._retired.clear()
            self._free.clear()
            self._owners.clear()
            self._streams.clear()
        for stream in streams:
            stream.close()
        for event in self._events.values():
            event.close()
        for buffer in self._allocations.values():
            buffer.free()
        self._streams.clear()
        self._events.clear()
        self._allocations.clear()
        self._idle_blocks.clear()
        self._functions.clear()
        self._modules.clear()
        self._module_handles.clear()
        self._function_handles.clear()
        self._plans.clear()
        self._plan_handles.clear()

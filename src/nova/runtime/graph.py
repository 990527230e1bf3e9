"""Graph capture and replay of compiled entry points (CUDA graphs; a recorded op list on cpu).

`mod.capture("forward", *example_args) -> CapturedEntry` runs the entry's host code once with
*capture* bindings of the runtime ABI, so that the device work it issues is recorded instead of
executed; `captured(*args)` / `captured.replay(*args)` then copies new inputs into the
capture-time device buffers, runs the recorded work, copies the memref arguments back (like a
normal call does) and returns the entry's results. `captured.launch(stream)` runs the recorded
work alone, on the capture-time buffers (`captured.buffers`): pass those buffers as arguments to
replay in place, with no copies.

How it is recorded. The program's host object is linked a second time against capture bindings:
- cuda: `cuStreamBeginCapture` (relaxed mode) on a private stream, which plays the role of the
  executor's default stream (every null-stream operation of the host code goes there). Launches,
  copies, memsets and stream-ordered allocations call the native ABI (cuda_native) on that stream,
  so they become graph nodes. Host synchronizations cannot wait for work that does not run, so they
  become dependencies: synchronizing a stream or an event makes every live stream (and the capture
  stream) wait for it, which orders everything the host issues afterwards the way the host wait
  did. `gpu.wait async` streams fork from the capture stream (an event) when created and join back
  when synchronized or destroyed (destruction is deferred until the capture ended); every stream
  still live at the end joins too. Then `cuStreamEndCapture`, `cuGraphInstantiate`
  (auto-free-on-launch, for allocations the graph does not free), and each replay is one
  `cuGraphLaunch`.
- cpu: the same protocol over a recording of operations (launches with their parameter bytes,
  copies, fills, event records and waits, per virtual stream); a replay enqueues them again on the
  target stream and private replay streams, in the recorded order, so the cpu device runs the same
  graph with the same concurrency.

What is frozen at capture (as with any CUDA graph): everything the host code computed, so scalar
arguments must be equal at replay (an ArgumentError says so), shapes must be equal, and scalar
results are the values computed at capture. Memory the entry allocates with gpu.alloc keeps the
same address for the graph's lifetime (frees inside the entry are deferred on cpu; graph
allocation nodes on cuda). Host memory the entry's own host code allocates and frees (memref.alloc)
is *not* kept: a captured entry should move data through its memref arguments.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from nova.bundle.format import EntryPoint
from nova.errors import ArgumentError, CudaError, NovaError, RuntimeFailure
from nova.runtime import marshal
from nova.runtime.abi import ABI_BY_NAME
from nova.runtime.cpu_abi import CpuAbi
from nova.runtime.launch_params import pack_params
from nova.runtime.linker import LinkedObject, link_object
from nova.runtime.memory import Buffer
from nova.runtime.native_support import clear_error, control_symbols, record_error, take_error
from nova.runtime.runner_utils import flush_stdout, runner_util_symbols
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from nova.runtime.executor import NovaModule

ORIGIN = 0
"""The virtual handle of the capture stream (the host code's null stream)."""

CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1


def _store_pointer(out: int | None, value: int) -> None:
    if not out:
        raise RuntimeFailure("null out-pointer passed to the runtime")
    ctypes.c_void_p.from_address(out).value = value or None


# --- cpu: a recording ABI ----------------------------------------------------------------------
class CpuRecorder(CpuAbi):
    """The cpu runtime ABI in recording mode: device work is appended to `ops` (one tuple per
    operation, on virtual streams), host synchronizations become dependencies, allocations are
    made at once and kept for the recording's lifetime."""

    def __init__(self, device: Any, manifest: Any) -> None:
        self.ops: list[tuple] = []
        self.live: set[int] = set()
        self.kernels = 0
        super().__init__(device, manifest)

    def _vs(self, handle: int | None) -> int:
        if not handle:
            return ORIGIN
        if handle not in self.live:
            raise RuntimeFailure(f"invalid stream handle {handle:#x} (destroyed or never created)")
        return handle

    def _record_at(self, stream: int) -> int:
        event = self._new_handle()
        self.ops.append(("record", event, stream))
        return event

    def _host_wait(self, event: int, source: int | None) -> None:
        """A host wait for `event`: everything issued afterwards, on any stream, follows it."""
        for stream in (ORIGIN, *sorted(self.live)):
            if stream != source:
                self.ops.append(("wait", stream, event))

    def finish(self) -> None:
        """Join every stream still live into the capture stream."""
        for stream in sorted(self.live):
            self.ops.append(("wait", ORIGIN, self._record_at(stream)))

    def _launch_cluster(self, function: int, cx: int, cy: int, cz: int, gx: int, gy: int,
                        gz: int, bx: int, by: int, bz: int, shared: int, stream: int | None,
                        params: int | None, num_params: int) -> None:
        fn = self._function(function)
        if fn.kernel is not None and num_params != len(fn.kernel.params):
            raise RuntimeFailure(f"launch of @{fn.name}: {num_params} parameters passed, the "
                                 f"kernel takes {len(fn.kernel.params)}")
        packed = pack_params(params or 0, fn.kernel, fn.name)
        cluster = (cx, cy, cz) if cx else None
        self.ops.append(("launch", self._vs(stream), fn, (gx, gy, gz), (bx, by, bz), shared,
                         cluster, packed))
        self.kernels += 1

    def _stream_create(self, out: int) -> None:
        handle = self._new_handle()
        self.live.add(handle)
        self.ops.append(("wait", handle, self._record_at(ORIGIN)))  # fork
        _store_pointer(out, handle)

    def _stream_destroy(self, stream: int | None) -> None:
        if not stream:
            return
        vs = self._vs(stream)
        self.ops.append(("wait", ORIGIN, self._record_at(vs)))  # join
        self.live.discard(vs)

    def _stream_synchronize(self, stream: int | None) -> None:
        vs = self._vs(stream)
        self._host_wait(self._record_at(vs), vs)

    def _stream_wait_event(self, stream: int | None, event: int | None) -> None:
        self.ops.append(("wait", self._vs(stream), self._event_id(event)))

    def _event_id(self, event: int | None) -> int:
        if not event or event not in self._events:
            raise RuntimeFailure(f"invalid event handle {event or 0:#x}")
        return event

    def _event_create(self, out: int) -> None:
        handle = self._new_handle()
        self._events[handle] = None  # type: ignore[assignment]  # virtual: replays make events
        _store_pointer(out, handle)

    def _event_destroy(self, event: int | None) -> None:
        self._events.pop(self._event_id(event))

    def _event_record(self, event: int | None, stream: int | None) -> None:
        self.ops.append(("record", self._event_id(event), self._vs(stream)))

    def _event_synchronize(self, event: int | None) -> None:
        self._host_wait(self._event_id(event), None)

    def _mem_alloc(self, out: int, size: int, stream: int | None, host_shared: int) -> None:
        self._vs(stream)
        super()._mem_alloc(out, size, None, host_shared)

    def _mem_free(self, pointer: int | None, stream: int | None) -> None:
        self._vs(stream)
        if pointer and pointer not in self._allocations:
            raise RuntimeFailure(f"nova_rt_mem_free: {pointer:#x} was not allocated by "
                                 "nova_rt_mem_alloc (or was freed already)")
        # kept: replays use the same addresses; released when the CapturedEntry closes

    def _memcpy(self, dst: int | None, src: int | None, size: int, stream: int | None) -> None:
        if size == 0:
            return
        if not dst or not src:
            raise RuntimeFailure(f"nova_rt_memcpy of {size} bytes with a null pointer")
        self.ops.append(("copy", self._vs(stream), dst, src, size))

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
            np.frombuffer(raw, dtype=dtype)[:] = pattern

        self.ops.append(("task", self._vs(stream), fill, f"memset of {nbytes} bytes"))

    def close(self) -> None:
        self._events.clear()  # virtual events: nothing to release
        super().close()


class CpuGraph:
    """A recording replayed on the cpu device."""

    def __init__(self, recorder: CpuRecorder) -> None:
        self.recorder = recorder
        self.device = recorder.device
        self._streams: dict[int, Stream] = {}
        self._events: dict[int, Event] = {}

    @property
    def kernel_count(self) -> int:
        return self.recorder.kernels

    @property
    def node_count(self) -> int:
        return sum(1 for op in self.recorder.ops if op[0] in ("launch", "copy", "task"))

    def _stream(self, vs: int, origin: Stream) -> Stream:
        if vs == ORIGIN:
            return origin
        stream = self._streams.get(vs)
        if stream is None:
            stream = self._streams[vs] = self.device.create_stream()
        return stream

    def _event(self, handle: int) -> Event:
        event = self._events.get(handle)
        if event is None:
            event = self._events[handle] = self.device.create_event()
        return event

    def launch(self, origin: Stream) -> None:
        dev = self.device
        for op in self.recorder.ops:
            kind = op[0]
            if kind == "launch":
                _, vs, fn, grid, block, shared, cluster, packed = op
                dev.launch(fn, grid, block, packed.address, shared, self._stream(vs, origin),
                           cluster)
            elif kind == "copy":
                _, vs, dst, src, size = op
                dev.copy_dtod(dst, src, size, self._stream(vs, origin))
            elif kind == "task":
                _, vs, fn, what = op
                self._stream(vs, origin).enqueue(fn, what)  # type: ignore[attr-defined]
            elif kind == "record":
                _, event, vs = op
                self._event(event).record(self._stream(vs, origin))
            else:  # "wait"
                _, vs, event = op
                self._stream(vs, origin).wait(self._event(event))

    def synchronize(self, origin: Stream) -> None:
        origin.synchronize()
        for stream in self._streams.values():
            stream.synchronize()  # joined into origin already; surfaces their failures

    def close(self) -> None:
        for stream in self._streams.values():
            with contextlib.suppress(NovaError):
                stream.close()
        for event in self._events.values():
            event.close()
        self._streams.clear()
        self._events.clear()
        self.recorder.close()


# --- cuda: capture bindings over the native ABI ------------------------------------------------
_STREAM_OPS = ("nova_rt_launch", "nova_rt_launch_cluster", "nova_rt_memcpy", "nova_rt_memset32",
               "nova_rt_memset16", "nova_rt_memset8", "nova_rt_stream_wait_event",
               "nova_rt_event_record", "nova_rt_event_create", "nova_rt_host_register",
               "nova_rt_host_unregister")


class CudaCaptureAbi:
    """Runtime ABI bindings for one capture on a cuda device (Python callbacks that delegate to
    the native ABI functions on the capture stream; see the module docstring)."""

    def __init__(self, device: Any, manifest: Any, origin: Stream | int,
                 base: Any = None) -> None:
        from nova.runtime.cuda_abi import CudaAbi

        self.device = device
        self.base = base if base is not None else CudaAbi(device, manifest)
        self.call_entry = self.base.call_entry
        self.origin = origin if isinstance(origin, int) else origin.handle
        self.native = {name: ABI_BY_NAME[name].ctypes_prototype()(address)
                       for name, address in self.base.native.addresses.items()}
        self.live: set[int] = set()
        self.dead_streams: list[int] = []
        self.dead_events: list[int] = []
        self.managed: set[int] = set()  # host_shared allocations: kept until close
        self.ordered: set[int] = set()  # stream-ordered allocations made during the capture
        self.kernels = 0
        self._callbacks: dict[str, Any] = {}
        for name in self.base.native.addresses:
            impl = getattr(self, "_" + name.removeprefix("nova_rt_"), None)
            if impl is None and name in _STREAM_OPS:
                impl = self._passthrough(name)
            if impl is not None:
                self._callbacks[name] = ABI_BY_NAME[name].ctypes_prototype()(
                    self._guard(name, impl))

    def symbols(self) -> dict[str, int]:
        symbols = self.base.symbols()
        for name, callback in self._callbacks.items():
            symbols[name] = ctypes.cast(callback, ctypes.c_void_p).value or 0
        return symbols

    @staticmethod
    def _guard(name: str, impl: Callable[..., int]) -> Callable[..., int]:
        def callback(*args: Any) -> int:
            try:
                return int(impl(*args) or 0)
            except NovaError as exc:
                exc.add_note(f"(raised by the runtime call {name} during graph capture)")
                record_error(exc)
            except BaseException as exc:  # never unwind through C frames
                record_error(RuntimeFailure(f"{name} failed during graph capture: "
                                            f"{type(exc).__name__}: {exc}"))
            return 1
        return callback

    def _map(self, stream: int | None) -> int:
        return stream or self.origin

    def _passthrough(self, name: str) -> Callable[..., int]:
        """Call the native function with the null stream mapped to the capture stream (the
        stream is the last parameter wherever it appears, except in a launch's tail)."""
        params = [p for p, _ in ABI_BY_NAME[name].params]
        where = params.index("stream") if "stream" in params else -1
        native = self.native[name]

        def impl(*args: Any) -> int:
            if where >= 0:
                args = (*args[:where], self._map(args[where]), *args[where + 1:])
            if name.startswith("nova_rt_launch"):
                self.kernels += 1
            return int(native(*args))

        return impl

    def _new_event(self) -> int:
        out = ctypes.c_void_p()
        if self.native["nova_rt_event_create"](ctypes.addressof(out)):
            raise take_error() or RuntimeFailure("cuEventCreate failed during capture")
        self.dead_events.append(out.value or 0)
        return out.value or 0

    def _record(self, stream: int) -> int:
        event = self._new_event()
        if self.native["nova_rt_event_record"](event, stream):
            raise take_error() or RuntimeFailure("cuEventRecord failed during capture")
        return event

    def _wait(self, stream: int, event: int) -> None:
        if self.native["nova_rt_stream_wait_event"](stream, event):
            raise take_error() or RuntimeFailure("cuStreamWaitEvent failed during capture")

    def _host_wait(self, event: int, source: int | None) -> None:
        for stream in (self.origin, *sorted(self.live)):
            if stream != source:
                self._wait(stream, event)

    def finish(self) -> None:
        for stream in sorted(self.live):
            self._wait(self.origin, self._record(stream))

    # --- overridden ABI functions -------------------------------------------------------------
    def _stream_create(self, out: int) -> int:
        status = int(self.native["nova_rt_stream_create"](out))
        if status:
            return status
        handle = ctypes.c_void_p.from_address(out).value or 0
        self.live.add(handle)
        self._wait(handle, self._record(self.origin))  # fork from the capture stream
        return 0

    def _stream_destroy(self, stream: int | None) -> int:
        if not stream or stream == self.origin:
            return 0
        self._wait(self.origin, self._record(stream))  # join
        self.live.discard(stream)
        self.dead_streams.append(stream)  # destroyed after the capture ended
        return 0

    def _stream_synchronize(self, stream: int | None) -> int:
        s = self._map(stream)
        self._host_wait(self._record(s), s)
        return 0

    def _event_destroy(self, event: int | None) -> int:
        if event:
            self.dead_events.append(event)
        return 0

    def _event_synchronize(self, event: int | None) -> int:
        self._host_wait(event or 0, None)
        return 0

    def _mem_alloc(self, out: int, size: int, stream: int | None, host_shared: int) -> int:
        status = int(self.native["nova_rt_mem_alloc"](out, size, self._map(stream), host_shared))
        pointer = ctypes.c_void_p.from_address(out).value or 0 if out else 0
        if not status and pointer:
            (self.managed if host_shared else self.ordered).add(pointer)
        return status

    def _mem_free(self, pointer: int | None, stream: int | None) -> int:
        if not pointer or pointer in self.managed:
            return 0  # managed memory: released when the CapturedEntry closes
        if pointer in self.ordered:  # a graph allocation: a free node
            driver = self.device.driver
            driver.call("cuMemFreeAsync", pointer, driver.raw.CUstream(self._map(stream)))
            self.ordered.discard(pointer)
            return 0
        return int(self.native["nova_rt_mem_free"](pointer, self._map(stream)))

    def release_deferred(self) -> None:
        """Destroy streams and events the capture used (after cuStreamEndCapture)."""
        for stream in self.dead_streams + sorted(self.live):
            self.native["nova_rt_stream_destroy"](stream)
        for event in dict.fromkeys(self.dead_events):
            self.native["nova_rt_event_destroy"](event)
        self.dead_streams.clear()
        self.dead_events.clear()
        self.live.clear()
        take_error()  # failures while releasing are not the capture's result

    def close(self) -> None:
        for pointer in self.managed:
            self.device.driver.quiet("cuMemFree", pointer)
        self.managed.clear()
        self.base.close()


class CudaGraph:
    """An instantiated CUDA graph (`cuGraphLaunch` per replay)."""

    def __init__(self, abi: CudaCaptureAbi, graph: Any, graph_exec: Any) -> None:
        self.abi = abi
        self.device = abi.device
        self.graph = graph
        self.graph_exec = graph_exec
        self.kernel_count = abi.kernels
        self.node_count = self._count_nodes()
        drv = self.device.driver
        # a CapturedEntry dropped without close() still gives the graph back to the driver
        self._finalizer = weakref.finalize(self, _destroy_graph, drv, graph, graph_exec)
        self._finalizer.atexit = False

    def _count_nodes(self) -> int | None:
        try:
            out = self.device.driver.call("cuGraphGetNodes", self.graph, 0)
            return int(out[-1]) if isinstance(out, tuple) else int(out)
        except Exception:  # informational only: any failure means "unknown"
            return None

    def launch(self, origin: Stream) -> None:
        self.device.driver.call("cuGraphLaunch", self.graph_exec, origin.cu)  # type: ignore

    def synchronize(self, origin: Stream) -> None:
        origin.synchronize()

    def close(self) -> None:
        self._finalizer()
        self.abi.close()


def _destroy_graph(driver: Any, graph: Any, graph_exec: Any) -> None:
    driver.quiet("cuGraphExecDestroy", graph_exec)
    driver.quiet("cuGraphDestroy", graph)


# --- the public object -------------------------------------------------------------------------
class CapturedEntry:
    """A compiled entry point captured once; replay it with new inputs of the same shapes."""

    def __init__(self, module: NovaModule, entry: EntryPoint, args: tuple[Any, ...]) -> None:
        self.module = module
        self.entry = entry
        self.name = entry.name
        self.device = module.device
        if len(args) != len(entry.args):
            raise ArgumentError(f"{self.name}: expected {len(entry.args)} argument(s), got "
                                f"{len(args)}")
        from nova.runtime.executor import _Plan

        self._plan = _Plan(entry)
        self.buffers: list[Buffer | None] = []
        self._scalars: list[Any] = []
        self._owned: list[Buffer] = []
        for index, (spec, value) in enumerate(zip(entry.args, args, strict=True)):
            storage = self._plan.arg_storage[index]
            if spec.kind == "memref":
                buf = self._capture_buffer(index, spec, value)
                info = marshal.check_memref(self.name, index, spec, buf)
                marshal.write_descriptor(storage, info)  # type: ignore[arg-type]
                self.buffers.append(buf)
                self._scalars.append(None)
            else:
                storage.value = marshal.scalar_value(self.name, index, spec, value)  # type: ignore
                self.buffers.append(None)
                self._scalars.append(storage.value)  # type: ignore[attr-defined]
        self._linked: LinkedObject | None = None
        self._graph: CpuGraph | CudaGraph | None = None
        self._lock = threading.Lock()  # one replay at a time: they share the capture buffers
        self._record()

    def _capture_buffer(self, index: int, spec: Any, value: Any) -> Buffer:
        if isinstance(value, Buffer):
            if value.device is not self.device:
                raise ArgumentError(f"{self.name}: argument {index}: the buffer lives on "
                                    f"{value.device.kind}:{value.device.index}, the program runs "
                                    f"on {self.device.kind}:{self.device.index}")
            return value  # used in place
        info = marshal.array_info(value)
        if info is None or info.on_device:
            raise ArgumentError(f"{self.name}: argument {index}: expected {spec.mlir} as a NumPy "
                                f"array or a Nova Buffer, got {type(value).__name__}")
        array = np.array(value, copy=True, order="C")
        buf = self.device.to_device(array)
        self._owned.append(buf)
        return buf

    # --- recording ----------------------------------------------------------------------------
    def _link(self, abi_symbols: dict[str, int]) -> int:
        bindings = {**control_symbols(), **runner_util_symbols(), **abi_symbols}
        self._linked = link_object(self.module._object_bytes, bindings,
                                   f"{self.module.name} (capture of @{self.name})")
        return self._linked.function_address(self.entry.symbol)

    def _record(self) -> None:
        self.module._require_open()
        self.device.synchronize()  # capture-time buffers are ready before any replay uses them
        if self.device.kind == "cuda":
            self._record_cuda()
        else:
            self._record_cpu()

    def _record_cpu(self) -> None:
        recorder = CpuRecorder(self.device, self.module.manifest)
        try:
            address = self._link(recorder.symbols())
            clear_error()
            status = recorder.call_entry(address, self._plan.args, self._plan.results)
            flush_stdout()
            if status:
                raise take_error() or RuntimeFailure(f"{self.name}: capture failed without "
                                                     "reporting why")
            recorder.finish()
        except BaseException:
            recorder.close()
            raise
        self._graph = CpuGraph(recorder)

    def _record_cuda(self) -> None:
        drv = self.device.driver
        stream = self.device.create_stream()
        abi = CudaCaptureAbi(self.device, self.module.manifest, stream)
        error: BaseException | None = None
        graph = None
        try:
            address = self._link(abi.symbols())
            drv.call("cuStreamBeginCapture", stream.cu,
                     drv.raw.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
            try:
                clear_error()
                if abi.call_entry(address, self._plan.args, self._plan.results):
                    error = take_error() or RuntimeFailure(f"{self.name}: capture failed "
                                                           "without reporting why")
                else:
                    abi.finish()
            except BaseException as exc:
                error = exc
            finally:
                flush_stdout()
                try:
                    graph = drv.call("cuStreamEndCapture", stream.cu)
                except CudaError as exc:
                    error = error or exc
                abi.release_deferred()
            if error is not None:
                raise error
            graph_exec = drv.call("cuGraphInstantiate", graph,
                                  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        except BaseException:
            if graph is not None:
                drv.quiet("cuGraphDestroy", graph)
            abi.close()
            with contextlib.suppress(NovaError):
                stream.close()
            raise
        with contextlib.suppress(NovaError):
            stream.close()
        self._graph = CudaGraph(abi, graph, graph_exec)

    # --- replay -------------------------------------------------------------------------------
    @property
    def kernel_count(self) -> int:
        """Kernel launches recorded (per replay)."""
        return self._require().kernel_count

    @property
    def node_count(self) -> int | None:
        """Graph nodes (cuda: as the driver counts them; cpu: launches, copies and fills)."""
        return self._require().node_count

    def _require(self) -> CpuGraph | CudaGraph:
        if self._graph is None:
            raise RuntimeFailure(f"captured @{self.name} was closed")
        self.module._require_open()
        return self._graph

    def launch(self, stream: Stream | None = None) -> None:
        """Run the recorded work once on the capture-time buffers (asynchronous on `stream`,
        default: the device's default stream)."""
        self._require().launch(self.device._stream(stream))

    def replay(self, *args: Any, stream: Stream | None = None) -> Any:
        """Copy `args` into the capture-time buffers, run the recorded work, copy the memref
        arguments back, wait, and return the entry's results. Replays of one CapturedEntry are
        serialized (they share the capture-time buffers)."""
        with self._lock:
            return self._replay(args, stream)

    __call__ = replay

    def _replay(self, args: tuple[Any, ...], stream: Stream | None) -> Any:
        graph = self._require()
        s = self.device._stream(stream)
        if len(args) != len(self.entry.args):
            raise ArgumentError(f"{self.name}: expected {len(self.entry.args)} argument(s), got "
                                f"{len(args)}")
        back: list[tuple[Any, Buffer]] = []
        keep: list[Any] = []
        for index, (spec, value) in enumerate(zip(self.entry.args, args, strict=True)):
            cap = self.buffers[index]
            if cap is None:
                self._check_scalar(index, spec, value)
            elif value is not cap:
                self._copy_in(index, spec, value, cap, s, back, keep)
        graph.launch(s)
        for target, cap in back:
            if isinstance(target, Buffer):
                self.device.copy_dtod(target, cap, cap.nbytes, stream=s)
            else:
                self.device.copy_dtoh(target, cap, cap.nbytes, stream=s)
        graph.synchronize(s)
        for original, contiguous in keep:
            if original is not contiguous:
                np.copyto(original, contiguous)
        return self._results()

    def _check_scalar(self, index: int, spec: Any, value: Any) -> None:
        converted = marshal.scalar_value(self.name, index, spec, value)
        captured = self._scalars[index]
        if converted != captured and not (converted != converted and captured != captured):
            raise ArgumentError(f"{self.name}: argument {index} is a scalar, baked into the "
                                f"captured graph as {captured!r}; got {value!r} (capture again "
                                "for another value)")

    def _copy_in(self, index: int, spec: Any, value: Any, cap: Buffer, s: Stream,
                 back: list[tuple[Any, Buffer]], keep: list[Any]) -> None:
        if isinstance(value, Buffer):
            if value.device is not self.device or value.shape != cap.shape \
                    or value.dtype != cap.dtype:
                raise ArgumentError(f"{self.name}: argument {index}: expected a {cap.dtype} "
                                    f"buffer of shape {cap.shape} on {self.device.kind}, got "
                                    f"{value!r}")
            self.device.copy_dtod(cap, value, cap.nbytes, stream=s)
            back.append((value, cap))
            return
        array = np.asarray(value)
        if array.shape != cap.shape or array.dtype != cap.dtype:
            raise ArgumentError(f"{self.name}: argument {index}: expected {spec.mlir} with shape "
                                f"{cap.shape} and dtype {cap.dtype} (as captured), got shape "
                                f"{array.shape} and dtype {array.dtype}")
        contiguous = np.ascontiguousarray(array)
        self.device.copy_htod(cap, contiguous, cap.nbytes, stream=s)
        if array.flags.writeable:
            back.append((contiguous, cap))
            keep.append((array, contiguous))

    def _results(self) -> Any:
        from nova.runtime.executor import _memref_result

        abi = self.module._require_open()
        values = []
        for spec, storage in zip(self.entry.results, self._plan.result_storage, strict=True):
            if spec.kind == "memref":
                values.append(_memref_result(spec, storage, abi))  # type: ignore[arg-type]
            else:
                values.append(marshal.scalar_result(spec, storage))  # type: ignore[arg-type]
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    # --- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the graph, the capture-time buffers it owns and its allocations."""
        graph, self._graph = self._graph, None
        if graph is None:
            return
        with contextlib.suppress(NovaError):
            self.device.synchronize()
        graph.close()
        for buf in self._owned:
            buf.free()
        self._owned.clear()
        self._linked = None

    def __enter__(self) -> CapturedEntry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._graph is None else f"{self.kernel_count} kernel launch(es)"
        return f"<CapturedEntry @{self.name} on {self.device.kind}:{self.device.index} {state}>"


def capture(module: NovaModule, name: str, *example_args: Any) -> CapturedEntry:
    """Capture entry `name` of `module` with arguments shaped like `example_args`."""
    entry = next((e for e in module.manifest.entries if e.name == name), None)
    if entry is None:
        raise KeyError(f"{module.name} has no entry '{name}' (entries: "
                       f"{', '.join(module.entries) or 'none'})")
    return CapturedEntry(module, entry, example_args)

"""Graph capture on cuda: runtime ABI bindings that record into a CUDA graph.

`CudaCaptureAbi` binds the runtime ABI for one capture (see `nova.runtime.graph`) as Python
callbacks delegating to the native ABI (`runtime.cuda.native`) with the null stream mapped to the
capture stream, host synchronizations turned into stream waits, `gpu.wait async` streams forked from
and joined into the capture stream through events, and destruction deferred until the capture ended.
`CudaGraph` is the instantiated graph (`cuGraphLaunch` per replay).
"""

from __future__ import annotations

import contextlib
import ctypes
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nova.abi import ABI_BY_NAME
from nova.errors import CudaError, NovaError, RuntimeFailure
from nova.runtime.cuda.native_blocks import ALLOC_DIRECT, FREE_DIRECT
from nova.runtime.cuda.native_errors import KERNEL_NAMES, remember_kernel_name
from nova.runtime.native_support import clear_error, record_error, take_error
from nova.runtime.runner_utils import flush_stdout
from nova.runtime.stream import Stream

if TYPE_CHECKING:
    from nova.runtime.graph import CaptureRequest

CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1

_STREAM_OPS = ("nova_rt_launch", "nova_rt_launch_cluster", "nova_rt_memcpy", "nova_rt_memset32",
               "nova_rt_memset16", "nova_rt_memset8", "nova_rt_stream_wait_event",
               "nova_rt_event_record", "nova_rt_event_create", "nova_rt_host_register",
               "nova_rt_host_unregister")


_FORGET_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class CudaCaptureAbi:
    """Runtime ABI bindings for one capture on a cuda device (Python callbacks that delegate to
    the native ABI functions on the capture stream; see the module docstring)."""

    def __init__(self, device: Any, manifest: Any, origin: Stream | int,
                 base: Any = None) -> None:
        from nova.runtime.cuda.abi import CudaAbi

        self.device = device
        self.base = base if base is not None else CudaAbi(device, manifest)
        self.call_entry = self.base.call_entry
        self.origin = origin if isinstance(origin, int) else origin.handle
        self.native = {name: ABI_BY_NAME[name].ctypes_prototype()(address)
                       for name, address in self.base.native.addresses.items()}
        # allocations and frees bypass the block cache: graph memory is never cached outside
        # the graph, nor a cached block handed to one (nova.runtime.cuda.native_blocks)
        direct = self.base.native.direct or {}
        for name, native_name in (("nova_rt_mem_alloc", ALLOC_DIRECT),
                                  ("nova_rt_mem_free", FREE_DIRECT)):
            if native_name in direct:
                self.native[name] = ABI_BY_NAME[name].ctypes_prototype()(direct[native_name])
        self._forget = _FORGET_TYPE(self.base.native.forget_stream)
        self.live: set[int] = set()
        self.dead_streams: list[int] = []
        self.dead_events: list[int] = []
        self.managed: set[int] = set()  # host_shared allocations: kept until close
        self.ordered: set[int] = set()  # stream-ordered allocations made during the capture
        self.kernels = 0
        self.host_waits = 0  # host synchronizations the host code made while captured
        self._callbacks: dict[str, Any] = {}
        if getattr(self.base, "library_call", 0):  # cuBLASLt calls: on the capture stream
            self.native["nova_rt_library_call"] = \
                ABI_BY_NAME["nova_rt_library_call"].ctypes_prototype()(self.base.library_call)
            self._callbacks["nova_rt_library_call"] = \
                ABI_BY_NAME["nova_rt_library_call"].ctypes_prototype()(
                    self._guard("nova_rt_library_call",
                                self._passthrough("nova_rt_library_call")))
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
            if name.startswith("nova_rt_launch") or name == "nova_rt_library_call":
                self.kernels += 1  # a library call enqueues kernels too
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
        self.host_waits += 1
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
        self._forget(handle)  # joined into the capture stream by finish(), not at entry exit
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
            if not stream and not host_shared and self.live:
                # a null-stream allocation comes before later work of the open streams (the
                # native ABI's rule; the capture stream stands in for the null stream here)
                event = self._record(self.origin)
                for live in sorted(self.live):
                    self._wait(live, event)
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
        self.host_waits = abi.host_waits
        self.private_streams = 0  # one graph on the launch stream; its faults are sticky
        # what a fault found by a wait after a replay names (the driver does not say which node)
        self.label: str | None = None
        self._handle = int(graph_exec)
        self._last_function: ctypes.c_void_p | None = None
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
        self.device.driver.call("cuGraphLaunch", self.graph_exec, origin.cu,  # type: ignore
                                kernel=self.label)
        if self.label is not None:
            # a fault a later wait finds names the graph: the Python stream's wait reads
            # `last_kernel`, the native ABI's (a program's synchronize) its last-function global,
            # which the graph's handle and KERNEL_NAMES stand in for
            origin.last_kernel = self.label  # type: ignore[attr-defined]  # a CudaStream
            slot = self._last_function
            if slot is None:
                slot = self._name_in_errors()
            slot.value = self._handle

    def _name_in_errors(self) -> ctypes.c_void_p:
        """Register the label as the graph handle's kernel name; the native ABI's last-function
        global, as a ctypes view written by every launch."""
        from nova.runtime.cuda.abi import native_for

        assert self.label is not None
        remember_kernel_name(self._handle, self.label)
        slot = ctypes.c_void_p.from_address(native_for(self.device).last_function_at)
        self._last_function = slot
        return slot

    def synchronize(self, origin: Stream) -> None:
        origin.synchronize()

    def owns(self, address: int) -> bool:
        """Whether `address` is an allocation made during the capture (managed memory, freed
        by close; or a graph allocation)."""
        return address in self.abi.managed or address in self.abi.ordered

    def close(self) -> None:
        KERNEL_NAMES.pop(self._handle, None)
        self._finalizer()
        self.abi.close()


def _destroy_graph(driver: Any, graph: Any, graph_exec: Any) -> None:
    driver.quiet("cuGraphExecDestroy", graph_exec)
    driver.quiet("cuGraphDestroy", graph)


def record(device: Any, request: CaptureRequest) -> CudaGraph:
    """Record `request`'s entry as a CUDA graph: `cuStreamBeginCapture` (relaxed) on a private
    stream that stands in for the default stream, the host code run once against
    `CudaCaptureAbi`, `cuStreamEndCapture`, then `cuGraphInstantiate` with auto-free-on-launch
    (the cuda device's `Device.record_graph`)."""
    drv = device.driver
    stream = device.create_stream()
    abi = CudaCaptureAbi(device, request.manifest, stream)
    error: BaseException | None = None
    graph = None
    try:
        address = request.link(abi.symbols())
        drv.call("cuStreamBeginCapture", stream.cu,
                 drv.raw.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
        try:
            clear_error()
            if abi.call_entry(address, request.args, request.results):
                error = take_error() or RuntimeFailure(f"{request.name}: capture failed "
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
    return CudaGraph(abi, graph, graph_exec)

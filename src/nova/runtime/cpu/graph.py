"""Graph capture on the cpu device: a recording runtime ABI and the replay of its recording.

`CpuRecorder` binds the runtime ABI for one capture (see `nova.runtime.graph`): device work is
appended to a list of operations on *virtual* streams (the capture stream is `ORIGIN`), host
synchronizations become waits, allocations are made at once and kept for the recording's
lifetime. `CpuGraph` replays the list onto a target stream plus private replay streams, in the
recorded order, so the cpu device runs the captured work with the same concurrency.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nova.errors import NovaError, RuntimeFailure
from nova.runtime.cpu.abi import CpuAbi
from nova.runtime.launch_params import pack_params
from nova.runtime.native_support import clear_error, take_error
from nova.runtime.runner_utils import flush_stdout
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from nova.runtime.graph import CaptureRequest

ORIGIN = 0
"""The virtual handle of the capture stream (the host code's null stream)."""


def _store_pointer(out: int | None, value: int) -> None:
    if not out:
        raise RuntimeFailure("null out-pointer passed to the runtime")
    ctypes.c_void_p.from_address(out).value = value or None


class CpuRecorder(CpuAbi):
    """The cpu runtime ABI in recording mode: device work is appended to `ops` (one tuple per
    operation, on virtual streams), host synchronizations become dependencies, allocations are
    made at once and kept for the recording's lifetime."""

    def __init__(self, device: Any, manifest: Any) -> None:
        self.ops: list[tuple] = []
        self.live: set[int] = set()
        self.kernels = 0
        self.host_waits = 0  # host synchronizations the host code made while recorded
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
        self.host_waits += 1
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
        fn = self._launched_function(function, num_params)
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
        # allocated now, used by replays on other streams than the default one: idle memory
        super()._mem_alloc(out, size, None, 1)

    def _mem_free(self, pointer: int | None, stream: int | None) -> None:
        self._vs(stream)
        if pointer and pointer not in self._allocations:
            raise RuntimeFailure(f"nova_rt_mem_free: {pointer:#x} was not allocated by "
                                 "nova_rt_mem_alloc (or was freed already)")
        # kept: replays use the same addresses; released when the CapturedEntry closes

    def _submit_copy(self, dst: int, src: int, size: int, stream: int | None) -> None:
        self.ops.append(("copy", self._vs(stream), dst, src, size))

    def _submit_task(self, stream: int | None, work: Callable[[], None], what: str) -> None:
        self.ops.append(("task", self._vs(stream), work, what))

    def close(self) -> None:
        self._events.clear()  # virtual events: nothing to release
        super().close()


class CpuGraph:
    """A recording replayed on the cpu device."""

    def __init__(self, recorder: CpuRecorder) -> None:
        self.recorder = recorder
        self.device = recorder.device
        self.host_waits = recorder.host_waits
        # virtual streams besides the origin: their work runs on private replay streams, whose
        # faults only their own synchronize reports
        self.private_streams = len({op[1] if op[0] != "record" else op[2]
                                    for op in recorder.ops} - {ORIGIN})
        self.label: str | None = None  # cpu faults name their kernel: the label is not needed
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

    def owns(self, address: int) -> bool:
        """Whether `address` is an allocation the recording made (released by its close)."""
        return address in self.recorder._allocations

    def close(self) -> None:
        for stream in self._streams.values():
            with contextlib.suppress(NovaError):
                stream.close()
        for event in self._events.values():
            event.close()
        self._streams.clear()
        self._events.clear()
        self.recorder.close()


def record(device: Any, request: CaptureRequest) -> CpuGraph:
    """Record `request`'s entry on the cpu device: run its host code once against a
    `CpuRecorder`, whose bindings record launches, copies, fills and event operations instead
    of running them (the cpu device's `Device.record_graph`)."""
    recorder = CpuRecorder(device, request.manifest)
    try:
        address = request.link(recorder.symbols())
        clear_error()
        status = recorder.call_entry(address, request.args, request.results)
        flush_stdout()
        if status:
            raise take_error() or RuntimeFailure(f"{request.name}: capture failed without "
                                                 "reporting why")
        recorder.finish()
    except BaseException:
        recorder.close()
        raise
    return CpuGraph(recorder)

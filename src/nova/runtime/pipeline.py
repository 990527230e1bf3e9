"""`nova.Pipeline`: a reusable staged H2D -> kernel(s) -> D2H pipeline with copy/compute overlap.

Items (host arrays) flow through N *slots*. Each slot owns a device input and output buffer and
pinned host staging; an item takes a free slot (back-pressure: `submit` blocks while every slot is
busy), and then:

    H2D on the copy-in stream  --event-->  stage(ctx) on the compute stream  --event-->
    D2H on the copy-out stream --event-->  result delivered, slot freed

Three streams, so the H2D of item i+1, the kernels of item i and the D2H of item i-1 run at the
same time. Stages are connected by events, never by host waits; the host waits only for the last
event of an item, on a completion thread. Every stage is FIFO, so results are delivered in
submission order (`submit` returns a Future; `map` yields results in order).

The kernel stage is any callable `stage(ctx: StageContext)`: it enqueues work on `ctx.stream`
reading `ctx.input` and writing `ctx.output` (device Buffers typed like the item and the output).
A `NovaModule` entry works as is (`lambda ctx: mod.forward(ctx.input, ctx.output)`): by default
the compute stream is the device's default stream, which compiled programs run on; such a call
returns when its kernels are done, which blocks only the pipeline's compute thread. A device-layer
launch works too (`dev.launch(fn, grid, block, [ctx.input, ctx.output, n], stream=ctx.stream)`).
A stage whose output size is known only when it has run (a compressor) returns the number of
valid leading output bytes; only those are copied back, and the result is a flat array of them.

Errors name the item and slot: an exception of the stage callable or of the device while the
item was in flight fails that item's Future with a `PipelineError`; the pipeline then stops, and
later items fail with a PipelineError naming the item that failed first (never a hang).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nova.errors import ArgumentError, NovaError, RuntimeFailure
from nova.runtime.device import Device
from nova.runtime.memory import Buffer, HostBuffer
from nova.runtime.selection import get_device
from nova.runtime.stream import Event, Stream

OutputSpec = tuple[Sequence[int], Any] | Callable[[np.ndarray], tuple[Sequence[int], Any]] | None


class PipelineError(RuntimeFailure):
    """An item of a Pipeline failed; `.item` and `.slot` say which, `.stage` where."""

    def __init__(self, message: str, item: int, slot: int, stage: str) -> None:
        super().__init__(message)
        self.item = item
        self.slot = slot
        self.stage = stage


@dataclass
class StageContext:
    """What the kernel stage gets for one item."""

    index: int  # the item's position in submission order
    slot: int
    item: np.ndarray  # the host input (read-only by contract)
    input: Buffer  # device copy of the item (same dtype and shape)
    output: Buffer  # device buffer for the result (the output spec's dtype and shape)
    stream: Stream  # enqueue the kernels here
    device: Device


@dataclass
class _Slot:
    """One slot's buffers and events; grown (never shrunk) as items need."""

    index: int
    ev_in: Event
    ev_done: Event
    ev_out: Event
    d_in: Buffer | None = None
    d_out: Buffer | None = None
    h_in: HostBuffer | None = None
    h_out: HostBuffer | None = None


@dataclass
class _Work:
    """One item in flight."""

    index: int
    slot: _Slot
    item: np.ndarray
    future: Future
    out: np.ndarray | None
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    keep: list[Any] = field(default_factory=list)  # host memory async copies still read
    error: BaseException | None = None
    stage: str = ""
    host_out: np.ndarray | None = None  # where D2H lands (out itself when pinned)
    failed_on: tuple[str, Stream] | None = None  # a cpu stream probe saw a failure
    valid: int = 0  # output bytes copied back (all, unless the stage returned fewer)


def _probe(stream: Stream, work: _Work, stage: str) -> None:
    """cpu streams keep a failure until synchronized and skip later work: a marker right after
    this item's work on `stream` notes whether the stream has failed by then (so the item that
    failed is named, not a later one that merely observed the failure)."""
    q = getattr(stream, "_q", None)
    if q is None:
        return

    def check() -> None:
        if q.error is not None and work.failed_on is None:
            work.failed_on = (stage, stream)

    stream.enqueue(check, "pipeline probe", always=True)  # type: ignore[attr-defined]


_STOP = object()


def _pinned_base(array: np.ndarray) -> bool:
    """True for a view of a HostBuffer (page-locked on cuda, safe to copy from asynchronously)."""
    obj: Any = array
    while obj is not None:
        if isinstance(obj, HostBuffer):
            return True
        obj = getattr(obj, "base", None)
    return False


def _grow_device(device: Device, buf: Buffer | None, nbytes: int) -> Buffer:
    if buf is not None and buf.nbytes >= nbytes:
        return buf
    if buf is not None:
        buf.free()
    return device.allocate(max(nbytes, 1))


def _grow_host(device: Device, buf: HostBuffer | None, nbytes: int) -> HostBuffer:
    if buf is not None and buf.nbytes >= nbytes:
        return buf
    if buf is not None:
        buf.free()
    return device.allocate_pinned(max(nbytes, 1))


class Pipeline:
    """A staged H2D -> stage -> D2H pipeline over `slots` slots (see the module docstring).

    `output`: None (same shape and dtype as the item), `(shape, dtype)`, or a callable
    `item -> (shape, dtype)`. `compute_stream`: where the stage runs (default: the device's
    default stream, the one compiled entries use).
    """

    def __init__(self, stage: Callable[[StageContext], Any], *, device: str | Device | None = None,
                 slots: int = 3, output: OutputSpec = None,
                 compute_stream: Stream | None = None, name: str = "pipeline") -> None:
        if not callable(stage):
            raise ArgumentError(f"{name}: the stage must be callable, got {type(stage).__name__}")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ArgumentError(f"{name}: slots must be a positive int, got {slots!r}")
        self.device = get_device(device)
        self.name = name
        self._stage = stage
        self._output = output
        self.copy_in_stream = self.device.create_stream()
        self.copy_out_stream = self.device.create_stream()
        self.compute_stream = self.device._stream(compute_stream)
        self._slots = [_Slot(i, self.device.create_event(), self.device.create_event(),
                             self.device.create_event()) for i in range(slots)]
        self._free: queue.Queue[_Slot] = queue.Queue()
        for slot in self._slots:
            self._free.put(slot)
        self._compute_q: queue.SimpleQueue = queue.SimpleQueue()
        self._done_q: queue.SimpleQueue = queue.SimpleQueue()
        self._submit_lock = threading.Lock()
        self._count = 0
        self._failed: PipelineError | None = None
        self._closed = False
        self.bytes_in = 0
        self.bytes_out = 0
        self.items_done = 0
        self._threads = [
            threading.Thread(target=self._compute_loop, daemon=True, name=f"nova-{name}-compute"),
            threading.Thread(target=self._complete_loop, daemon=True, name=f"nova-{name}-done"),
        ]
        for t in self._threads:
            t.start()

    @property
    def slots(self) -> int:
        return len(self._slots)

    # --- submission (caller's thread) ---------------------------------------------------------
    def submit(self, item: Any, out: np.ndarray | None = None) -> Future:
        """Queue one item; blocks while every slot is busy. The Future's result is the output as
        a new array, or `out` (filled) when given. Pinned inputs/outputs (views of HostBuffers)
        are copied from/to directly; other arrays go through the slot's pinned staging."""
        with self._submit_lock:
            if self._closed:
                raise RuntimeFailure(f"{self.name} was closed")
            if self._failed is not None:
                raise self._cancelled(self._count, self._failed)
            index = self._count
            self._count += 1
            array = self._as_array(item, index)
            shape, dtype = self._output_spec(array, index)
            if out is not None:
                self._check_out(out, shape, dtype, index)
            slot = self._free.get()  # back-pressure
            future: Future = Future()
            work = _Work(index, slot, array, future, out, shape, dtype)
            try:
                self._copy_in(work)
            except BaseException as exc:
                work.error, work.stage = exc, "copy-in"
            self._compute_q.put(work)
            return future

    def map(self, items: Iterable[Any], outs: Iterable[np.ndarray] | None = None) -> Iterator[Any]:
        """Results of every item, in order, keeping at most `slots` items in flight."""
        pending: deque[Future] = deque()
        out_iter = iter(outs) if outs is not None else None
        for index, item in enumerate(items):
            out = None
            if out_iter is not None:
                out = next(out_iter, None)
                if out is None:
                    raise ArgumentError(f"{self.name}: map: outs ran out at item {index}")
            if len(pending) >= len(self._slots):
                yield pending.popleft().result()
            pending.append(self.submit(item, out))
        while pending:
            yield pending.popleft().result()

    def _as_array(self, item: Any, index: int) -> np.ndarray:
        if isinstance(item, HostBuffer):
            return item.numpy()
        array = np.asarray(item)
        if array.dtype.hasobject:
            raise ArgumentError(f"{self.name}: item {index} is an array of Python objects")
        return array

    def _output_spec(self, array: np.ndarray, index: int) -> tuple[tuple[int, ...], np.dtype]:
        spec = self._output
        if spec is None:
            return tuple(array.shape), array.dtype
        try:
            shape, dtype = spec(array) if callable(spec) else spec
            return tuple(int(d) for d in shape), np.dtype(dtype)
        except (TypeError, ValueError) as exc:
            raise ArgumentError(f"{self.name}: item {index}: bad output spec: {exc}") from None

    def _check_out(self, out: np.ndarray, shape: tuple[int, ...], dtype: np.dtype,
                   index: int) -> None:
        if not isinstance(out, np.ndarray) or out.dtype != dtype or tuple(out.shape) != shape \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise ArgumentError(f"{self.name}: item {index}: out must be a writable C-contiguous "
                                f"{dtype} array of shape {shape}")

    def _copy_in(self, work: _Work) -> None:
        slot, array, dev = work.slot, work.item, self.device
        nbytes = array.nbytes
        slot.d_in = _grow_device(dev, slot.d_in, nbytes)
        src: np.ndarray = array
        if not (array.flags.c_contiguous and _pinned_base(array)):
            slot.h_in = _grow_host(dev, slot.h_in, nbytes)
            src = slot.h_in.numpy(np.uint8)[:nbytes]
            np.copyto(src, np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        work.keep.append(src)
        if nbytes:
            dev.copy_htod(slot.d_in, src, nbytes, stream=self.copy_in_stream)
        _probe(self.copy_in_stream, work, "copy-in")
        slot.ev_in.record(self.copy_in_stream)
        self.bytes_in += nbytes

    # --- the compute thread -------------------------------------------------------------------
    def _compute_loop(self) -> None:
        while True:
            work = self._compute_q.get()
            if work is _STOP:
                self._done_q.put(_STOP)
                return
            if work.error is None and self._failed is None:
                try:
                    self._run_stage(work)
                except BaseException as exc:
                    work.error, work.stage = exc, work.stage or "kernel"
            self._done_q.put(work)

    def _valid_bytes(self, valid: Any, out_bytes: int, work: _Work) -> int:
        """A stage may return how many leading output bytes are valid (e.g. a compressor)."""
        itemsize = work.out_dtype.itemsize
        if isinstance(valid, bool) or not isinstance(valid, int | np.integer) \
                or not 0 <= int(valid) <= out_bytes or int(valid) % itemsize:
            raise ArgumentError(f"the stage returned {valid!r}: it must return None or the "
                                f"number of valid output bytes (0..{out_bytes}, a multiple of "
                                f"{itemsize})")
        return int(valid)

    def _run_stage(self, work: _Work) -> None:
        slot, dev = work.slot, self.device
        out_bytes = int(np.prod(work.out_shape, dtype=np.int64)) * work.out_dtype.itemsize
        slot.d_out = _grow_device(dev, slot.d_out, out_bytes)
        assert slot.d_in is not None
        ctx = StageContext(work.index, slot.index, work.item,
                           slot.d_in.view(work.item.dtype, work.item.shape),
                           slot.d_out.view(work.out_dtype, work.out_shape),
                           self.compute_stream, dev)
        self.compute_stream.wait(slot.ev_in)
        work.stage = "kernel"
        valid = self._stage(ctx)
        if valid is not None:
            out_bytes = self._valid_bytes(valid, out_bytes, work)
        work.valid = out_bytes
        _probe(self.compute_stream, work, "kernel")
        slot.ev_done.record(self.compute_stream)
        work.stage = "copy-out"
        self.copy_out_stream.wait(slot.ev_done)
        target = work.out
        if target is None or not _pinned_base(target):
            slot.h_out = _grow_host(dev, slot.h_out, out_bytes)
            target = slot.h_out.numpy(np.uint8)[:out_bytes]
        work.host_out = target
        if out_bytes:
            dev.copy_dtoh(target, slot.d_out, out_bytes, stream=self.copy_out_stream)
        _probe(self.copy_out_stream, work, "copy-out")
        slot.ev_out.record(self.copy_out_stream)
        work.stage = "device"  # a fault found while waiting for the item (cuda)

    # --- the completion thread ----------------------------------------------------------------
    def _complete_loop(self) -> None:
        while True:
            work = self._done_q.get()
            if work is _STOP:
                return
            try:
                self._complete(work)
            finally:
                work.keep.clear()
                self._free.put(work.slot)

    def _complete(self, work: _Work) -> None:
        if work.error is None and self._failed is None:
            try:
                work.slot.ev_out.synchronize()
                if work.failed_on is not None:
                    work.stage, failed = work.failed_on
                    failed.synchronize()  # raises (and clears) the stream's failure
                result = self._deliver(work)
            except BaseException as exc:
                work.error = exc
            else:
                self.items_done += 1
                work.future.set_result(result)
                return
        if work.error is not None:
            failure = self._failure(work, work.error)
            if self._failed is None:
                self._failed = failure
            work.future.set_exception(failure)
            return
        assert self._failed is not None
        work.future.set_exception(self._cancelled(work.index, self._failed))

    def _deliver(self, work: _Work) -> np.ndarray:
        full = int(np.prod(work.out_shape, dtype=np.int64)) * work.out_dtype.itemsize
        nbytes = work.valid
        assert work.host_out is not None
        self.bytes_out += nbytes
        if work.out is not None:
            flat = work.out.reshape(-1).view(np.uint8)
            if work.host_out is not work.out:
                np.copyto(flat[:nbytes], work.host_out[:nbytes])
            return work.out if nbytes == full else flat[:nbytes].view(work.out_dtype)
        data = np.array(work.host_out[:nbytes]).view(work.out_dtype)
        return data.reshape(work.out_shape) if nbytes == full else data

    def _failure(self, work: _Work, exc: BaseException) -> PipelineError:
        if isinstance(exc, PipelineError):
            return exc
        kind = type(exc).__name__ if not isinstance(exc, NovaError) else ""
        detail = f"{kind}: {exc}" if kind else str(exc)
        error = PipelineError(f"{self.name}: item {work.index} (slot {work.slot.index}) failed "
                              f"in the {work.stage or 'kernel'} stage: {detail}",
                              work.index, work.slot.index, work.stage or "kernel")
        error.__cause__ = exc
        return error

    def _cancelled(self, index: int, first: PipelineError) -> PipelineError:
        return PipelineError(f"{self.name}: item {index} was not run: item {first.item} (slot "
                             f"{first.slot}) failed earlier in the {first.stage} stage",
                             index, -1, "cancelled")

    # --- shutdown -----------------------------------------------------------------------------
    def close(self) -> None:
        """Finish every submitted item, stop the threads, release streams and buffers. Item
        failures belong to their Futures: close never raises them."""
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
        self._compute_q.put(_STOP)
        for t in self._threads:
            t.join()
        for s in (self.copy_in_stream, self.compute_stream, self.copy_out_stream):
            with contextlib.suppress(NovaError):
                s.synchronize()  # only after failures can work of ours still be queued
        for s in (self.copy_in_stream, self.copy_out_stream):
            with contextlib.suppress(NovaError):
                s.close()
        for slot in self._slots:
            for buf in (slot.d_in, slot.d_out, slot.h_in, slot.h_out):
                if buf is not None:
                    buf.free()
            for ev in (slot.ev_in, slot.ev_done, slot.ev_out):
                ev.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<Pipeline {self.name} on {self.device.kind}:{self.device.index} "
                f"slots={len(self._slots)} done={self.items_done}>")


def serial_run(stage: Callable[[StageContext], Any], items: Iterable[Any], *,
               device: str | Device | None = None, output: OutputSpec = None,
               outs: Iterable[np.ndarray] | None = None) -> Iterator[Any]:
    """The same work without overlap (H2D, stage, D2H, wait, per item, on one stream): the
    baseline a Pipeline is measured against."""
    with Pipeline(stage, device=device, slots=1, output=output, name="serial") as pipe:
        yield from pipe.map(items, outs)


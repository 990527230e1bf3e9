"""`PageCompressor`: any number of pages through a ring of pinned slots on the GPU, with a CPU
fallback.

Compression of one call: the pages are cut into chunks of `pages_per_slot`; each chunk is an
item of a `nova.Pipeline` with `slots` slots (pinned staging, H2D on a copy-in stream, the
kernels on a compute stream, D2H on a copy-out stream, events in between, back-pressure when
every slot is busy, results in order). A slot's kernels are: compress (one warp per page, blocks
at page stride in scratch), a scan of the size table and a compaction of the blocks into device
memory; the size table and the payload's total come back behind an event, and a copy-out thread
(not the thread queueing kernels) waits for that total and queues one copy-engine D2H of
exactly the payload, after the previous slot's, into the call's pinned result: no host copy, and
the PCIe transfer beside the H2D runs on the copy engines. (The compaction kernel writing the
payload straight into pinned memory, which the device addresses, needs no hand-off, but the
SMs' stores over PCIe slowed the H2D to ~33 GB/s end to end against ~50 with the compaction in
device memory on an H100: scripts/lz4-pipeline-bound.py.) On cuda each slot's kernels run on a
stream of the slot's own (`slot_streams`), so the next slot's kernel fills the SMs while this
slot's last pages finish. Decompression: the chunk's
payload goes up, its size table and offsets from pinned memory, the pages come back into the
call's pinned result and the per-page statuses into a pinned status array.

Fallback: with no usable GPU the work runs on liblz4 (python-lz4, every core) with a warning.
When a slot fails (launch failure, kernel fault, lost context), the pages of that slot and of
every later slot of the call are compressed on the CPU: every page exactly once, in order,
decodable to the same bytes, and a `FallbackWarning` says what failed and how many pages moved.
The next call tries the device again (a fresh pipeline), so a transient failure costs one call.

`inject_fault=k` makes the k-th slot of every call fail, for tests: compression faults inside
the kernel (a device-side assert: KernelFault on the CPU device, CUDA_ERROR_ASSERT on cuda),
decompression fails its launch (Lz4LaunchError from the stage).
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

import nova
from nova.lz4 import cpu
from nova.lz4 import device as D
from nova.lz4 import kernels as K
from nova.lz4.batch import (
    DEFAULT_PAGE_SIZE,
    CompressedBatch,
    as_pages,
    check_page_size,
)
from nova.lz4.errors import CorruptDataError, Lz4ArgumentError

BACKENDS = ("cuda", "cpu", "liblz4")
"""cuda: the kernels on the GPU; cpu: the same kernels on Nova's CPU device; liblz4: the CPU
codec (python-lz4 on every core)."""


SLOT_BYTES = 64 << 20
"""Pages per pipeline slot on cuda, in bytes (16384 pages of 4 KiB). Each slot costs the host a
fixed ~0.45-0.95 ms of Python (its stage call and the threads' hand-overs, docs/lz4.md), so
32 MiB slots (0.6 ms of H2D each) left the copy-in stream idle 2-6 ms per 768 MiB on some H100
hosts; with 64 MiB slots it never idled and the slowest calls were faster (2026-11-27:
medians 43-45 GB/s either way on a fast host, 38.6 against 32.2 on a slow one)."""


class FallbackWarning(RuntimeWarning):
    """Work meant for the GPU ran on the CPU (no usable GPU, or a slot failed)."""


class Lz4LaunchError(nova.NovaError):
    """A slot's kernels could not be launched (raised by the decompression fault hook)."""


@dataclass(frozen=True)
class DecompressResult:
    """Decoded pages and a per-page status (0 ok; nonzero: the page's block is invalid and its
    row is zeros)."""

    pages: np.ndarray  # uint8[n, page_size]
    status: np.ndarray  # int32[n]

    @property
    def bad_pages(self) -> np.ndarray:
        return np.flatnonzero(self.status)


TAPER_MIN_PAGES = 1024
"""Slots of at least this many pages taper at the end of a call (chunk_bounds)."""


def chunk_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """The page ranges of a call's chunks: k pages each, except that with GPU-sized slots
    (k >= TAPER_MIN_PAGES) the last 2k pages go in halving chunks (down to k/8): the pipeline's
    tail, from the last H2D to the last copy-out, is one chunk's kernel and D2H with the H2D
    idle, so a small last chunk keeps it short (~1.8 ms for a 32 MiB slot on an H100)."""
    out: list[tuple[int, int]] = []
    lo = 0
    while lo < n:
        rest = n - lo
        size = k
        if k >= TAPER_MIN_PAGES and rest < 2 * k:
            size = max(k // 8, rest // 2)
        size = min(size, rest)
        out.append((lo, lo + size))
        lo += size
    return out


def _header_bytes(k: int) -> int:
    """Bytes of a k-entry size table padded to 16: what follows it (offsets; a payload that
    the compaction kernel writes with 16-byte stores) stays aligned."""
    return (4 * k + 15) // 16 * 16


def _resolve_backend(device: str | None) -> tuple[str, str | None]:
    """(backend, why the GPU is not used or None)."""
    if device is not None and device not in BACKENDS:
        raise Lz4ArgumentError(f"device must be one of {', '.join(BACKENDS)} (or None: cuda if "
                               f"usable, else liblz4), got {device!r}")
    if device in ("cpu", "liblz4"):
        return device, None
    try:
        nova.get_device("cuda")
    except nova.NovaError as exc:
        if device == "cuda":
            raise
        return "liblz4", f"no usable GPU ({exc})"
    return "cuda", None


def _is_device_array(obj: object) -> bool:
    if isinstance(obj, nova.Buffer):
        return True
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None or isinstance(obj, np.ndarray):
        return False
    try:
        return int(dev()[0]) not in (1, 3)  # kDLCPU, kDLCUDAHost: host memory
    except (TypeError, ValueError, IndexError):
        return False


class PageCompressor:
    """Compresses and decompresses batches of pages (module docstring).

    `device`: "cuda", "cpu" (Nova's CPU device running the same kernels), "liblz4" or None
    (cuda if usable, else liblz4 with a FallbackWarning). `slots`: pipeline depth;
    `pages_per_slot`: pages per chunk (default: 64 MiB of pages on cuda, 256 pages elsewhere).
    `slot_streams`: run each slot's compress kernel on a stream of its own so slots overlap
    on the SMs (default: on cuda; the module docstring says why). A kernel
    fault there reaches the pipeline through cuda's sticky context error; on the CPU device
    (which keeps a failure per stream) use it only without inject_fault.
    `slots` defaults to 6 on cuda (3 elsewhere): a slot is held from its H2D until the host
    has seen its last copy-out finish, so the pipeline keeps H2D busy only while slots x slot
    time >= that latency (H2D + kernel + compaction + host wake-ups, ~3-4x the H2D of a slot).
    `timeline=True` records timing events around every stage of every compress slot;
    `timeline_report()` then gives per-stage GPU times of the last call (bench/lz4.py
    --timeline prints them).
    """

    def __init__(self, page_size: int = DEFAULT_PAGE_SIZE, device: str | None = None, *,
                 slots: int | None = None, pages_per_slot: int | None = None,
                 inject_fault: int | None = None,
                 slot_streams: bool | None = None, timeline: bool = False) -> None:
        self.page_size = check_page_size(page_size)
        self.backend, why = _resolve_backend(device)
        if slots is None:
            slots = 6 if self.backend == "cuda" else 3
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise Lz4ArgumentError(f"slots must be a positive int, got {slots!r}")
        self.timeline = timeline
        self._tl: dict[int, dict[str, nova.Event]] = {}  # item -> stage events (timeline)
        self._tl_host: dict[str, list[float]] = {"submit": [], "stage": []}  # host seconds
        self._tl_start: nova.Event | None = None
        self._tl_bytes: dict[int, tuple[int, int]] = {}  # item -> (page bytes, stored bytes)
        self._tl_bounds: dict[int, tuple[int, int]] = {}  # item -> its pages (this call)
        if why is not None:
            warnings.warn(f"nova.lz4: {why}; using liblz4 on the CPU", FallbackWarning,
                          stacklevel=2)
        if pages_per_slot is None:
            pages_per_slot = SLOT_BYTES // self.page_size if self.backend == "cuda" else 256
        if isinstance(pages_per_slot, bool) or not isinstance(pages_per_slot, int) or \
                pages_per_slot < 1:
            raise Lz4ArgumentError(f"pages_per_slot must be a positive int, got "
                                   f"{pages_per_slot!r}")
        self.slots = slots
        self.pages_per_slot = pages_per_slot
        self.inject_fault = inject_fault
        self.slot_streams = (self.backend == "cuda" if slot_streams is None
                             else bool(slot_streams))
        self.fallbacks: list[str] = []  # the warning text of every fallback so far
        self._pipes: dict[str, nova.Pipeline] = {}
        self._scratch: dict[tuple[str, int], D.SlotScratch] = {}
        self._fault_item = -1
        self._meta: dict[int, tuple[np.ndarray, np.ndarray, int, int]] = {}
        self._dec_pages = np.zeros((0, self.page_size), np.uint8)  # this call's results
        self._dec_status = np.zeros(0, np.int32)
        self._out_payload = np.zeros(0, np.uint8)
        self._out_sizes = np.zeros(0, np.uint32)
        self._out_offsets = np.zeros(1, np.uint64)  # payload offsets of this call's pages
        self._offsets_done = 0  # pages whose offsets are in _out_offsets
        self._out_run = 0
        self._submitted: dict[str, int] = {}  # items submitted to each live pipeline
        self._meta_next = -1
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        # the copy-out thread and its work (_stage_copy_engine)
        self._copy_queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._copy_futures: dict[int, Future] = {}  # first page of a chunk -> its D2H
        self._copier: threading.Thread | None = None
        self._d2h_stream: nova.Stream | None = None

    # --- public API -----------------------------------------------------------------------
    def compress_pages(self, pages: Any) -> CompressedBatch:
        """Compress pages: a (n, page_size) array, any array/bytes/memoryview of n * page_size
        bytes, a list of pages, or a device array (nova.Buffer, DLPack)."""
        with self._lock:
            if _is_device_array(pages):
                return self._compress_device_array(pages)
            arr = as_pages(pages, self.page_size)
            if self.backend == "liblz4" or len(arr) == 0:
                return cpu.compress_pages(arr, self.page_size)
            return self._run_chunks("compress", arr, len(arr))

    def decompress_pages_status(self, batch: CompressedBatch) -> DecompressResult:
        """Decode every page; an invalid block sets its page's status instead of raising."""
        self._check_batch(batch)
        with self._lock:
            if self.backend == "liblz4" or batch.n_pages == 0:
                return DecompressResult(*cpu.decompress_pages_status(batch))
            return self._run_chunks("decompress", batch, batch.n_pages)

    def decompress_pages(self, batch: CompressedBatch) -> np.ndarray:
        """Decode every page (uint8[n, page_size]); CorruptDataError names invalid pages."""
        result = self.decompress_pages_status(batch)
        bad = result.bad_pages
        if len(bad):
            shown = ", ".join(map(str, bad[:8])) + (", ..." if len(bad) > 8 else "")
            raise CorruptDataError(f"{len(bad)} of {batch.n_pages} pages have invalid LZ4 "
                                   f"blocks (pages {shown})")
        return result.pages

    def submit_compress(self, pages: Any) -> Future:
        """compress_pages on the compressor's worker thread; Futures complete in order."""
        return self._pool().submit(self.compress_pages, pages)

    def submit_decompress(self, batch: CompressedBatch) -> Future:
        return self._pool().submit(self.decompress_pages, batch)

    def iter_compress(self, chunks: Iterable[Any], ahead: int = 2) -> Iterator[CompressedBatch]:
        """One CompressedBatch per chunk of pages, in order; compresses up to `ahead` chunks
        ahead of the consumer (bounded memory for streams longer than memory)."""
        return self._iter(chunks, self.submit_compress, ahead)

    def iter_decompress(self, batches: Iterable[CompressedBatch],
                        ahead: int = 2) -> Iterator[np.ndarray]:
        return self._iter(batches, self.submit_decompress, ahead)

    def close(self) -> None:
        with self._lock:
            for pipe in self._pipes.values():
                with contextlib.suppress(nova.NovaError):
                    pipe.close()
            self._pipes.clear()
            if self._copier is not None:
                self._copy_queue.put(None)
                self._copier.join()
                self._copier = None
            self._drain_copies()
            if self._d2h_stream is not None:
                with contextlib.suppress(nova.NovaError):
                    self._d2h_stream.close()
                self._d2h_stream = None
            for scratch in self._scratch.values():
                with contextlib.suppress(nova.NovaError):
                    scratch.free()
            self._scratch.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> PageCompressor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- helpers ----------------------------------------------------------------------------
    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="nova-lz4")
        return self._executor

    @staticmethod
    def _iter(items: Iterable[Any], submit: Callable[[Any], Future],
              ahead: int) -> Iterator[Any]:
        pending: deque[Future] = deque()
        for item in items:
            pending.append(submit(item))
            if len(pending) > max(ahead, 0):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def _check_batch(self, batch: CompressedBatch) -> None:
        if not isinstance(batch, CompressedBatch):
            raise Lz4ArgumentError(f"expected a CompressedBatch, got {type(batch).__name__}")
        if batch.page_size != self.page_size:
            raise Lz4ArgumentError(f"the batch holds {batch.page_size}-byte pages, this "
                                   f"compressor {self.page_size}-byte pages")
        batch.validate()

    def _device(self) -> nova.Device:
        return nova.get_device(self.backend)

    def _scratch_of(self, kind: str, slot: int) -> D.SlotScratch:
        return self._scratch.setdefault((kind, slot), D.SlotScratch())

    def _pipeline(self, kind: str) -> nova.Pipeline:
        pipe = self._pipes.get(kind)
        if pipe is None:
            dev = self._device()
            stage: Callable[[Any], object]
            if kind == "compress":
                stage, output = self._compress_stage, self._compress_output
            else:
                stage, output = self._decompress_stage, self._decompress_output
            pipe = nova.Pipeline(stage, device=dev, slots=self.slots, output=output,
                                 compute_stream=dev.create_stream(), name=f"lz4-{kind}")
            self._pipes[kind] = pipe
            self._submitted[kind] = 0
        return pipe

    def _drop_pipelines(self) -> None:
        for pipe in self._pipes.values():
            with contextlib.suppress(Exception):
                pipe.close()
        self._pipes.clear()
        self._submitted.clear()
        self._meta.clear()
        self._scratch.clear()  # the device memory may be gone with the context

    # --- the chunked pipeline run (both directions) -----------------------------------------
    def _run_chunks(self, kind: str, data: Any, n: int) -> Any:
        k = self.pages_per_slot
        bounds = chunk_bounds(n, k)
        results: list[Any] = [None] * len(bounds)
        failed: tuple[int, BaseException] | None = None
        try:
            running = self._pipeline(kind)
            pipe: nova.Pipeline | None = running
            self._results_for(kind, n, True)
        except nova.NovaError as exc:  # no usable device any more: all of it on the CPU
            pipe, failed = None, (0, exc)
            self._results_for(kind, n, False)
        if pipe is not None:
            base = self._submitted[kind]
            self._fault_item = -1 if self.inject_fault is None else base + self.inject_fault
            pending: deque[tuple[int, Future]] = deque()

            def settle(ci: int, fut: Future) -> None:
                nonlocal failed
                try:
                    results[ci] = self._finish(kind, fut.result(), *bounds[ci])
                except Exception as exc:
                    if failed is None or ci < failed[0]:
                        failed = (ci, exc)

            for ci, (lo, hi) in enumerate(bounds):
                if failed is not None:
                    break
                while len(pending) >= self.slots:
                    settle(*pending.popleft())
                if failed is not None:
                    break
                try:
                    pending.append((ci, self._submit(pipe, kind, data, lo, hi)))
                except Exception as exc:
                    failed = (ci, exc)
            while pending:
                settle(*pending.popleft())
        if failed is not None:
            self._fallback(kind, data, bounds, results, *failed)
        return self._take_results(kind)

    def _take_results(self, kind: str) -> Any:
        """This call's results (a CompressedBatch, or a DecompressResult), handed over."""
        if kind == "compress":
            sizes, offsets = self._out_sizes, self._out_offsets
            self._extend_offsets(len(sizes))  # what no chunk's _finish covered (a fallback)
            for index, (lo, hi) in self._tl_bounds.items():  # timeline: bytes per slot
                self._tl_bytes[index] = ((hi - lo) * self.page_size,
                                         int(offsets[hi] - offsets[lo]))
            self._tl_bounds = {}
            payload = self._out_payload[:int(offsets[-1])]
            self._out_payload, self._out_sizes = self._out_payload[:0], self._out_sizes[:0]
            self._out_offsets = self._out_offsets[:1]
            # the table, offsets and payload come from this call's own stages, in order: no
            # full validation (CompressedBatch.validate: ~15 ms for 196k pages on a slow host)
            return CompressedBatch(self.page_size, sizes, offsets, payload)
        pages, status = self._dec_pages, self._dec_status
        self._dec_pages, self._dec_status = pages[:0], status[:0]
        return DecompressResult(pages, status)

    def _results_for(self, kind: str, n: int, device: bool) -> None:
        """Where this call's results land. With a device, in pinned memory from the pool (the
        D2H copies go straight there: no host copy; the result arrays keep it alive, and it
        returns to the pool when they are dropped): compression gets the worst case (every page
        raw) and fills it front to back, slot after slot."""
        page = self.page_size
        if kind == "compress":
            if device:
                dev = self._device()
                host = dev.allocate_pinned(max(n * page, 1))
                self._out_payload = host.numpy()
                self._out_sizes = dev.allocate_pinned(max(4 * n, 4)).numpy(np.uint32)[:n]
            else:
                self._out_payload = np.empty(n * page, np.uint8)
                self._out_sizes = np.empty(n, np.uint32)
            self._out_offsets = np.zeros(n + 1, np.uint64)
            self._offsets_done = 0
            self._out_run = 0
            return
        if device:
            self._dec_pages = self._device().allocate_pinned(max(n * page, 1)).numpy(
                np.uint8)[:n * page].reshape(n, page)
            self._dec_status = self._device().allocate_pinned(max(4 * n, 4)).numpy(
                np.int32)[:n]
            self._dec_status[:] = 0
        else:
            self._dec_pages = np.empty((n, page), np.uint8)
            self._dec_status = np.zeros(n, np.int32)

    def _fallback(self, kind: str, data: Any, bounds: list[tuple[int, int]],
                  results: list[Any], first: int, exc: BaseException) -> None:
        lo = bounds[first][0]
        moved = bounds[-1][1] - lo
        cause = f"{type(exc).__name__}: {exc}".splitlines()[0]
        msg = (f"nova.lz4: {kind} slot {first} (pages {lo}..{bounds[first][1] - 1}) failed on "
               f"{self.backend} ({cause}); {kind}ing it and the {len(bounds) - first - 1} "
               f"later slots ({moved} pages) on the CPU with liblz4")
        self.fallbacks.append(msg)
        warnings.warn(msg, FallbackWarning, stacklevel=4)
        self._drain_copies()
        self._drop_pipelines()
        # slots after the failed one may have run and appended: refill from the failed slot on
        lo_first = bounds[first][0]
        if kind == "compress":
            self._offsets_done = min(self._offsets_done, lo_first)
            self._extend_offsets(lo_first)
            self._out_run = int(self._out_offsets[lo_first])
        for ci in range(first, len(bounds)):
            a, b = bounds[ci]
            if kind == "compress":
                part = cpu.compress_pages(data[a:b], self.page_size)
                self._out_sizes[a:b] = part.sizes
                end = self._out_run + len(part.payload)
                self._out_payload[self._out_run:end] = part.payload
                self._out_run = end
            else:
                self._dec_pages[a:b], self._dec_status[a:b] = cpu.decompress_pages_status(
                    _sub_batch(data, a, b))

    def _submit(self, pipe: nova.Pipeline, kind: str, data: Any, lo: int, hi: int) -> Future:
        """Submit one chunk; the pipeline numbers items in submission order, as we count."""
        index = self._submitted[kind]
        self._submitted[kind] = index + 1
        if kind == "compress":
            self._meta[index] = (np.empty(0, np.uint32), np.empty(0, np.uint64), lo, hi)
            if not self.timeline:
                return pipe.submit(data[lo:hi])
            # H2D start/end: events on the copy-in stream around the pipeline's H2D (the
            # submit lock orders them; "start" completes when the stream reaches it)
            self._tl_bounds[index] = (lo, hi)
            t0 = time.perf_counter()
            h0 = self._tl_event(index, "h2d0", pipe.copy_in_stream)
            fut = pipe.submit(data[lo:hi])
            self._tl_event(index, "h2d1", pipe.copy_in_stream)
            self._tl_host["submit"].append(time.perf_counter() - t0)
            if self._tl_start is None:
                self._tl_start = h0
            return fut
        batch: CompressedBatch = data
        start, stop = int(batch.offsets[lo]), int(batch.offsets[hi])
        self._meta[index] = (batch.sizes[lo:hi], batch.offsets[lo:hi + 1] - np.uint64(start),
                             lo, hi)
        self._meta_next = index
        try:  # D2H lands in the result (through the slot's pinned staging): no extra copy
            return pipe.submit(batch.payload[start:stop], self._dec_pages[lo:hi].reshape(-1))
        except BaseException:
            self._meta.pop(index, None)
            raise

    def _finish(self, kind: str, result: np.ndarray, lo: int, hi: int) -> Any:
        """The stages put every chunk's results in place; the Future only reports success
        (for compression, once the copy-out thread's D2H of the payload is done)."""
        done = self._copy_futures.pop(lo, None) if kind == "compress" else None
        if done is not None:
            done.result().synchronize()
        if kind == "compress":
            self._extend_offsets(hi)  # while later chunks still run on the device
        return True

    def _extend_offsets(self, upto: int) -> None:
        """The payload offsets of pages _offsets_done..upto (their sizes are in place)."""
        lo = self._offsets_done
        if upto > lo:
            part = self._out_offsets[lo + 1:upto + 1]
            np.cumsum(self._out_sizes[lo:upto] & np.uint32(0x7FFFFFFF), dtype=np.uint64,
                      out=part)
            part += self._out_offsets[lo]
            self._offsets_done = upto

    def _drain_copies(self) -> None:
        """Wait for every payload D2H the copy-out thread has been given (failed ones too):
        before a fallback writes the result on the CPU, no device copy may still land in it."""
        for done in list(self._copy_futures.values()):
            with contextlib.suppress(Exception):
                done.result().synchronize()
        self._copy_futures.clear()

    # --- the pipeline stages (run on the pipeline's compute thread) -------------------------
    def _compress_output(self, item: np.ndarray) -> tuple[tuple[int], Any]:
        return (4,), np.uint8  # the stage puts everything in place: nothing to copy back

    def _compress_stage(self, ctx: Any) -> int:
        """Compress kernel, scan and compaction of one slot (_stage_copy_engine: the payload's
        D2H is queued by the copy-out thread). Returns 0: the pipeline itself copies nothing
        back. With timeline=True the host time of the call is recorded."""
        t0 = time.perf_counter()
        try:
            return self._compress_stage_work(ctx)
        finally:
            if self.timeline:
                self._tl_host["stage"].append(time.perf_counter() - t0)

    def _compress_stage_work(self, ctx: Any) -> int:
        _, _, lo, hi = self._meta.pop(ctx.index)
        k, page = ctx.item.shape[0], self.page_size
        dev, stream = ctx.device, ctx.stream
        scratch = self._scratch_of("compress", ctx.slot)
        view = scratch.cache.view
        staged = view(scratch.grow(dev, "staged", k * page), np.uint8, k * page)
        offsets = view(scratch.grow(dev, "offsets", 8 * (k + 1)), np.uint64, k + 1)
        sizes = view(scratch.grow(dev, "sizes_dev", 4 * k), np.uint32, k)
        fault = 0 if ctx.index == self._fault_item else -1
        if self.slot_streams:
            # the slot's own stream: after this slot's H2D (the compute stream waited for it
            # and carries no kernels of ours), not after the previous slot's kernel
            if scratch.stream is None:
                scratch.stream = dev.create_stream()
                scratch.start_event = dev.create_event()
            assert scratch.start_event is not None
            scratch.start_event.record(stream)
            scratch.stream.wait(scratch.start_event)
            stream = scratch.stream
        # the page counters, then the scan's 16 bytes of scalars, in one buffer: one memset
        counters = scratch.grow(dev, "work_dev", 4 * K.WORK_WORDS + 16)
        dev.memset(counters, 0, 4 * K.WORK_WORDS + 16, stream=stream)
        scalars = view(counters, np.uint8, 16, 4 * K.WORK_WORDS)
        self._tl_event(ctx.index, "k0", stream)
        D.launch_compress(view(ctx.input, np.uint32, k * page // 4), staged, sizes, k, page,
                          stream, fault, work=counters, zero=False, cache=scratch.cache)
        self._tl_event(ctx.index, "k1", stream)
        return self._stage_copy_engine(ctx, scratch, stream, staged, sizes, offsets, scalars,
                                       lo, hi)

    def _stage_copy_engine(self, ctx: Any, scratch: D.SlotScratch, stream: nova.Stream,
                           staged: nova.Buffer, sizes: nova.Buffer, offsets: nova.Buffer,
                           scalars: nova.Buffer, lo: int, hi: int) -> int:
        """Compact the slot's blocks into device memory, copy the size
        table and the payload's size back, and hand the payload's D2H to the copy-out thread,
        which waits for the size (not this thread: the next slots' kernels go on being
        queued) and queues a copy-engine D2H of exactly the payload to its place in the result.
        The copy engine moves the bytes at full PCIe speed beside the H2D, where the SMs'
        stores to pinned memory slowed the H2D (scripts/lz4-pipeline-bound.py:
        ~33 GB/s end to end against ~50 with the compaction in device memory, H100)."""
        k, page, dev = ctx.item.shape[0], self.page_size, ctx.device
        view = scratch.cache.view
        payload = view(scratch.grow(dev, "payload_dev", k * page), np.uint8, k * page)
        scratch.d2h_queued.wait()  # the slot's previous payload D2H is queued ...
        if scratch.d2h_event is not None:
            stream.wait(scratch.d2h_event)  # ... and the compaction waits until it is done
        D.launch_scan_compact(staged, sizes, offsets, payload, k, page, stream,
                              scalars=scalars, zero=False, cache=scratch.cache)
        self._tl_event(ctx.index, "s1", stream)
        total = scratch.grow_pinned(dev, "host_total", 8)
        host_total = total.numpy(np.uint64)[:1]
        dev.copy_dtoh(host_total, view(offsets, np.uint64, 1, 8 * k), 8, stream=stream)
        if scratch.total_event is None:
            scratch.total_event = dev.create_event()
        scratch.total_event.record(stream)
        copy_out = self._pipes["compress"].copy_out_stream
        copy_out.wait(scratch.total_event)
        self._tl_event(ctx.index, "c1", copy_out)
        dev.copy_dtoh(self._out_sizes[lo:hi], sizes, 4 * k, stream=copy_out)
        scratch.d2h_queued.clear()
        done: Future = Future()
        self._copy_futures[lo] = done
        self._copy_queue.put((ctx.index, scratch, host_total, payload, done))
        self._copy_thread()
        return 0

    def _copy_thread(self) -> None:
        if self._copier is None or not self._copier.is_alive():
            self._copier = threading.Thread(target=self._copy_loop, daemon=True,
                                             name="nova-lz4-copy-out")
            self._copier.start()

    def _copy_loop(self) -> None:
        """The copy-out thread: per slot, in order, wait until the
        payload's size is on the host, place the payload after the previous slot's, and queue
        its D2H; the slot's Future gets the event behind that copy."""
        while True:
            job = self._copy_queue.get()
            if job is None:
                return
            index, scratch, host_total, payload, done = job
            try:
                assert scratch.total_event is not None
                scratch.total_event.synchronize()  # a fault of the slot's kernels raises here
                nbytes = int(host_total[0])
                start, self._out_run = self._out_run, self._out_run + nbytes
                dev = payload.device
                if self._d2h_stream is None:
                    self._d2h_stream = dev.create_stream()
                if nbytes:
                    dev.copy_dtoh(self._out_payload[start:start + nbytes], payload, nbytes,
                                  stream=self._d2h_stream)
                if scratch.d2h_event is None:
                    scratch.d2h_event = dev.create_event()
                scratch.d2h_event.record(self._d2h_stream)
                self._tl_event(index, "d1", self._d2h_stream)
                done.set_result(scratch.d2h_event)
            except BaseException as exc:
                done.set_exception(exc)
            finally:
                scratch.d2h_queued.set()

    def _decompress_output(self, item: np.ndarray) -> tuple[tuple[int], Any]:
        # the output spec is computed inside pipe.submit, right after _submit stored the meta
        k = len(self._meta[self._meta_next][0])
        return (k * self.page_size,), np.uint8

    def _decompress_stage(self, ctx: Any) -> None:
        """Upload the chunk's size table and offsets, decode, and copy the statuses straight to
        the call's pinned status array on the copy-out stream (after an event behind the
        kernel). No host wait: the pipeline's own D2H of the pages follows on the same stream,
        and a slot's pinned upload buffer is reused only after the slot's item completed."""
        sizes, offsets, lo, hi = self._meta.pop(ctx.index)
        if ctx.index == self._fault_item:
            raise Lz4LaunchError("injected launch failure (test hook)")
        k, page = len(sizes), self.page_size
        dev, stream = ctx.device, ctx.stream
        scratch = self._scratch_of("decompress", ctx.slot)
        meta_bytes = _header_bytes(k) + 8 * (k + 1)
        host = scratch.grow_pinned(dev, "meta", meta_bytes)
        meta = scratch.grow(dev, "meta_dev", meta_bytes)
        hview = host.numpy(np.uint8)[:meta_bytes]
        hview[:4 * k].view(np.uint32)[:] = sizes
        hview[_header_bytes(k):].view(np.uint64)[:] = offsets
        dev.copy_htod(meta, hview, meta_bytes, stream=stream)
        status = scratch.grow(dev, "status_dev", 4 * k)
        view = scratch.cache.view
        D.launch_decompress(view(ctx.input, np.uint8, max(ctx.item.size, 1)),
                            view(meta, np.uint64, k + 1, _header_bytes(k)),
                            view(meta, np.uint32, k),
                            view(ctx.output, np.uint32, k * page // 4),
                            view(status, np.int32, k), k, page, stream,
                            work=scratch.grow(dev, "work_dev", 4 * K.WORK_WORDS),
                            cache=scratch.cache)
        if scratch.event is None:
            scratch.event = dev.create_event()
        scratch.event.record(stream)
        copy_out = self._pipes["decompress"].copy_out_stream
        copy_out.wait(scratch.event)
        dev.copy_dtoh(self._dec_status[lo:hi], view(status, np.int32, k), 4 * k,
                      stream=copy_out)

    # --- timeline (instrumentation) ---------------------------------------------------------
    def _tl_event(self, index: int, name: str, stream: nova.Stream) -> nova.Event | None:
        if not self.timeline:
            return None
        ev = self._device().create_event(timing=True)
        ev.record(stream)
        self._tl.setdefault(index, {})[name] = ev
        return ev

    def timeline_report(self) -> dict[str, Any]:
        """Per-stage GPU times (ms) of the compress slots recorded since the last report (with
        timeline=True): for each slot, when (from the first H2D's start) and how long its H2D,
        compress kernel, scan + compaction ("scan") and the D2H of its payload ("d2h": from
        the size table's copy to the end of the payload's) ran, and totals: the span, each
        stage's busy time, the idle time of the H2D stream between slots, and the host time of
        submits and stage calls."""
        items, start, nbytes, host = self._tl, self._tl_start, self._tl_bytes, self._tl_host
        self._tl, self._tl_start, self._tl_bytes = {}, None, {}
        self._tl_host = {"submit": [], "stage": []}
        if not items or start is None:
            return {}
        stages = (("h2d", "h2d0", "h2d1"), ("kernel", "k0", "k1"), ("scan", "k1", "s1"),
                  ("compact", "c0", "c1"), ("d2h", "c1", "d1"))
        rows = []
        for index in sorted(items):
            ev = items[index]
            for e in ev.values():
                e.synchronize()
            row: dict[str, float] = {"item": index}
            for name, a, b in stages:
                if a in ev and b in ev:
                    row[f"{name}_start_ms"] = start.elapsed_ms(ev[a])
                    row[f"{name}_ms"] = ev[a].elapsed_ms(ev[b])
            if "d1" in ev:
                row["done_ms"] = start.elapsed_ms(ev["d1"])
            if index in nbytes:
                row["page_bytes"], row["stored_bytes"] = nbytes[index]
            rows.append(row)
        span = max(r.get("done_ms", 0.0) for r in rows)
        out: dict[str, Any] = {"slots": rows, "span_ms": span}
        for name, _, _ in stages:
            vals = [r[f"{name}_ms"] for r in rows if f"{name}_ms" in r]
            if vals:
                out[f"{name}_total_ms"] = float(sum(vals))
                out[f"{name}_median_ms"] = float(np.median(vals))
        pages_b = sum(r.get("page_bytes", 0) for r in rows)
        stored_b = sum(r.get("stored_bytes", 0) for r in rows)
        # GB/s while each stage ran (bytes moved: pages for H2D and the kernel, stored bytes and
        # the size table for the D2H)
        table_b = 4 * pages_b // self.page_size
        d2h_b = table_b if "compact_total_ms" in out else stored_b + table_b
        for name, moved in (("h2d", pages_b), ("kernel", pages_b), ("compact", stored_b),
                            ("d2h", d2h_b)):
            total = out.get(f"{name}_total_ms")
            if total and moved:
                out[f"{name}_gbps"] = moved / total / 1e6
        out["page_bytes"], out["stored_bytes"] = pages_b, stored_b
        h2d = [(r["h2d_start_ms"], r["h2d_start_ms"] + r["h2d_ms"]) for r in rows
               if "h2d_ms" in r]
        out["h2d_idle_ms"] = float(sum(max(0.0, b0 - a1) for (_, a1), (b0, _)
                                       in itertools.pairwise(h2d)))
        lat = [r["done_ms"] - r["h2d_start_ms"] for r in rows if "done_ms" in r
               and "h2d_start_ms" in r]
        if lat:
            out["slot_latency_median_ms"] = float(np.median(lat))
        # host seconds: the caller's submits (including waits for a free slot) and the
        # compute thread's stage calls (launches), per call; against the wall time they
        # show whether Python or the device bounds the pipeline
        for name, vals in host.items():
            if vals:
                out[f"host_{name}_total_ms"] = 1e3 * float(sum(vals))
                out[f"host_{name}_median_ms"] = 1e3 * float(np.median(vals))
        return out

    # --- device arrays in -------------------------------------------------------------------
    def _compress_device_array(self, pages: Any) -> CompressedBatch:
        if self.backend == "liblz4":
            buf = pages if isinstance(pages, nova.Buffer) else nova.from_dlpack(pages)
            return cpu.compress_pages(buf.numpy().reshape(-1).view(np.uint8), self.page_size)
        dev = self._device()
        buf = pages if isinstance(pages, nova.Buffer) else nova.from_dlpack(pages, dev)
        if buf.device is not dev:
            raise Lz4ArgumentError(f"the pages live on {buf.device.kind}, this compressor "
                                   f"runs on {dev.kind}")
        if buf.nbytes % self.page_size or buf.ptr % 4:
            raise Lz4ArgumentError(f"device pages must be 4-byte aligned and a multiple of the "
                                   f"page size {self.page_size} ({buf.nbytes} bytes)")
        n, page, k = buf.nbytes // self.page_size, self.page_size, self.pages_per_slot
        stream = dev.create_stream()
        scratch = D.SlotScratch()
        parts: list[CompressedBatch] = []
        try:
            for lo in range(0, n, k):
                m = min(k, n - lo)
                out = scratch.grow(dev, "meta_dev", _header_bytes(m) + m * page)
                staged = scratch.grow(dev, "staged", m * page)
                offsets = scratch.grow(dev, "offsets", 8 * (m + 1))
                sizes = D.view(out, np.uint32, m)
                src = D.view(buf, np.uint32, m * page // 4, lo * page)
                D.launch_compress(src, D.view(staged, np.uint8, m * page), sizes, m, page,
                                  stream)
                D.launch_scan_compact(D.view(staged, np.uint8, m * page), sizes,
                                      D.view(offsets, np.uint64, m + 1),
                                      D.view(out, np.uint8, m * page, _header_bytes(m)), m,
                                      page, stream)
                total = np.zeros(1, np.uint64)
                dev.copy_dtoh(total, D.view(offsets, np.uint64, 1, 8 * m), 8, stream=stream)
                stream.synchronize()
                host = np.empty(_header_bytes(m) + int(total[0]), np.uint8)
                dev.copy_dtoh(host, out, host.nbytes, stream=stream)
                stream.synchronize()
                parts.append(CompressedBatch.from_sizes(
                    page, host[:4 * m].view(np.uint32), host[_header_bytes(m):]))
        finally:
            scratch.free()
            with contextlib.suppress(nova.NovaError):
                stream.close()
        return CompressedBatch.concat(parts, self.page_size)


def _sub_batch(batch: CompressedBatch, lo: int, hi: int) -> CompressedBatch:
    start, stop = int(batch.offsets[lo]), int(batch.offsets[hi])
    return CompressedBatch(batch.page_size, batch.sizes[lo:hi],
                           batch.offsets[lo:hi + 1] - np.uint64(start),
                           batch.payload[start:stop])


def compress_pages(pages: Any, page_size: int = DEFAULT_PAGE_SIZE,
                   device: str | None = None) -> CompressedBatch:
    """One-shot PageCompressor(page_size, device).compress_pages(pages)."""
    with PageCompressor(page_size, device) as comp:
        return comp.compress_pages(pages)


def decompress_pages(batch: CompressedBatch, device: str | None = None) -> np.ndarray:
    """One-shot PageCompressor(batch.page_size, device).decompress_pages(batch)."""
    with PageCompressor(batch.page_size, device) as comp:
        return comp.decompress_pages(batch)

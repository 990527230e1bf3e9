"""Running the LZ4 kernels on device buffers: launch geometry, scratch, and the device-side
steps of one slot (compress -> scan the sizes -> compact the payload; decompress).

Why compaction on the device: the compressor writes each page's block at a fixed page-sized
stride (pages are compressed in parallel, so no page knows where the previous one ends); a scan
of the size table and a copy kernel make the payload contiguous, so only the compressed bytes
cross PCIe on the way back, and the host never touches the payload page by page.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

import nova
from nova.lz4 import kernels as K
from nova.runtime.device import numpy_dtype

SCAN_THREADS = 1024
COMPACT_WARPS = 8
LAUNCH_CACHE_LIMIT = 64
"""Entries a LaunchCache keeps of each kind (views, launchers) before it starts over."""


class LaunchCache:
    """A slot's memo of the buffer views and prepared kernel launches its steps repeat.

    A pipeline slot runs the same three or four kernels on the same scratch buffers for every
    chunk. Made afresh each time, the views (Buffer.wrap) and general launches (signature
    inference, the launch guards) cost the pipeline's compute thread ~0.1-0.3 ms per slot on
    an H100 host, while the slot's H2D takes ~0.6 ms: the host bounded the pipeline on slower
    hosts (bench/lz4.py --timeline). A view is kept per (buffer, dtype, count, offset) and
    found again only for the same buffer object; a launcher (`kernel.prepare`) per kernel,
    grid, block, shared memory and stream. Views of a buffer are dropped when the scratch
    replaces it (`forget`)."""

    def __init__(self) -> None:
        self._views: dict[tuple[int, Any, int, int], tuple[nova.Buffer, nova.Buffer]] = {}
        self._launchers: dict[tuple[Any, ...], Any] = {}

    def view(self, buf: nova.Buffer, dtype: npt.DTypeLike, count: int,
             byte_offset: int = 0) -> nova.Buffer:
        """`view(buf, dtype, count, byte_offset)`, the same object each time."""
        key = (id(buf), dtype, count, byte_offset)
        hit = self._views.get(key)
        if hit is not None and hit[0] is buf:
            return hit[1]
        if len(self._views) >= LAUNCH_CACHE_LIMIT:
            self._views.clear()
        made = view(buf, dtype, count, byte_offset)
        self._views[key] = (buf, made)
        return made

    def forget(self, buf: nova.Buffer) -> None:
        """Drop the views of `buf` (it is being freed)."""
        self._views = {k: v for k, v in self._views.items() if v[0] is not buf}

    def launch(self, kernel: Any, args: tuple[Any, ...], grid: int, block: int,
               stream: nova.Stream, shared_bytes: int = 0) -> None:
        """kernel.launch(*args, ...) through a prepared launcher of this configuration (a
        prepared launch takes the general path itself for arguments its signature does not
        fit, with the same errors)."""
        key = (kernel, grid, block, shared_bytes, stream)
        run = self._launchers.get(key)
        if run is None:
            if len(self._launchers) >= LAUNCH_CACHE_LIMIT:
                self._launchers.clear()
            run = kernel.prepare(*args, grid=grid, block=block, stream=stream,
                                 shared_bytes=shared_bytes)
            self._launchers[key] = run
        run(*args)


def _viewer(cache: LaunchCache | None) -> Any:
    """`view`, or the cache's (the same views again) when there is a cache."""
    return view if cache is None else cache.view


def _launch(cache: LaunchCache | None, kernel: Any, args: tuple[Any, ...], grid: int,
            block: int, stream: nova.Stream, shared_bytes: int = 0) -> None:
    if cache is None:
        kernel.launch(*args, grid=grid, block=block, stream=stream, shared_bytes=shared_bytes)
    else:
        cache.launch(kernel, args, grid, block, stream, shared_bytes)


@dataclass
class SlotScratch:
    """Device scratch of one slot, grown (never shrunk) as chunks need."""

    staged: nova.Buffer | None = None  # uint8[k * page_size]: blocks at page stride
    offsets: nova.Buffer | None = None  # uint64[k + 1]
    host_total: nova.HostBuffer | None = None  # pinned uint64[1]: offsets[k] read back
    meta: nova.HostBuffer | None = None  # pinned: sizes/offsets of a decompression chunk
    meta_dev: nova.Buffer | None = None
    status_dev: nova.Buffer | None = None  # int32[k]: per-page decode status
    sizes_dev: nova.Buffer | None = None  # uint32[k]: the compress kernel's size table
    event: nova.Event | None = None  # behind the slot's kernel (orders the status copy)
    stream: nova.Stream | None = None  # the slot's own compute stream (slot_streams)
    start_event: nova.Event | None = None  # the slot's H2D is done (slot_streams)
    payload_dev: nova.Buffer | None = None  # the slot's compacted payload (copy-engine D2H)
    work_dev: nova.Buffer | None = None  # page-kernel counters (+ the scan's scalars: compress)
    total_event: nova.Event | None = None  # after the scan's total reached host_total
    d2h_event: nova.Event | None = None  # after the payload's D2H (the buffer is free again)
    d2h_queued: threading.Event = field(default_factory=threading.Event)
    """Set when the copy-out thread has queued (or given up) the slot's last payload D2H:
    only then does d2h_event stand for it."""
    cache: LaunchCache = field(default_factory=LaunchCache)

    def __post_init__(self) -> None:
        self.d2h_queued.set()  # nothing queued yet

    def grow(self, device: nova.Device, name: str, nbytes: int) -> nova.Buffer:
        """Device buffer `name`, reallocated when smaller than `nbytes`."""
        buf = getattr(self, name)
        if buf is None or buf.nbytes < nbytes:
            if buf is not None:
                self.cache.forget(buf)
                buf.free()
            buf = device.allocate(max(nbytes, 8))
            setattr(self, name, buf)
        return buf

    def grow_pinned(self, device: nova.Device, name: str, nbytes: int) -> nova.HostBuffer:
        """Pinned host buffer `name`, reallocated when smaller than `nbytes`."""
        buf = getattr(self, name)
        if buf is None or buf.nbytes < nbytes:
            if buf is not None:
                buf.free()
            buf = device.allocate_pinned(max(nbytes, 8))
            setattr(self, name, buf)
        return buf

    def free(self) -> None:
        for name in ("staged", "offsets", "host_total", "meta", "meta_dev", "status_dev",
                     "sizes_dev", "payload_dev", "work_dev"):
            buf = getattr(self, name)
            if buf is not None:
                buf.free()
                setattr(self, name, None)
        for name in ("event", "start_event", "total_event", "d2h_event"):
            ev = getattr(self, name)
            if ev is not None:
                ev.close()
                setattr(self, name, None)
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        self.cache = LaunchCache()  # its views of the freed buffers, its launchers' streams


def view(buf: nova.Buffer, dtype: npt.DTypeLike, count: int, byte_offset: int = 0) -> nova.Buffer:
    """`count` elements of `dtype` at `byte_offset` into `buf` (no copy)."""
    itemsize = numpy_dtype(dtype).itemsize
    return nova.Buffer.wrap(buf.device, buf.ptr + byte_offset, max(count * itemsize, itemsize),
                            dtype, (count,), owner=buf)


def launch_compress(src32: nova.Buffer, staged: nova.Buffer, sizes: nova.Buffer, n: int,
                    page_size: int, stream: nova.Stream, fault_page: int = -1,
                    hash_bits: int | None = None, in_batch: int | None = None,
                    warps: int | None = None, work: nova.Buffer | None = None,
                    every_match: bool = True, zero: bool = True,
                    cache: LaunchCache | None = None) -> None:
    """The compression kernel (K.compress_kernel) over n pages: src32 uint32[n * page_size /
    4] -> staged uint8 (blocks at page stride) and sizes uint32[n]. hash_bits: the hash
    table's log2 entries (default K.hash_log(page_size)); the block shape follows from it
    unless `warps` (pages per block) is given. in_batch: K.IN_BATCH_* (default K.IN_BATCH).
    work: uint32[K.WORK_WORDS] device scratch for the page counters (zeroed here; default: a
    new one from the pool; zero=False: the caller zeroed it in stream order). every_match=False:
    the kernel that emits one match per batch (A/B). cache: the slot's LaunchCache (views and
    a prepared launch), or None (a general launch)."""
    bits = K.hash_log(page_size) if hash_bits is None else hash_bits
    if warps is None:
        warps = K.compress_warps_per_block(page_size, bits)
    smem = K.compress_shared_bytes(page_size, warps, bits)
    work = _work_counter(stream, work, zero, cache)
    kernel = K.compress_kernel(page_size, bits, K.IN_BATCH if in_batch is None else in_batch,
                              every_match)
    args = (src32, staged, sizes, n, fault_page, work)
    _launch(cache, kernel, args, resident_grid(kernel, args, stream.device, n, warps, smem),
            32 * warps, stream, smem)


_RESIDENT: dict[tuple[Any, nova.Device, int, int], int] = {}
"""(kernel, device, warps, shared bytes) -> blocks per multiprocessor (the driver's count)."""


def resident_grid(kernel: Any, args: tuple[Any, ...], device: nova.Device, n: int, warps: int,
                  shared_bytes: int) -> int:
    """Blocks for a page kernel over n pages with `warps` pages per block: enough for one page
    per warp, but no more than fit on the device at once (the occupancy calculator's count:
    registers or shared memory bound them); the kernels' warps then claim the remaining pages
    one at a time (their `work` counter), so a warp whose pages were quick takes more instead
    of idling until its block retires. A grid past what is resident would leave a second,
    partial wave of blocks that start only as the first ones retire: a tail of idle SMs."""
    key = (kernel, device, warps, shared_bytes)
    per_sm = _RESIDENT.get(key)
    if per_sm is None:
        per_sm = kernel.max_active_blocks(*args, block=32 * warps, shared_bytes=shared_bytes,
                                          device=device)
        _RESIDENT[key] = per_sm
    return max(1, min(-(-n // warps), max(1, per_sm) * device.properties.multiprocessor_count))


def _work_counter(stream: nova.Stream, work: nova.Buffer | None, zero: bool = True,
                  cache: LaunchCache | None = None) -> nova.Buffer:
    """The page counters (uint32[K.WORK_WORDS]) of one page-kernel launch on `stream`, zeroed
    in stream order (unless the caller did: zero=False): `work` (a slot's scratch), or a new
    buffer from the pool."""
    nbytes = 4 * K.WORK_WORDS
    if work is None:
        work = stream.device.allocate(nbytes, stream=stream)
        zero = True
    elif work.nbytes < nbytes:
        raise ValueError(f"page-kernel work scratch needs {nbytes} bytes, got {work.nbytes}")
    if zero:
        stream.device.memset(work, 0, nbytes, stream=stream)
    return _viewer(cache)(work, np.uint32, K.WORK_WORDS)


def launch_scan(sizes: nova.Buffer, offsets: nova.Buffer, n: int, run: nova.Buffer,
                ready: nova.Buffer, stream: nova.Stream, cache: LaunchCache | None = None
                ) -> None:
    """offsets = run + exclusive scan of the stored sizes (offsets[n] = the end); run advances
    to the end (a uint64[1] device scalar); ready (uint32[1]) becomes 1."""
    _launch(cache, K.scan_sizes_kernel, (sizes, offsets, n, run, ready), 1, SCAN_THREADS,
            stream)


def launch_compact(staged: nova.Buffer, sizes: nova.Buffer, offsets: nova.Buffer,
                   payload: nova.Buffer, n: int, page_size: int, ready: nova.Buffer,
                   stream: nova.Stream, cache: LaunchCache | None = None) -> None:
    """The blocks (at page stride in `staged`) to `payload` at `offsets`: device memory, or
    pinned host memory addressed from the device (unified addressing); only if `ready` was
    set by the scan."""
    if payload.ptr % 16 or staged.ptr % 4:
        raise ValueError("compaction needs a 16-byte aligned payload and 4-byte aligned "
                         "staging")
    v = _viewer(cache)
    args = (v(staged, np.uint32, n * page_size // 4), sizes, offsets, payload,
            v(payload, np.uint32, payload.nbytes // 4), n, page_size, ready)
    _launch(cache, K.compact_kernel, args, -(-n // COMPACT_WARPS), 32 * COMPACT_WARPS, stream)


def launch_scan_compact(staged: nova.Buffer, sizes: nova.Buffer, offsets: nova.Buffer,
                        payload: nova.Buffer, n: int, page_size: int,
                        stream: nova.Stream, scalars: nova.Buffer | None = None,
                        zero: bool = True, cache: LaunchCache | None = None) -> None:
    """offsets = exclusive scan of the stored sizes (offsets[n] = total); payload = the blocks
    back to back from its start. `scalars`: 16 bytes of device scratch for the scan's running
    position and ready flag (zeroed here unless zero=False: the caller zeroed them in stream
    order; default: a new buffer from the pool). cache: as launch_compress's."""
    if scalars is None:
        scalars = staged.device.allocate(16, stream=stream)
        zero = True
    if zero:
        staged.device.memset(scalars, 0, 16, stream=stream)
    v = _viewer(cache)
    ready = v(scalars, np.uint32, 1, 8)
    launch_scan(sizes, offsets, n, v(scalars, np.uint64, 1), ready, stream, cache)
    launch_compact(staged, sizes, offsets, payload, n, page_size, ready, stream, cache)
    scalars.record_stream(stream)  # freed only after the kernels that use it


def launch_decompress(payload: nova.Buffer, offsets: nova.Buffer, sizes: nova.Buffer,
                      dst32: nova.Buffer, status: nova.Buffer, n: int, page_size: int,
                      stream: nova.Stream, warps: int | None = None,
                      work: nova.Buffer | None = None, cache: LaunchCache | None = None
                      ) -> None:
    """decompress_pages_kernel over n pages: dst32 uint32[n * page_size / 4], status int32[n].
    `warps`: pages per block (default K.warps_per_block(page_size)); `work`: as
    launch_compress's."""
    if warps is None:
        warps = K.warps_per_block(page_size)
    smem = K.decompress_shared_bytes(page_size, warps)
    work = _work_counter(stream, work, True, cache)
    args = (payload, offsets, sizes, dst32, status, n, page_size, work)
    kernel = K.decompress_pages_kernel
    _launch(cache, kernel, args, resident_grid(kernel, args, stream.device, n, warps, smem),
            32 * warps, stream, smem)

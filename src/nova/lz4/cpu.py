"""The CPU codec: liblz4 (through python-lz4's block API) on all cores.

It is the reference the GPU kernels are measured against, the fallback when no GPU is usable or
a GPU slot faults, and the decoder the CLI uses for the short last page of a file.

**Why worker processes.** python-lz4 releases the GIL inside each call, but a 4 KiB page is a
few microseconds of liblz4, and every call takes the GIL back: with a thread pool the threads
convoy on the GIL handoff (each handoff wakes a thread, which costs about as much as the page),
so 16 threads did no better than one (0.3-0.5 GB/s on a 16-core host). Large batches
(`PROCESS_MIN_BYTES` and more) therefore go to a pool of worker processes (one per core,
started once, on first use, with the `spawn` method so a CUDA context or threads of this
process never leak into them). The pages and the results travel through shared memory, not
pipes: an anonymous memory file (`memfd`) that each worker maps through
`/proc/<pid>/fd/<fd>`, so nothing is left behind if a process dies. Each worker compresses a
contiguous range of pages in a tight loop into its own region of the output, back to back, and
returns only its size table; the parent then copies one contiguous run per range into the
payload. Small batches (and any host where the pool cannot start) use threads.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
import threading
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import lz4.block
import numpy as np

from nova.lz4.batch import RAW_FLAG, CompressedBatch, as_pages, check_page_size

STATUS_OK = 0
STATUS_CORRUPT = 1
"""Per-page decode status: 0 ok, 1 the block is invalid (the page's output is zeros)."""

PROCESS_MIN_BYTES = 8 << 20
"""Batches of at least this many uncompressed bytes use the worker processes."""

_POOL: ThreadPoolExecutor | None = None
_PROCS: ProcessPoolExecutor | None = None
_PROCS_BROKEN = False
_LOCK = threading.Lock()


def _workers() -> int:
    return os.cpu_count() or 1


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="nova-lz4-cpu")
    return _POOL


def _procs() -> ProcessPoolExecutor | None:
    """The worker processes (None where they cannot be used: then threads)."""
    global _PROCS
    if _PROCS_BROKEN or not os.path.isdir(f"/proc/{os.getpid()}/fd") \
            or not hasattr(os, "memfd_create"):
        return None
    if _PROCS is None:
        _PROCS = ProcessPoolExecutor(max_workers=_workers(),
                                     mp_context=multiprocessing.get_context("spawn"))
    return _PROCS


def _chunks(n: int, workers: int, least: int = 64) -> list[tuple[int, int]]:
    step = max(least, -(-n // (4 * workers)))
    return [(i, min(i + step, n)) for i in range(0, n, step)]


def compress_block(page: bytes | memoryview | np.ndarray) -> bytes:
    """One page as an LZ4 block (liblz4's default fast mode, no size prefix)."""
    return lz4.block.compress(page, mode="default", store_size=False)


def decompress_block(block: bytes | memoryview, size: int) -> bytes:
    """One LZ4 block that must decode to exactly `size` bytes (liblz4's safe decoder)."""
    out = lz4.block.decompress(block, uncompressed_size=size)
    if len(out) != size:
        raise lz4.block.LZ4BlockError(f"block decodes to {len(out)} bytes, not {size}")
    return out


# --- shared memory --------------------------------------------------------------------------
class _Shared:
    """A memfd of `nbytes` mapped here; workers map it by (path, size, generation, role) and
    keep one mapping per role (a grown buffer replaces its predecessor there too)."""

    _generation = 0

    def __init__(self, role: str, nbytes: int) -> None:
        _Shared._generation += 1
        self.generation = _Shared._generation
        self.nbytes = max(nbytes, mmap.PAGESIZE)
        self.fd = os.memfd_create("nova-lz4", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.nbytes)
        self.map = mmap.mmap(self.fd, self.nbytes)
        self.array = np.frombuffer(self.map, np.uint8)
        self.spec = (f"/proc/{os.getpid()}/fd/{self.fd}", self.nbytes, self.generation, role)

    def close(self) -> None:
        del self.array
        with contextlib.suppress(BufferError):  # a view is still alive: it keeps the mapping
            self.map.close()
        os.close(self.fd)


_SHARED: dict[str, _Shared] = {}


def _shared(role: str, nbytes: int) -> _Shared:
    """This process's shared buffer `role`, grown (never shrunk) to `nbytes`."""
    buf = _SHARED.get(role)
    if buf is None or buf.nbytes < nbytes:
        if buf is not None:
            buf.close()
        buf = _SHARED[role] = _Shared(role, nbytes + (nbytes >> 3))
    return buf


Spec = tuple[str, int, int, str]
_WORKER_MAPS: dict[str, tuple[int, mmap.mmap]] = {}


def _wmap(spec: Spec) -> mmap.mmap:
    """In a worker: the parent's shared buffer `spec`, mapped once per generation (the
    mapping of an older generation of the same role is dropped)."""
    path, nbytes, gen, key = spec
    cached = _WORKER_MAPS.get(key)
    if cached is not None and cached[0] == gen:
        return cached[1]
    if cached is not None:
        cached[1].close()
    fd = os.open(path, os.O_RDWR)
    try:
        m = mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)
    _WORKER_MAPS[key] = (gen, m)
    return m


def _compress_range(src_spec: Spec, dst_spec: Spec, page_size: int, lo: int, hi: int) -> bytes:
    """In a worker: pages lo..hi-1 of src, their stored bytes back to back into dst from
    lo * page_size; returns the size table (uint32, RAW_FLAG) as bytes."""
    src = memoryview(_wmap(src_spec))
    dst = memoryview(_wmap(dst_spec))
    sizes = np.empty(hi - lo, np.uint32)
    at = lo * page_size
    compress = lz4.block.compress
    for i in range(lo, hi):
        page = src[i * page_size:(i + 1) * page_size]
        block = compress(page, store_size=False)
        n = len(block)
        if n >= page_size:
            dst[at:at + page_size] = page
            sizes[i - lo] = page_size | RAW_FLAG
            at += page_size
        else:
            dst[at:at + n] = block
            sizes[i - lo] = n
            at += n
    return sizes.tobytes()


def _decompress_range(src_spec: Spec, dst_spec: Spec, page_size: int, lo: int,
                      offsets: np.ndarray, raw: np.ndarray) -> bytes:
    """In a worker: pages lo.. of a payload in src (page i's stored bytes at offsets[i - lo]..
    offsets[i - lo + 1]) decoded into dst at page stride; returns the statuses as bytes."""
    src = memoryview(_wmap(src_spec))
    dst = memoryview(_wmap(dst_spec))
    n = len(raw)
    status = np.zeros(n, np.int32)
    decompress = lz4.block.decompress
    for k in range(n):
        a, b = int(offsets[k]), int(offsets[k + 1])
        at = (lo + k) * page_size
        if raw[k]:
            dst[at:at + page_size] = src[a:b]
            continue
        try:
            out = decompress(src[a:b], uncompressed_size=page_size)
        except (lz4.block.LZ4BlockError, ValueError):
            out = b""
        if len(out) != page_size:
            status[k] = STATUS_CORRUPT
            dst[at:at + page_size] = bytes(page_size)
        else:
            dst[at:at + page_size] = out
    return status.tobytes()


def _use_procs(nbytes: int) -> ProcessPoolExecutor | None:
    return _procs() if nbytes >= PROCESS_MIN_BYTES and _workers() > 1 else None


def _broken() -> None:
    global _PROCS, _PROCS_BROKEN
    _PROCS_BROKEN = True
    if _PROCS is not None:
        _PROCS.shutdown(wait=False, cancel_futures=True)
        _PROCS = None


# --- batches ----------------------------------------------------------------------------------
def compress_pages(pages: object, page_size: int = 4096) -> CompressedBatch:
    """Compress pages on every core; a page whose block is not smaller is stored raw."""
    arr = as_pages(pages, page_size)
    procs = _use_procs(arr.nbytes)
    if procs is not None:
        try:
            with _LOCK:
                return _compress_procs(procs, arr, page_size)
        except (BrokenProcessPool, OSError):
            _broken()
    return _compress_threads(arr, page_size)


def _compress_procs(procs: Executor, arr: np.ndarray, page_size: int) -> CompressedBatch:
    n = len(arr)
    src = _shared("src", arr.nbytes)
    dst = _shared("dst", arr.nbytes)
    src.array[:arr.nbytes] = arr.reshape(-1)
    ranges = _chunks(n, _workers(), 256)
    futures = [procs.submit(_compress_range, src.spec, dst.spec, page_size, lo, hi)
               for lo, hi in ranges]
    sizes = np.concatenate([np.frombuffer(f.result(), np.uint32) for f in futures])
    stored = (sizes & np.uint32(~RAW_FLAG & 0xFFFFFFFF)).astype(np.int64)
    payload = np.empty(int(stored.sum()), np.uint8)
    at = 0
    for lo, hi in ranges:
        run = int(stored[lo:hi].sum())
        payload[at:at + run] = dst.array[lo * page_size:lo * page_size + run]
        at += run
    return CompressedBatch.from_sizes(page_size, sizes, payload)


def _compress_threads(arr: np.ndarray, page_size: int) -> CompressedBatch:
    n = len(arr)
    blocks: list[bytes] = [b""] * n

    def work(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            blocks[i] = compress_block(arr[i])

    list(_pool().map(lambda r: work(*r), _chunks(n, _workers())))
    sizes = np.empty(n, np.uint32)
    parts: list[bytes | np.ndarray] = []
    for i, block in enumerate(blocks):
        if len(block) >= page_size:
            sizes[i] = page_size | RAW_FLAG
            parts.append(arr[i])
        else:
            sizes[i] = len(block)
            parts.append(np.frombuffer(block, np.uint8))
    payload = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return CompressedBatch.from_sizes(page_size, sizes, payload)


def decompress_pages_status(batch: CompressedBatch) -> tuple[np.ndarray, np.ndarray]:
    """(pages uint8[n, page_size], status int32[n]): a page whose block is invalid gets status
    STATUS_CORRUPT and zeros; the rest decode."""
    batch.validate()
    page_size = check_page_size(batch.page_size)
    procs = _use_procs(batch.n_pages * page_size)
    if procs is not None:
        try:
            with _LOCK:
                return _decompress_procs(procs, batch, page_size)
        except (BrokenProcessPool, OSError):
            _broken()
    return _decompress_threads(batch, page_size)


def _decompress_procs(procs: Executor, batch: CompressedBatch, page_size: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    n = batch.n_pages
    payload = np.ascontiguousarray(batch.payload, np.uint8)
    src = _shared("dsrc", max(len(payload), 1))
    dst = _shared("ddst", n * page_size)
    src.array[:len(payload)] = payload
    raw = batch.raw
    offsets = batch.offsets
    ranges = _chunks(n, _workers(), 256)
    futures = [procs.submit(_decompress_range, src.spec, dst.spec, page_size, lo,
                            offsets[lo:hi + 1].copy(), raw[lo:hi].copy()) for lo, hi in ranges]
    status = np.concatenate([np.frombuffer(f.result(), np.int32) for f in futures])
    out = dst.array[:n * page_size].reshape(n, page_size).copy()
    return out, status


def _decompress_threads(batch: CompressedBatch, page_size: int) -> tuple[np.ndarray, np.ndarray]:
    n = batch.n_pages
    out = np.zeros((n, page_size), np.uint8)
    status = np.zeros(n, np.int32)
    raw = batch.raw
    offsets = batch.offsets
    payload = batch.payload

    def work(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            start, end = int(offsets[i]), int(offsets[i + 1])
            if raw[i]:
                out[i] = payload[start:end]
                continue
            try:
                block = decompress_block(payload[start:end].data, page_size)
                out[i] = np.frombuffer(block, np.uint8)
            except (lz4.block.LZ4BlockError, ValueError):
                status[i] = STATUS_CORRUPT

    list(_pool().map(lambda r: work(*r), _chunks(n, _workers())))
    return out, status

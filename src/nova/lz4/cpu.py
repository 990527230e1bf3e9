"""The CPU codec: liblz4 (through python-lz4's block API) on all cores.

It is the reference the GPU kernels are measured against, the fallback when no GPU is usable or
a GPU slot faults, and the decoder the CLI uses for the short last page of a file. python-lz4
releases the GIL while it (de)compresses, so a thread pool uses every core without copying pages
into worker processes.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import lz4.block
import numpy as np

from nova.lz4.batch import RAW_FLAG, CompressedBatch, as_pages, check_page_size

STATUS_OK = 0
STATUS_CORRUPT = 1
"""Per-page decode status: 0 ok, 1 the block is invalid (the page's output is zeros)."""

_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                   thread_name_prefix="nova-lz4-cpu")
    return _POOL


def _chunks(n: int, workers: int) -> list[tuple[int, int]]:
    step = max(64, -(-n // (4 * workers)))
    return [(i, min(i + step, n)) for i in range(0, n, step)]


def compress_block(page: bytes | memoryview | np.ndarray) -> bytes:
    """One page as an LZ4 block (liblz4's default fast mode, no size prefix)."""
    return lz4.block.compress(page, mode="default", store_size=False)


def compress_pages(pages: object, page_size: int = 4096) -> CompressedBatch:
    """Compress pages on every core; a page whose block is not smaller is stored raw."""
    arr = as_pages(pages, page_size)
    n = len(arr)
    blocks: list[bytes] = [b""] * n

    def work(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            blocks[i] = compress_block(arr[i])

    list(_pool().map(lambda r: work(*r), _chunks(n, os.cpu_count() or 1)))
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


def decompress_block(block: bytes | memoryview, size: int) -> bytes:
    """One LZ4 block that must decode to exactly `size` bytes (liblz4's safe decoder)."""
    out = lz4.block.decompress(block, uncompressed_size=size)
    if len(out) != size:
        raise lz4.block.LZ4BlockError(f"block decodes to {len(out)} bytes, not {size}")
    return out


def decompress_pages_status(batch: CompressedBatch) -> tuple[np.ndarray, np.ndarray]:
    """(pages uint8[n, page_size], status int32[n]): a page whose block is invalid gets status
    STATUS_CORRUPT and zeros; the rest decode."""
    batch.validate()
    page_size = check_page_size(batch.page_size)
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

    list(_pool().map(lambda r: work(*r), _chunks(n, os.cpu_count() or 1)))
    return out, status

"""nova.lz4.cpu: liblz4 on all cores. Large batches run in worker processes (pages and blocks
through shared memory), small ones on threads; both give the same batch, and a bad block only
flags its own page."""

from __future__ import annotations

import lz4.block
import numpy as np

from nova.lz4 import cpu
from nova.lz4.batch import CompressedBatch

PAGE = 4096


def _pages(corpus: dict[str, np.ndarray], nbytes: int) -> np.ndarray:
    mixed = corpus["mixed"]
    n = nbytes // PAGE
    return mixed[np.arange(n) % len(mixed)]


def test_processes_match_threads_and_liblz4(corpus):
    pages = _pages(corpus, cpu.PROCESS_MIN_BYTES)  # the smallest batch the processes take
    batch = cpu.compress_pages(pages, PAGE)
    ref = cpu._compress_threads(pages, PAGE)
    np.testing.assert_array_equal(batch.sizes, ref.sizes)
    np.testing.assert_array_equal(batch.payload, ref.payload)
    for i in (0, 1, len(pages) // 2, len(pages) - 1):
        block = batch.page(i)
        expect = pages[i].tobytes()
        assert (block if batch.raw[i] else
                lz4.block.decompress(block, uncompressed_size=PAGE)) == expect
    out, status = cpu.decompress_pages_status(batch)
    assert not status.any()
    np.testing.assert_array_equal(out, pages)
    # a larger batch next: the shared buffers grow (new generations in the workers)
    big = np.concatenate([pages, pages[:256]])
    out, status = cpu.decompress_pages_status(cpu.compress_pages(big, PAGE))
    assert not status.any()
    np.testing.assert_array_equal(out, big)


def test_processes_flag_only_the_bad_page(corpus):
    pages = _pages(corpus, cpu.PROCESS_MIN_BYTES)
    batch = cpu.compress_pages(pages, PAGE)
    bad = int(np.flatnonzero(~batch.raw)[3])
    payload = batch.payload.copy()
    start = int(batch.offsets[bad])
    payload[start] = 0xF0  # 15+ literals announced, far more than the block holds
    payload[start + 1:int(batch.offsets[bad + 1])] = 0xFF
    out, status = cpu.decompress_pages_status(
        CompressedBatch.from_sizes(PAGE, batch.sizes, payload))
    assert np.flatnonzero(status).tolist() == [bad]
    assert not out[bad].any()
    keep = np.arange(len(pages)) != bad
    np.testing.assert_array_equal(out[keep], pages[keep])

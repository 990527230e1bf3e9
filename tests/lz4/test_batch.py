"""The batch format (CompressedBatch), page input normalisation and page-size checks."""

from __future__ import annotations

import numpy as np
import pytest

from nova.lz4 import RAW_FLAG, CompressedBatch, CorruptDataError, Lz4ArgumentError, as_pages
from nova.lz4.batch import check_page_size


def _batch() -> CompressedBatch:
    sizes = np.array([3, 256 | RAW_FLAG, 5], np.uint32)
    payload = np.arange(3 + 256 + 5, dtype=np.uint8)
    return CompressedBatch.from_sizes(256, sizes, payload)


def test_offsets_flags_and_pages():
    b = _batch()
    assert b.n_pages == len(b) == 3
    assert b.offsets.tolist() == [0, 3, 259, 264]
    assert b.raw.tolist() == [False, True, False]
    assert b.stored_sizes.tolist() == [3, 256, 5]
    assert b.page(1) == bytes(range(3, 256)) + bytes(range(0, 3))
    assert b.page(-1) == bytes(range(259 - 256, 264 - 256))  # uint8 wrap-around of arange
    assert b.compressed_bytes == 264 + 12
    assert b.ratio == pytest.approx(768 / 276)
    with pytest.raises(IndexError):
        b.page(3)


def test_concat_and_empty():
    b = _batch()
    both = CompressedBatch.concat([b, b], 256)
    assert both.n_pages == 6 and both.page(4) == b.page(1)
    empty = CompressedBatch.concat([], 256)
    assert empty.n_pages == 0 and empty.ratio == 1.0
    with pytest.raises(Lz4ArgumentError, match="512-byte pages"):
        CompressedBatch.concat([b], 512)


@pytest.mark.parametrize("entry, value, cut, message", [
    (1, 100 | RAW_FLAG, 0, "flagged raw"),
    (0, 0, 0, "empty compressed block"),
    (0, 3, 1, "payload has"),
])
def test_validate_rejects_inconsistent_batches(entry, value, cut, message):
    b = _batch()
    sizes = b.sizes.copy()
    sizes[entry] = value
    payload = b.payload[:len(b.payload) - cut]
    with pytest.raises(CorruptDataError, match=message):
        CompressedBatch.from_sizes(256, sizes, payload)


def test_validate_rejects_bad_offsets_and_dtypes():
    b = _batch()
    offsets = b.offsets.copy()
    offsets[1] += 1
    with pytest.raises(CorruptDataError, match="offsets"):
        CompressedBatch(256, b.sizes, offsets, b.payload).validate()
    with pytest.raises(CorruptDataError, match="dtypes"):
        CompressedBatch(256, b.sizes.astype(np.int64), b.offsets, b.payload).validate()


@pytest.mark.parametrize("size", [0, 100, 255, 3000, 131072, True, 4096.0, "4096"])
def test_bad_page_sizes(size):
    with pytest.raises(Lz4ArgumentError):
        check_page_size(size)


def test_good_page_sizes():
    assert [check_page_size(s) for s in (256, 4096, np.int64(65536))] == [256, 4096, 65536]


def test_as_pages_inputs():
    raw = bytes(range(256)) * 4
    want = np.frombuffer(raw, np.uint8).reshape(4, 256)
    for pages in (raw, bytearray(raw), memoryview(raw), want, want.view(np.uint32),
                  [raw[:512], raw[512:]], np.frombuffer(raw, np.uint8)[::1]):
        np.testing.assert_array_equal(as_pages(pages, 256), want)
    assert as_pages([], 256).shape == (0, 256)


@pytest.mark.parametrize("pages, message", [
    (b"x" * 300, "not a multiple"),
    (np.array([object()] * 256), "Python objects"),
    (12345, "not a multiple"),
])
def test_as_pages_rejects(pages, message):
    with pytest.raises(Lz4ArgumentError, match=message):
        as_pages(pages, 256)

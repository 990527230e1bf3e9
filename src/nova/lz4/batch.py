"""`CompressedBatch`: the in-memory format of a batch of compressed pages.

A batch of `n` pages of `page_size` bytes each is stored as

- `sizes`: uint32[n], the stored byte count of each page; bit 31 (`RAW_FLAG`) set means the page
  did not shrink and is stored raw (its stored size is then exactly `page_size`). This is the
  convention of the LZ4 frame format's block-size field, so a batch maps onto frame blocks
  without re-encoding.
- `offsets`: uint64[n + 1], where page i's bytes start in the payload (`offsets[n]` = total).
- `payload`: uint8, every page's stored bytes back to back: a standard LZ4 *block* (what
  `lz4.block.decompress(data, uncompressed_size=page_size)` decodes) or the raw page.

Why this shape: one contiguous payload is what a DMA engine copies and what a file stores; a
size table with a raw flag bounds every page's cost at `page_size` + 4 bytes, whatever the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nova.lz4.errors import CorruptDataError, Lz4ArgumentError

RAW_FLAG = 0x8000_0000
"""Bit 31 of a size entry: the page is stored raw (uncompressed)."""
SIZE_MASK = 0x7FFF_FFFF
DEFAULT_PAGE_SIZE = 4096
MIN_PAGE_SIZE = 256
MAX_PAGE_SIZE = 65536
"""LZ4 offsets are 16-bit, and the kernels keep a page and its hash table in shared memory."""


def check_page_size(page_size: object) -> int:
    """`page_size` as an int, or Lz4ArgumentError: a power of two in [256, 65536]."""
    if isinstance(page_size, bool) or not isinstance(page_size, int | np.integer):
        raise Lz4ArgumentError(f"page size must be an integer, got {page_size!r}")
    size = int(page_size)
    if not MIN_PAGE_SIZE <= size <= MAX_PAGE_SIZE or size & (size - 1):
        raise Lz4ArgumentError(f"page size must be a power of two between {MIN_PAGE_SIZE} and "
                               f"{MAX_PAGE_SIZE}, got {size}")
    return size


@dataclass(frozen=True)
class CompressedBatch:
    """Compressed pages: a size table with raw flags, offsets and one payload (module doc)."""

    page_size: int
    sizes: np.ndarray  # uint32[n]
    offsets: np.ndarray  # uint64[n + 1]
    payload: np.ndarray  # uint8[offsets[n]]

    @classmethod
    def from_sizes(cls, page_size: int, sizes: np.ndarray, payload: np.ndarray
                   ) -> CompressedBatch:
        """A batch whose offsets are the running sum of the stored sizes (validated)."""
        sizes = np.ascontiguousarray(sizes, dtype=np.uint32)
        offsets = np.zeros(len(sizes) + 1, np.uint64)
        np.cumsum(sizes & SIZE_MASK, out=offsets[1:])
        batch = cls(page_size, sizes, offsets, np.ascontiguousarray(payload, dtype=np.uint8))
        batch.validate()
        return batch

    @classmethod
    def concat(cls, parts: list[CompressedBatch], page_size: int) -> CompressedBatch:
        """The batches one after another (all of `page_size`), as one batch."""
        for part in parts:
            if part.page_size != page_size:
                raise Lz4ArgumentError(f"cannot join a batch of {part.page_size}-byte pages "
                                       f"to one of {page_size}-byte pages")
        sizes = np.concatenate([p.sizes for p in parts]) if parts else np.zeros(0, np.uint32)
        payload = (np.concatenate([p.payload for p in parts]) if parts
                   else np.zeros(0, np.uint8))
        return cls.from_sizes(page_size, sizes, payload)

    @property
    def n_pages(self) -> int:
        return len(self.sizes)

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def raw(self) -> np.ndarray:
        """bool[n]: pages stored raw."""
        return (self.sizes & RAW_FLAG) != 0

    @property
    def stored_sizes(self) -> np.ndarray:
        """int64[n]: bytes each page takes in the payload."""
        return (self.sizes & SIZE_MASK).astype(np.int64)

    @property
    def compressed_bytes(self) -> int:
        """Payload plus the 4-byte size table entries: what the batch costs to keep."""
        return int(self.offsets[-1]) + 4 * self.n_pages

    @property
    def uncompressed_bytes(self) -> int:
        return self.n_pages * self.page_size

    @property
    def ratio(self) -> float:
        """Uncompressed / compressed bytes (higher is better; 1.0 for an empty batch)."""
        return self.uncompressed_bytes / self.compressed_bytes if self.n_pages else 1.0

    def page(self, i: int) -> bytes:
        """The stored bytes of page i (an LZ4 block, or the raw page when `raw[i]`)."""
        if not -self.n_pages <= i < self.n_pages:
            raise IndexError(f"page {i} out of range for a batch of {self.n_pages}")
        i %= self.n_pages
        return self.payload[int(self.offsets[i]):int(self.offsets[i + 1])].tobytes()

    def validate(self) -> None:
        """Raise CorruptDataError unless the table, offsets and payload agree."""
        check_page_size(self.page_size)
        n = self.n_pages
        if self.sizes.dtype != np.uint32 or self.offsets.dtype != np.uint64 or \
                self.payload.dtype != np.uint8 or self.sizes.ndim != 1 or \
                self.offsets.shape != (n + 1,) or self.payload.ndim != 1:
            raise CorruptDataError("batch arrays have the wrong dtypes or shapes (sizes uint32[n],"
                                   " offsets uint64[n+1], payload uint8[total])")
        stored = self.stored_sizes
        raw = self.raw
        if np.any(raw & (stored != self.page_size)):
            bad = int(np.flatnonzero(raw & (stored != self.page_size))[0])
            raise CorruptDataError(f"page {bad} is flagged raw but stores {stored[bad]} bytes, "
                                   f"not {self.page_size}")
        if np.any(~raw & (stored == 0)):
            bad = int(np.flatnonzero(~raw & (stored == 0))[0])
            raise CorruptDataError(f"page {bad} has an empty compressed block")
        if self.offsets[0] != 0 or np.any(np.diff(self.offsets.astype(np.int64)) != stored):
            raise CorruptDataError("batch offsets do not match the size table")
        if int(self.offsets[-1]) != len(self.payload):
            raise CorruptDataError(f"the size table accounts for {int(self.offsets[-1])} bytes "
                                   f"but the payload has {len(self.payload)}")


def as_pages(pages: object, page_size: int) -> np.ndarray:
    """Input pages as a C-contiguous uint8 array of shape (n, page_size), without a copy where
    possible. Accepts a 2-D array of pages, any array/bytes/memoryview whose byte length is a
    multiple of the page size, or a sequence of page-sized bytes-likes."""
    page_size = check_page_size(page_size)
    if isinstance(pages, list | tuple):
        if not pages:
            return np.zeros((0, page_size), np.uint8)
        rows = [as_pages(p, page_size) for p in pages]
        return np.ascontiguousarray(np.concatenate(rows))
    try:
        if isinstance(pages, bytes | bytearray | memoryview):
            arr = np.frombuffer(pages, np.uint8)
        else:
            arr = np.asarray(pages)
    except (TypeError, ValueError) as exc:
        raise Lz4ArgumentError(f"pages must be bytes-like or an array, got "
                               f"{type(pages).__name__}: {exc}") from None
    if arr.dtype.hasobject:
        raise Lz4ArgumentError("pages must be bytes-like or a numeric array, not Python objects")
    arr = np.ascontiguousarray(arr)
    flat = arr.reshape(-1).view(np.uint8)
    if flat.size % page_size:
        raise Lz4ArgumentError(f"pages hold {flat.size} bytes, not a multiple of the page size "
                               f"{page_size}")
    return flat.reshape(-1, page_size)

"""`.lz4` files: the LZ4 frame format, written from and read into page batches.

A file Nova writes is two frames, both standard (the `lz4` CLI and python-lz4's
`lz4.frame.decompress` read it):

1. an LZ4 frame: version 01, independent blocks, content checksum (xxHash32 of the content),
   block maximum size the smallest of 64 KiB/256 KiB/1 MiB/4 MiB that holds a page; then one
   block per page, exactly as the batch stores it: the block size field *is* the batch's size
   entry (bit 31 = stored raw, the frame format's convention too), followed by the block; the
   last page of a file may be shorter than a page; end mark 0; the content checksum;
2. a *skippable* frame (magic 0x184D2A5E, which LZ4 readers skip) of 24 bytes, the Nova
   trailer: the tag `NOVALZ4\\x01`, the page size (u32), the content size (u64). It comes last
   so that readers which stop after the first frame still get the content; Nova reads it first
   (the file is seekable) to learn the page size.

Why one block per page: the file is the batch, so compression writes payloads without
re-encoding and decompression reads pages back into batches for the GPU. A frame without the
trailer (any other LZ4 writer) is still read, by liblz4.

Errors are specific: BadMagicError, TruncatedError, ChecksumError, CorruptDataError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import xxhash

from nova.lz4.batch import RAW_FLAG, SIZE_MASK, CompressedBatch, check_page_size
from nova.lz4.errors import BadMagicError, ChecksumError, CorruptDataError, TruncatedError

FRAME_MAGIC = 0x184D2204
SKIPPABLE_MAGIC = 0x184D2A5E
NOVA_TAG = b"NOVALZ4\x01"
_NOVA_HEADER = struct.Struct("<8sIQ")
TRAILER_BYTES = 8 + _NOVA_HEADER.size
_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}


def block_max_code(page_size: int) -> int:
    """The frame descriptor's block-maximum-size code for pages of `page_size`."""
    return next(code for code, size in _BLOCK_MAX.items() if size >= page_size)


def frame_header(page_size: int, checksum: bool = True) -> bytes:
    flg = (1 << 6) | (1 << 5) | (int(checksum) << 2)  # version 01, independent blocks
    bd = block_max_code(page_size) << 4
    descriptor = bytes([flg, bd])
    hc = (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF
    return struct.pack("<I", FRAME_MAGIC) + descriptor + bytes([hc])


class FrameWriter:
    """Writes the frame header, batches of pages, the frame end and the Nova trailer."""

    def __init__(self, out: BinaryIO, page_size: int, content_size: int,
                 checksum: bool = True) -> None:
        self.out = out
        self.page_size = check_page_size(page_size)
        self.content_size = content_size
        self._hash = xxhash.xxh32() if checksum else None
        self.written = 0
        self.content = 0
        self._write(frame_header(self.page_size, checksum))

    def _write(self, data: bytes | np.ndarray | memoryview) -> None:
        self.out.write(data)  # type: ignore[arg-type]  # ndarray: a buffer (not in NumPy's stubs)
        self.written += len(data) if not isinstance(data, np.ndarray) else data.nbytes

    def write_batch(self, batch: CompressedBatch, pages: np.ndarray) -> None:
        """One block per page; `pages` are the uncompressed pages (for the content checksum)."""
        n = batch.n_pages
        if n == 0:
            return
        heads = memoryview(batch.sizes.astype("<u4").tobytes())
        payload = batch.payload.data  # a memoryview of the array, no copy
        offsets = batch.offsets.tolist()
        parts: list[memoryview] = []
        for i in range(n):  # slices only: one join copies everything, at memcpy speed
            parts.append(heads[4 * i:4 * i + 4])
            parts.append(payload[offsets[i]:offsets[i + 1]])
        self._write(b"".join(parts))
        if self._hash is not None:
            self._hash.update(np.ascontiguousarray(pages).reshape(-1).view(np.uint8).data)
        self.content += pages.nbytes

    def write_block(self, block: bytes, raw: bool, content: bytes) -> None:
        """One block (e.g. a file's short last page)."""
        size = len(block) | (RAW_FLAG if raw else 0)
        self._write(struct.pack("<I", size) + block)
        if self._hash is not None:
            self._hash.update(content)
        self.content += len(content)

    def close(self) -> None:
        nova = _NOVA_HEADER.pack(NOVA_TAG, self.page_size, self.content_size)
        end = struct.pack("<I", 0)
        if self._hash is not None:
            end += struct.pack("<I", self._hash.intdigest())
        self._write(end +
                    struct.pack("<II", SKIPPABLE_MAGIC, len(nova)) + nova)


@dataclass(frozen=True)
class FrameInfo:
    """What a file's headers say: the Nova page size and content size (None for frames other
    writers made), whether blocks carry checksums, the content checksum flag."""

    page_size: int | None
    content_size: int | None
    block_checksum: bool
    content_checksum: bool
    block_max: int


def _read_exact(src: BinaryIO, n: int, what: str) -> bytes:
    data = src.read(n)
    if len(data) != n:
        raise TruncatedError(f"truncated input: the file ends inside the {what} "
                             f"({len(data)} of {n} bytes)")
    return data


def read_trailer(src: BinaryIO) -> tuple[int, int] | None:
    """(page size, content size) from a Nova trailer at the end of a seekable file, or None
    when the file has none (another writer's frame). Leaves the file at its start."""
    end = src.seek(0, 2)
    found = None
    if end >= TRAILER_BYTES:
        src.seek(end - TRAILER_BYTES)
        tail = src.read(TRAILER_BYTES)
        magic, length = struct.unpack("<II", tail[:8])
        if magic == SKIPPABLE_MAGIC and length == _NOVA_HEADER.size and tail[8:16] == NOVA_TAG:
            _, page_size, content_size = _NOVA_HEADER.unpack(tail[8:])
            try:
                check_page_size(page_size)
            except ValueError as exc:
                raise CorruptDataError(f"bad Nova trailer: {exc}") from None
            found = (page_size, content_size)
    src.seek(0)
    return found


def read_headers(src: BinaryIO) -> FrameInfo:
    """Read the Nova trailer (if any) and the LZ4 frame header (validated); the file is then
    at the first block."""
    trailer = read_trailer(src)
    page_size, content_size = trailer if trailer is not None else (None, None)
    head = src.read(4)
    if len(head) < 4:
        raise BadMagicError("not an LZ4 file: it is shorter than a frame magic number" if head
                            else "not an LZ4 file: it is empty")
    (magic,) = struct.unpack("<I", head)
    if magic != FRAME_MAGIC:
        raise BadMagicError(f"not an LZ4 file: bad magic number {magic:#010x} (expected "
                            f"{FRAME_MAGIC:#010x})")
    flg, bd = _read_exact(src, 2, "frame header")
    if flg >> 6 != 1:
        raise CorruptDataError(f"unsupported LZ4 frame version {flg >> 6}")
    if flg & 0x02 or bd & 0x8F:
        raise CorruptDataError("bad LZ4 frame header: reserved bits are set")
    if (bd >> 4) & 7 not in _BLOCK_MAX:
        raise CorruptDataError(f"bad LZ4 frame header: block size code {(bd >> 4) & 7}")
    descriptor = bytes([flg, bd])
    if flg & 0x08:
        descriptor += _read_exact(src, 8, "frame header")
    if flg & 0x01:
        descriptor += _read_exact(src, 4, "frame header")
    (hc,) = _read_exact(src, 1, "frame header")
    if hc != (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF:
        raise ChecksumError("checksum mismatch in the LZ4 frame header")
    if not flg & 0x20 and page_size is not None:
        raise CorruptDataError("a Nova file must have independent blocks")
    return FrameInfo(page_size, content_size, bool(flg & 0x10), bool(flg & 0x04),
                     _BLOCK_MAX[(bd >> 4) & 7])


class BlockReader:
    """Reads runs of blocks fast: one buffered read per 16 MiB, a size-field unpack and a
    memoryview slice per block (the frame's blocks are pages, millions per file). `read(n)`
    continues after the end mark (content checksum, trailer)."""

    def __init__(self, src: BinaryIO, info: FrameInfo, chunk: int = 16 << 20) -> None:
        self.src, self.info, self.chunk = src, info, chunk
        self.buf = memoryview(b"")
        self.pos = 0
        self.index = 0  # blocks read so far
        self.ended = False  # the end mark was read

    def _fill(self, n: int, what: str) -> None:
        if len(self.buf) - self.pos >= n:
            return
        more = self.src.read(max(self.chunk, n))
        self.buf = memoryview(bytes(self.buf[self.pos:]) + more)
        self.pos = 0
        if len(self.buf) < n:
            raise TruncatedError(f"truncated input: the file ends inside the {what} "
                                 f"({len(self.buf)} of {n} bytes)")

    def read(self, n: int) -> bytes:
        have = bytes(self.buf[self.pos:self.pos + n])
        self.pos += len(have)
        return have + (self.src.read(n - len(have)) if len(have) < n else b"")

    def run(self, max_blocks: int) -> tuple[np.ndarray, np.ndarray]:
        """(size fields uint32[k], the k blocks back to back) for up to max_blocks blocks;
        fewer when the end mark comes first (then `ended`)."""
        fields: list[int] = []
        parts: list[memoryview] = []
        unpack = struct.unpack_from
        block_max, checksums = self.info.block_max, self.info.block_checksum
        while len(fields) < max_blocks and not self.ended:
            self._fill(4, f"size of block {self.index}")
            (field,) = unpack("<I", self.buf, self.pos)
            self.pos += 4
            if field == 0:
                self.ended = True
                break
            size = field & SIZE_MASK
            if size > block_max:
                raise CorruptDataError(f"block {self.index} claims {size} bytes, more than the "
                                       f"frame's block maximum {block_max}")
            self._fill(size + 4 * checksums, f"block {self.index}")
            data = self.buf[self.pos:self.pos + size]
            self.pos += size
            if checksums:
                (want,) = unpack("<I", self.buf, self.pos)
                self.pos += 4
                if xxhash.xxh32_intdigest(data) != want:
                    raise ChecksumError(f"checksum mismatch in block {self.index}")
            fields.append(field)
            parts.append(data)
            self.index += 1
        return np.array(fields, np.uint32), np.frombuffer(b"".join(parts), np.uint8)


def read_content_checksum(src: BinaryIO | BlockReader, info: FrameInfo) -> int | None:
    """The content checksum after the end mark (None if the frame has none); for a Nova file,
    also checks that only the trailer follows."""
    value = None
    if info.content_checksum:
        (value,) = struct.unpack("<I", _read_exact(src, 4, "content checksum"))  # type: ignore[arg-type]
    if info.page_size is not None and len(src.read(TRAILER_BYTES + 1)) != TRAILER_BYTES:
        raise CorruptDataError("unexpected data between the LZ4 frame and the Nova trailer")
    return value

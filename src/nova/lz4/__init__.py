"""`nova.lz4`: batch LZ4 compression of memory pages on the GPU, with a CPU fallback.

Pages (4 KiB by default; any power of two from 256 B to 64 KiB) become standard LZ4 blocks
(what liblz4's `LZ4_decompress_safe` decodes), one warp per page, in kernels written in Nova's
Python kernel language (`nova.lz4.kernels`). `PageCompressor` streams any number of pages
through a ring of pinned slots (H2D, kernels and D2H on separate streams) and falls back to
liblz4 on every core when no GPU is usable or a slot fails. `nova.lz4.frame` writes and reads
`.lz4` files (the LZ4 frame format); `nova-lz4` is the command line. docs/lz4.md has the design.

Modules: `batch` (CompressedBatch, the size table with raw flags), `kernels` (the GPU kernels),
`device` (launching them on device buffers), `compressor` (PageCompressor), `cpu` (liblz4 on
all cores), `frame` (the file format), `corpus` (real-data test pages), `cli`.
"""

from __future__ import annotations

from nova.lz4.batch import (
    DEFAULT_PAGE_SIZE,
    RAW_FLAG,
    CompressedBatch,
    as_pages,
    check_page_size,
)
from nova.lz4.errors import (
    BadMagicError,
    ChecksumError,
    CorruptDataError,
    Lz4ArgumentError,
    Lz4Error,
    TruncatedError,
)


def __getattr__(name: str) -> object:
    # the compressor pulls in the kernel compiler; import it on first use
    if name in ("PageCompressor", "DecompressResult", "FallbackWarning", "compress_pages",
                "decompress_pages"):
        from nova.lz4 import compressor

        return getattr(compressor, name)
    raise AttributeError(f"module 'nova.lz4' has no attribute {name!r}")


__all__ = [
    "DEFAULT_PAGE_SIZE", "RAW_FLAG", "BadMagicError", "ChecksumError", "CompressedBatch",
    "CorruptDataError", "DecompressResult", "FallbackWarning", "Lz4ArgumentError", "Lz4Error",
    "PageCompressor",
    "TruncatedError", "as_pages", "check_page_size", "compress_pages", "decompress_pages",
]

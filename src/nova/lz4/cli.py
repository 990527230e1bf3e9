"""`nova-lz4`: compress and decompress files with GPU page compression, and benchmark it.

    nova-lz4 compress IN OUT   [--device cuda|cpu|liblz4] [--page-size 4096] [--no-checksum]
                               [--quiet]
    nova-lz4 decompress IN OUT [--device ...] [--quiet]
    nova-lz4 bench [IN] [--device ...] [--page-size ...] [--pages N]

Files are `.lz4` frames (nova.lz4.frame) that the `lz4` CLI reads; `decompress` also reads
frames other writers made (through liblz4). A progress bar on stderr shows GB/s, the ratio and
the pages done. Bad input (bad magic, truncation, checksum mismatch, a block that would decode
out of bounds) is one line on stderr and exit code 1, never a traceback; OUT is written to a
temporary file next to it and renamed only when complete, so a failure never replaces a good
OUT with a partial one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import warnings
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import lz4.block
import lz4.frame
import numpy as np
import xxhash
from tqdm import tqdm

import nova
from nova.lz4 import cpu
from nova.lz4.batch import RAW_FLAG, CompressedBatch, check_page_size
from nova.lz4.compressor import FallbackWarning, PageCompressor
from nova.lz4.errors import ChecksumError, CorruptDataError, Lz4ArgumentError
from nova.lz4.frame import (
    BlockReader,
    FrameInfo,
    FrameWriter,
    read_content_checksum,
    read_headers,
)

CHUNK_BYTES = 128 << 20
"""Bytes read per chunk (one PageCompressor call each; its slots overlap inside a chunk)."""


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """A temporary file next to `path`, renamed onto it only if the block completes."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                               dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 -> what open() would have created
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _progress(total: int, desc: str, quiet: bool) -> tqdm:
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1000,
                disable=quiet, dynamic_ncols=True, file=sys.stderr, leave=not quiet)


def _compressor(args: argparse.Namespace, page_size: int) -> PageCompressor:
    device = None if args.device == "auto" else args.device
    return PageCompressor(page_size, device)


def compress_file(src: str, dst: str, page_size: int, comp: PageCompressor,
                  quiet: bool = True, checksum: bool = True) -> tuple[int, int]:
    """Compress `src` into the `.lz4` file `dst`; (input bytes, output bytes)."""
    size = os.path.getsize(src)
    chunk_pages = max(1, CHUNK_BYTES // page_size)
    pending: deque[np.ndarray] = deque()
    with open(src, "rb") as f, atomic_output(dst) as out, \
            _progress(size, "compress", quiet) as bar:
        writer = FrameWriter(out, page_size, size, checksum)
        tail = b""

        def chunks() -> Iterator[np.ndarray]:
            nonlocal tail
            while True:
                data = f.read(chunk_pages * page_size)
                full = len(data) // page_size * page_size
                if full:
                    pages = np.frombuffer(data, np.uint8, full).reshape(-1, page_size)
                    pending.append(pages)
                    yield pages
                if len(data) < chunk_pages * page_size:
                    tail = data[full:]
                    return

        pages_done = 0
        for batch in comp.iter_compress(chunks()):
            pages = pending.popleft()
            writer.write_batch(batch, pages)
            pages_done += batch.n_pages
            bar.update(pages.nbytes)
            bar.set_postfix(ratio=f"{writer.content / max(writer.written, 1):.2f}",
                            pages=pages_done, refresh=False)
        if tail:
            block = cpu.compress_block(tail)
            raw = len(block) >= len(tail)
            writer.write_block(tail if raw else block, raw, tail)
            bar.update(len(tail))
        writer.close()
        if writer.content != size:
            raise CorruptDataError(f"{src} changed while it was read ({writer.content} of "
                                   f"{size} bytes)")
        return size, writer.written


def _nova_batches(reader: BlockReader, info: FrameInfo, group: int
                  ) -> Iterator[tuple[int, CompressedBatch | bytes]]:
    """(index of the first block, a batch of up to `group` full pages) and, last, (index, tail
    page bytes) for the short last page; checks the block count against the content size."""
    assert info.page_size is not None and info.content_size is not None
    page = info.page_size
    n_full, tail = divmod(info.content_size, page)
    expected = n_full + (1 if tail else 0)
    while reader.index < n_full and not reader.ended:
        first = reader.index
        fields, payload = reader.run(min(group, n_full - first))
        if len(fields):
            yield first, CompressedBatch.from_sizes(page, fields, payload)
    if tail and not reader.ended:
        index = reader.index
        fields, payload = reader.run(1)
        if len(fields):
            data = payload.tobytes()
            try:
                out = data if fields[0] & RAW_FLAG else cpu.decompress_block(data, tail)
            except (lz4.block.LZ4BlockError, ValueError):
                raise CorruptDataError(f"block {index} is invalid: it would decode out of "
                                       f"bounds or to the wrong size") from None
            if len(out) != tail:
                raise CorruptDataError(f"block {index} holds {len(out)} bytes, the last page "
                                       f"has {tail}")
            yield index, out
    if not reader.ended and len(reader.run(1)[0]):
        raise CorruptDataError(f"the frame has more blocks than its content size "
                               f"({info.content_size} bytes) allows")
    if reader.index != expected:
        raise CorruptDataError(f"the frame ends after {reader.index} of {expected} blocks")


def decompress_file(src: str, dst: str, args_device: str | None,
                    quiet: bool = True) -> tuple[int, int]:
    """Decompress the `.lz4` file `src` into `dst`; (input bytes, output bytes)."""
    size = os.path.getsize(src)
    with open(src, "rb") as f:
        info = read_headers(f)
        if info.page_size is None:
            f.seek(0)
            return size, _decompress_foreign(f, dst, size, quiet)
        comp = PageCompressor(info.page_size, args_device)
        digest = xxhash.xxh32()
        written = 0
        with atomic_output(dst) as out, _progress(info.content_size or 0, "decompress",
                                                  quiet) as bar:
            group = max(1, CHUNK_BYTES // info.page_size)
            reader = BlockReader(f, info)
            for first, item in _nova_batches(reader, info, group):
                if isinstance(item, bytes):
                    pages_bytes = item
                else:
                    result = comp.decompress_pages_status(item)
                    if len(result.bad_pages):
                        bad = first + int(result.bad_pages[0])
                        raise CorruptDataError(f"block {bad} is invalid: it would decode out "
                                               f"of bounds or to the wrong size")
                    pages_bytes = result.pages.reshape(-1).data  # type: ignore[assignment]
                out.write(pages_bytes)
                digest.update(pages_bytes)
                written += len(pages_bytes)
                bar.update(len(pages_bytes))
            want = read_content_checksum(reader, info)
            if want is not None and digest.intdigest() != want:
                raise ChecksumError("content checksum mismatch: the decompressed data is not "
                                    "what was compressed")
            comp.close()
        return size, written


def _decompress_foreign(f: BinaryIO, dst: str, size: int, quiet: bool) -> int:
    """A frame another writer made: liblz4's streaming decoder."""
    written = 0
    dec = lz4.frame.LZ4FrameDecompressor()
    with atomic_output(dst) as out, _progress(size, "decompress", quiet) as bar:
        while not dec.eof:
            data = f.read(1 << 20)
            if not data:
                raise CorruptDataError("truncated input: the LZ4 frame does not end")
            try:
                chunk = dec.decompress(data)
            except RuntimeError as exc:
                text = str(exc)
                cls = ChecksumError if "hecksum" in text else CorruptDataError
                raise cls(f"invalid LZ4 frame: {text}") from None
            out.write(chunk)
            written += len(chunk)
            bar.update(len(data))
    return written


def bench(args: argparse.Namespace) -> None:
    """Round trip of a file's pages (or the built-in corpus) with timings and the ratio."""
    page = check_page_size(args.page_size)
    if args.input:
        data = Path(args.input).read_bytes()
        full = len(data) // page * page
        pages = np.frombuffer(data, np.uint8, full).reshape(-1, page)
    else:
        from nova.lz4.corpus import build_corpus

        pages = build_corpus(page, max(1, args.pages // 6))["mixed"]
    comp = _compressor(args, page)
    comp.compress_pages(pages[:comp.pages_per_slot])  # compile and warm up
    t0 = time.perf_counter()
    batch = comp.compress_pages(pages)
    t1 = time.perf_counter()
    out = comp.decompress_pages(batch)
    t2 = time.perf_counter()
    if not np.array_equal(out, pages):
        raise CorruptDataError("the round trip did not reproduce the input")
    ref = cpu.compress_pages(pages, page)
    gb = pages.nbytes / 1e9
    print(f"{len(pages)} pages of {page} B on {comp.backend}: compress {gb / (t1 - t0):.3g} GB/s, "
          f"decompress {gb / (t2 - t1):.3g} GB/s (end to end, host to host), ratio "
          f"{batch.ratio:.3f} (liblz4 {ref.ratio:.3f}, {batch.ratio / ref.ratio:.3f}x)")
    comp.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nova-lz4", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("compress", "decompress", "bench"):
        p = sub.add_parser(name)
        if name == "bench":
            p.add_argument("input", nargs="?", help="file whose pages to use (default: corpus)")
            p.add_argument("--pages", type=int, default=6000, help="corpus pages (default 6000)")
        else:
            p.add_argument("input", help="input file")
            p.add_argument("output", help="output file (replaced only when complete)")
        p.add_argument("--device", choices=("auto", "cuda", "cpu", "liblz4"), default="auto",
                       help="cuda: GPU kernels; cpu: the same kernels on Nova's CPU device; "
                            "liblz4: CPU codec; auto: cuda if usable, else liblz4")
        if name != "decompress":
            p.add_argument("--page-size", type=int, default=4096,
                           help="page size in bytes, a power of two in 256..65536")
        if name == "compress":
            p.add_argument("--no-checksum", action="store_true",
                           help="omit the content checksum (xxHash32 runs on one core and "
                                "can bound the speed)")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    device = None if args.device == "auto" else args.device
    warnings.simplefilter("ignore", FallbackWarning) if args.quiet else None
    warnings.formatwarning = lambda msg, *a, **k: f"nova-lz4: warning: {msg}\n"
    try:
        if args.command == "compress":
            page = check_page_size(args.page_size)
            if os.path.abspath(args.input) == os.path.abspath(args.output):
                raise Lz4ArgumentError("input and output are the same file")
            n_in, n_out = compress_file(args.input, args.output, page,
                                        PageCompressor(page, device), args.quiet,
                                        not args.no_checksum)
            if not args.quiet:
                print(f"{args.input}: {n_in} -> {n_out} bytes "
                      f"(ratio {n_in / max(n_out, 1):.3f})", file=sys.stderr)
        elif args.command == "decompress":
            if os.path.abspath(args.input) == os.path.abspath(args.output):
                raise Lz4ArgumentError("input and output are the same file")
            decompress_file(args.input, args.output, device, args.quiet)
        else:
            bench(args)
    except (nova.NovaError, OSError, ValueError) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename:
            text = f"{exc.strerror}: {exc.filename}"
        print(f"nova-lz4: error: {text}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("nova-lz4: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback: one line naming the failure
        print(f"nova-lz4: error: internal error: {type(exc).__name__}: {exc}".splitlines()[0],
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Test helpers: whether CUDA is usable, a reference parser of LZ4 blocks (sequences and the
end-of-block rules), a Python model of the decoder's rules, and direct kernel runs on NumPy
arrays. (A module of its own name, not conftest: several test directories have a conftest.)"""

from __future__ import annotations

import numpy as np

from nova.lz4 import kernels as K
from nova.runtime.selection import cuda_status

_CUDA = cuda_status()
CUDA_USABLE = _CUDA.usable
CUDA_REASON = f"no usable CUDA device: {_CUDA.reason}"


def parse_block(block: bytes) -> list[tuple[int, int, int, int]]:
    """(literal length, match length, offset, output position of the match) of every
    sequence; the last has match length 0. Assumes a well-formed block."""
    ip = op = 0
    out = []
    while True:
        token = block[ip]
        ip += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = block[ip]
                ip += 1
                lit += b
                if b != 255:
                    break
        ip += lit
        op += lit
        if ip == len(block):
            out.append((lit, 0, 0, op))
            return out
        off = block[ip] | block[ip + 1] << 8
        ip += 2
        ml = token & 15
        if ml == 15:
            while True:
                b = block[ip]
                ip += 1
                ml += b
                if b != 255:
                    break
        out.append((lit, ml + 4, off, op))
        op += ml + 4


def check_end_rules(block: bytes, size: int) -> None:
    """LZ4's end-of-block rules: the last sequence is literals only, at least 5 of them, and
    the last match starts at least 12 bytes before the end."""
    seqs = parse_block(block)
    assert seqs[-1][1] == 0
    matches = [s for s in seqs if s[1]]
    if matches:
        _, ml, _, at = matches[-1]
        assert at <= size - 12, f"last match starts at {at} of {size}"
        assert at + ml <= size - 5, f"last match ends at {at + ml} of {size}"


GRID_CAP = 3
"""Blocks the helpers launch at most: fewer than the pages need, so the kernels' warps claim
the remaining pages through their work counter (as on a GPU full of resident blocks)."""


def kernel_compress(pages: np.ndarray, device: str, hash_bits: int | None = None,
                    in_batch: int | None = None, grid_cap: int = GRID_CAP,
                    every_match: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(blocks at page stride uint8[n * P], sizes uint32[n]) from the compression kernel
    (default options unless given) on at most `grid_cap` blocks."""
    n, page = pages.shape
    dst = np.zeros(n * page, np.uint8)
    sizes = np.zeros(n, np.uint32)
    bits = K.hash_log(page) if hash_bits is None else hash_bits
    warps = K.compress_warps_per_block(page, bits)
    K.compress_kernel(page, bits, K.IN_BATCH if in_batch is None else in_batch,
                      every_match).launch(
        np.ascontiguousarray(pages).reshape(-1).view(np.uint32), dst, sizes, n, -1,
        np.zeros(K.WORK_WORDS, np.uint32),
        grid=max(1, min(-(-n // warps), grid_cap)), block=32 * warps, device=device,
        shared_bytes=K.compress_shared_bytes(page, warps, bits))
    return dst, sizes


def kernel_decompress(payload: np.ndarray, offsets: np.ndarray, sizes: np.ndarray,
                      page: int, device: str, grid_cap: int = GRID_CAP
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(pages uint8[n, P], status int32[n]) from decompress_pages_kernel on at most
    `grid_cap` blocks."""
    n = len(sizes)
    dst = np.zeros(n * page // 4, np.uint32)
    status = np.full(n, -1, np.int32)
    warps = K.warps_per_block(page)
    K.decompress_pages_kernel.launch(
        np.ascontiguousarray(payload, np.uint8) if len(payload) else np.zeros(1, np.uint8),
        np.ascontiguousarray(offsets, np.uint64), np.ascontiguousarray(sizes, np.uint32),
        dst, status, n, page, np.zeros(K.WORK_WORDS, np.uint32),
        grid=max(1, min(-(-n // warps), grid_cap)),
        block=32 * warps, device=device, shared_bytes=K.decompress_shared_bytes(page, warps))
    return dst.view(np.uint8).reshape(n, page), status


def pack(blocks: list[bytes], raw: list[bool] | None = None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(payload, offsets, sizes) of blocks back to back (RAW flag where raw[i])."""
    raw = raw or [False] * len(blocks)
    sizes = np.array([len(b) | (0x80000000 if r else 0) for b, r in zip(blocks, raw,
                                                                         strict=True)],
                     np.uint32)
    offsets = np.zeros(len(blocks) + 1, np.uint64)
    np.cumsum([len(b) for b in blocks], out=offsets[1:])
    payload = np.frombuffer(b"".join(blocks), np.uint8).copy()
    return payload, offsets, sizes


def reference_decode(block: bytes, size: int) -> tuple[bytes | None, str]:
    """Nova's decoding rules in plain Python: (page, "ok") or (None, why). They are liblz4's
    safe-decoder limits (LZ4_decompress_safe with an exact output size), except that an offset
    of 0 (invalid in the LZ4 format; liblz4 copies from the output cursor itself) is rejected."""
    clen, ip, op = len(block), 0, 0
    out = bytearray(size)
    while True:
        if ip >= clen:
            return None, "input ends before the last literals"
        token = block[ip]
        ip += 1
        lit = token >> 4
        if lit == 15:
            if ip >= clen - 15:
                return None, "literal length past the input"
            while True:
                b = block[ip]
                ip += 1
                lit += b
                if ip > clen - 15:
                    return None, "literal length past the input"
                if b != 255:
                    break
        last = op + lit > size - 12 or ip + lit > clen - 8
        if last and (ip + lit != clen or op + lit != size):
            return None, "last literals do not end the block and the page"
        out[op:op + lit] = block[ip:ip + lit]
        ip += lit
        op += lit
        if last:
            return bytes(out), "ok"
        d = block[ip] | block[ip + 1] << 8
        ip += 2
        ml = token & 15
        if ml == 15:
            while True:
                b = block[ip]
                ip += 1
                ml += b
                if ip > clen - 4:
                    return None, "match length past the input"
                if b != 255:
                    break
        ml += 4
        if d == 0:
            return None, "offset 0"
        if d > op or op + ml > size - 5:
            return None, "match outside the page"
        for k in range(ml):
            out[op + k] = out[op - d + k]
        op += ml

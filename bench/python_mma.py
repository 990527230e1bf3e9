"""Tensor cores from Python kernels: a float16 matmul written with `nova.mma` against cuBLAS.

The kernel (`make_mma_matmul`): a block computes a BM x BN tile of C = A @ B (float16 A and B,
float32 accumulation and output), stepping through K BK at a time; each warp owns a 64x64 tile
of C (4x4 accumulator fragments, fed per 16-deep step by 4 A and 4 B fragments), so a block has
(BM / 64) x (BN / 64) warps. The A (BM x BK) and B (BK x BN) tiles live in a ring of `stages`
buffers in dynamic shared memory (above 48 KiB where needed), their rows padded by 8 elements
(16 bytes) so the fragment loads (WMMA loads, which ptxas turns into `ldmatrix`) hit distinct
banks. Tiles travel global -> shared by `nova.async_copy` (cp.async, 16 bytes a copy, L2 only):
the prologue starts the first stages - 1 tiles, one group each; then per K step a thread waits
until its copies of the current tile have landed (`async_wait(stages - 2)`), one barrier makes
every thread's copies visible and tells that every warp is done with the tile multiplied last
step, the copies of the tile stages - 1 steps ahead go into that freed buffer, and the warps
multiply the current tile: one barrier per K step, stages - 1 tiles in flight during each
multiply. Blocks are ordered in groups of `group` block rows (Triton's grouped order) so that
the blocks running together share A and B tiles in L2. The accumulators go straight to C.

A configuration `BMxBNxBKsS[gG]` (e.g. 128x256x32s4g8) names the block tile, the K step, the
stage count and the block-row group (0: plain row-major order); `BMxBNxBKr` is the previous
kernel's staging for comparison: the next tiles read into registers while the warps multiply,
then stored to the other of two shared buffers (one barrier per K step, no cp.async). A `w`
suffix (e.g. 128x256x64s4g8w) selects the Hopper kernel (`make_wgmma_matmul`): warpgroup MMA
(`nova.wgmma`, compute capability 9.0 GPUs and the CPU device) on 128-byte swizzled shared
tiles, one warpgroup per 64 rows of the block tile.

Peers in the same run: cuBLAS through `cupy.matmul` on the same float16 arrays (its float16
GEMM accumulates in float32), and `torch.matmul` when PyTorch sees the GPU. Every timed result is
checked against a float64 product of the same inputs (C starts as NaN before each kernel, so a
kernel that leaves any element unwritten fails); a failed check (Nova's or a peer's) prints
FAILED, writes no result file and exits 1 (bench/checks.py).

Usage: python bench/python_mma.py [--device cuda] [--size 4096] [--repeat 20]
                                  [--configs 128x256x32s4g8,128x128x32s4g8,...]
On the CPU device (--device cpu) it checks the kernels only, at a size capped at 256 (rounded up
to a multiple of every configuration's tiles).
Goal (issue 13): nova >= 0.6x cuBLAS at 4096^3 on an H100.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import re
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/checks.py, also when imported
from checks import finish, record

import nova

WARP_M = WARP_N = 64   # the C tile of one warp: 4x4 fragments of 16x16
PAD = 8                # elements (16 bytes) added to every shared row: conflict-free ldmatrix
MAX_SHARED = 227 * 1024  # bytes of shared memory a block may have on sm_90
WARPGROUP = 128        # threads of a warpgroup (wgmma kernel)
WG_M = 64              # rows of C one warpgroup owns (m64nNk16)
SWIZZLE = 128          # bytes: the wgmma kernel's shared tiles are 128-byte swizzled
DEFAULT_CONFIGS = ("128x256x64s4g8w", "128x256x64s3g8w", "128x128x64s4g8w", "128x128x64s3g8w",
                   "128x256x32s3g8", "128x256x32s4g8",
                   "128x256x64s3g8", "128x256x64s4g8",
                   "128x256x32s4", "256x128x32s4g8", "128x128x32s4g8", "128x128x64s3g8",
                   "128x128x32r")
"""What a plain run measures: the wgmma kernel (Hopper), the cp.async kernel's candidate tiles
and stage counts, and the register-staged kernel (the previous one) for comparison."""


@dataclass(frozen=True)
class Config:
    """One kernel configuration: block tile bm x bn, K step bk, `stages` shared buffers (0: the
    register-staged double buffer), block-row group for the launch order (0: none)."""

    bm: int
    bn: int
    bk: int
    stages: int
    group: int
    wgmma: bool = False

    @classmethod
    def parse(cls, text: str) -> Config:
        found = re.fullmatch(r"(\d+)x(\d+)x(\d+)(?:s(\d+)|(r))(?:g(\d+))?(w)?", text.strip())
        if found is None:
            raise ValueError(f"bad configuration {text!r} (expected e.g. 128x256x32s4g8, "
                             "128x256x64s4g8w or 128x128x32r)")
        bm, bn, bk, stages, regs, group, wgmma = found.groups()
        if not regs and int(stages) < 2:
            raise ValueError(f"bad configuration {text!r}: 2 to 8 stages")
        cfg = cls(int(bm), int(bn), int(bk), 0 if regs else int(stages), int(group or 0),
                  bool(wgmma))
        cfg.check()
        return cfg

    def __str__(self) -> str:
        tail = "r" if self.stages == 0 else f"s{self.stages}"
        return (f"{self.bm}x{self.bn}x{self.bk}{tail}" + (f"g{self.group}" if self.group else "")
                + ("w" if self.wgmma else ""))

    @property
    def warps_n(self) -> int:
        return self.bn // WARP_N

    @property
    def threads(self) -> int:
        if self.wgmma:
            return WARPGROUP * (self.bm // WG_M)
        return 32 * (self.bm // WARP_M) * self.warps_n

    @property
    def lda(self) -> int:
        return self.bk + PAD

    @property
    def ldb(self) -> int:
        return self.bn + PAD

    @property
    def buffers(self) -> int:
        return self.stages or 2

    @property
    def a_stage(self) -> int:
        return self.bm * self.lda

    @property
    def b_stage(self) -> int:
        return self.bk * self.ldb

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of a block: the A and B buffers (float16)."""
        if self.wgmma:
            return 2 * self.stages * (self.bm + self.bn) * self.bk
        return 2 * self.buffers * (self.a_stage + self.b_stage)

    def check(self) -> None:
        if self.wgmma:
            self._check_wgmma()
            return
        if self.bm % WARP_M or self.bn % WARP_N or self.bk % 16 or min(self.bm, self.bn,
                                                                         self.bk) <= 0:
            raise ValueError(f"{self}: the block tile must be multiples of {WARP_M}x{WARP_N} "
                             "and the K step a multiple of 16")
        if self.stages == 1 or self.stages > 8:
            raise ValueError(f"{self}: 2 to 8 stages")
        if self.threads > 1024 or self.shared_bytes > MAX_SHARED:
            raise ValueError(f"{self}: {self.threads} threads and {self.shared_bytes} bytes of "
                             f"shared memory per block (at most 1024 and {MAX_SHARED})")
        chunks_a, chunks_b = self.bm * self.bk // 8, self.bk * self.bn // 8
        if chunks_a % self.threads or chunks_b % self.threads or \
                self.threads % (self.bk // 8) or self.threads % (self.bn // 8):
            raise ValueError(f"{self}: the tiles' 16-byte chunks must spread evenly over the "
                             f"{self.threads} threads")

    def _check_wgmma(self) -> None:
        if self.bk != SWIZZLE // 2 or self.bm % WG_M or not 0 < self.bm <= 4 * WG_M or \
                self.bn % 64 or not 0 < self.bn <= 256:
            raise ValueError(f"{self}: wgmma tiles are BM = 64..256 (a multiple of 64: one "
                             "warpgroup per 64 rows), BN = 64..256 (a multiple of 64) and "
                             f"BK = {SWIZZLE // 2} (one 128-byte swizzled row)")
        if (self.bk * self.bn // 8) % self.threads:
            raise ValueError(f"{self}: the B tile's 16-byte chunks must spread evenly over the "
                             f"{self.threads} threads")
        if not 3 <= self.stages <= 8 or self.shared_bytes > MAX_SHARED:
            raise ValueError(f"{self}: 3 to 8 stages within {MAX_SHARED} bytes of shared "
                             f"memory (this needs {self.shared_bytes})")

    def grid(self, m: int, n: int) -> int:
        return (m // self.bm) * (n // self.bn)


def make_mma_matmul(m: int, n: int, k: int, cfg: Config) -> Any:
    """The kernel for C[m, n] = A[m, k] @ B[k, n] (row-major, passed flattened to 1-D), sizes
    multiples of the block tile; launch with grid cfg.grid(m, n), cfg.threads threads and
    cfg.shared_bytes of dynamic shared memory. The sizes are compile-time constants: index
    arithmetic folds, and LLVM knows every 16-byte chunk's alignment."""
    if m % cfg.bm or n % cfg.bn or k % cfg.bk:
        raise ValueError(f"sizes must be multiples of ({cfg.bm}, {cfg.bn}, {cfg.bk}), got "
                         f"({m}, {n}, {k})")
    bm, bn, bk, lda, ldb = cfg.bm, cfg.bn, cfg.bk, cfg.lda, cfg.ldb
    a_stage, b_stage, warps_n, threads = cfg.a_stage, cfg.b_stage, cfg.warps_n, cfg.threads
    stages, buffers = cfg.stages, cfg.buffers
    use_async = stages > 0
    row_chunks_a, row_chunks_b = bk // 8, bn // 8     # 16-byte chunks per tile row
    a_rows, b_rows = threads // row_chunks_a, threads // row_chunks_b  # tile rows per pass
    a_passes, b_passes = bm // a_rows, bk // b_rows                    # chunks per thread
    k_steps = k // bk
    blocks_m, blocks_n = m // bm, n // bn
    group = min(cfg.group, blocks_m) if cfg.group else 0

    @nova.func
    def copy_tiles(sa, sb, a, b, m0, n0, k0, stage, t):
        """Start this thread's cp.async copies of the A and B tiles at k0 into buffer `stage`
        (constant-trip loops, unrolled)."""
        ar, ac = t // row_chunks_a, (t % row_chunks_a) * 8
        br, bc = t // row_chunks_b, (t % row_chunks_b) * 8
        for i in range(a_passes):
            r = ar + i * a_rows
            nova.async_copy(sa, stage * a_stage + r * lda + ac, a, (m0 + r) * k + k0 + ac, 8)
        for i in range(b_passes):
            r = br + i * b_rows
            nova.async_copy(sb, stage * b_stage + r * ldb + bc, b, (k0 + r) * n + n0 + bc, 8)

    @nova.func
    def fetch(regs, a, b, m0, n0, k0, t):
        """Register staging: this thread's 16-byte chunks of the A and B tiles at k0 (`regs` is
        indexed by constants once the loops unroll, so it stays in registers)."""
        ar, ac = t // row_chunks_a, (t % row_chunks_a) * 8
        br, bc = t // row_chunks_b, (t % row_chunks_b) * 8
        for i in range(a_passes):
            for e in range(8):
                regs[8 * i + e] = a[(m0 + ar + i * a_rows) * k + k0 + ac + e]
        for i in range(b_passes):
            for e in range(8):
                regs[8 * (a_passes + i) + e] = b[(k0 + br + i * b_rows) * n + n0 + bc + e]

    @nova.func
    def put(sa, sb, regs, stage, t):
        """Register staging: the fetched chunks into shared buffer `stage`."""
        ar, ac = t // row_chunks_a, (t % row_chunks_a) * 8
        br, bc = t // row_chunks_b, (t % row_chunks_b) * 8
        for i in range(a_passes):
            for e in range(8):
                sa[stage * a_stage + (ar + i * a_rows) * lda + ac + e] = regs[8 * i + e]
        for i in range(b_passes):
            for e in range(8):
                sb[stage * b_stage + (br + i * b_rows) * ldb + bc + e] = \
                    regs[8 * (a_passes + i) + e]

    @nova.kernel
    def mma_matmul(c, a, b):
        sa = nova.dynamic_shared_array(nova.float16, buffers * a_stage)
        sb = nova.dynamic_shared_array(nova.float16, buffers * b_stage, 2 * buffers * a_stage)
        regs = nova.local_array(8 * (a_passes + b_passes), nova.float16)  # register staging
        t = nova.thread_id(0)
        warp = t // 32
        row0 = (warp // warps_n) * WARP_M
        col0 = (warp % warps_n) * WARP_N
        pid = nova.block_id(0)
        if group:  # grouped order: `group` block rows walk the block columns together
            per_group = group * blocks_n
            first = (pid // per_group) * group
            rows = min(blocks_m - first, group)
            m0 = (first + (pid % per_group) % rows) * bm
            n0 = ((pid % per_group) // rows) * bn
        else:
            m0 = (pid // blocks_n) * bm
            n0 = (pid % blocks_n) * bn
        if use_async:
            for s in range(stages - 1):  # the prologue: one group per tile (maybe empty)
                if s < k_steps:
                    copy_tiles(sa, sb, a, b, m0, n0, s * bk, s, t)
                nova.async_commit()
            ahead = stages - 1           # the buffer the next copies go to
        else:
            fetch(regs, a, b, m0, n0, 0, t)
            put(sa, sb, regs, 0, t)
            nova.syncthreads()
        current = 0                      # the buffer this step multiplies
        c00 = nova.mma.fill(0.0)
        c01 = nova.mma.fill(0.0)
        c02 = nova.mma.fill(0.0)
        c03 = nova.mma.fill(0.0)
        c10 = nova.mma.fill(0.0)
        c11 = nova.mma.fill(0.0)
        c12 = nova.mma.fill(0.0)
        c13 = nova.mma.fill(0.0)
        c20 = nova.mma.fill(0.0)
        c21 = nova.mma.fill(0.0)
        c22 = nova.mma.fill(0.0)
        c23 = nova.mma.fill(0.0)
        c30 = nova.mma.fill(0.0)
        c31 = nova.mma.fill(0.0)
        c32 = nova.mma.fill(0.0)
        c33 = nova.mma.fill(0.0)
        for step in range(k_steps):
            if use_async:
                nova.async_wait(stages - 2)  # this thread's copies of tile `step` landed
                nova.syncthreads()           # everyone's; and buffer `ahead` is free
                if step + stages - 1 < k_steps:
                    copy_tiles(sa, sb, a, b, m0, n0, (step + stages - 1) * bk, ahead, t)
                nova.async_commit()          # every step commits: wait counts stay exact
                ahead = ahead + 1 if ahead + 1 < stages else 0
            elif step + 1 < k_steps:         # the next tiles travel while this step multiplies
                fetch(regs, a, b, m0, n0, (step + 1) * bk, t)
            sa0 = current * a_stage + row0 * lda
            sb0 = current * b_stage + col0
            for kk in range(0, bk, 16):
                a0 = nova.mma.load(sa, sa0 + kk, "a", ld=lda)
                a1 = nova.mma.load(sa, sa0 + 16 * lda + kk, "a", ld=lda)
                a2 = nova.mma.load(sa, sa0 + 32 * lda + kk, "a", ld=lda)
                a3 = nova.mma.load(sa, sa0 + 48 * lda + kk, "a", ld=lda)
                b0 = nova.mma.load(sb, sb0 + kk * ldb, "b", ld=ldb)
                b1 = nova.mma.load(sb, sb0 + kk * ldb + 16, "b", ld=ldb)
                b2 = nova.mma.load(sb, sb0 + kk * ldb + 32, "b", ld=ldb)
                b3 = nova.mma.load(sb, sb0 + kk * ldb + 48, "b", ld=ldb)
                c00 = nova.mma.mma(a0, b0, c00)
                c01 = nova.mma.mma(a0, b1, c01)
                c02 = nova.mma.mma(a0, b2, c02)
                c03 = nova.mma.mma(a0, b3, c03)
                c10 = nova.mma.mma(a1, b0, c10)
                c11 = nova.mma.mma(a1, b1, c11)
                c12 = nova.mma.mma(a1, b2, c12)
                c13 = nova.mma.mma(a1, b3, c13)
                c20 = nova.mma.mma(a2, b0, c20)
                c21 = nova.mma.mma(a2, b1, c21)
                c22 = nova.mma.mma(a2, b2, c22)
                c23 = nova.mma.mma(a2, b3, c23)
                c30 = nova.mma.mma(a3, b0, c30)
                c31 = nova.mma.mma(a3, b1, c31)
                c32 = nova.mma.mma(a3, b2, c32)
                c33 = nova.mma.mma(a3, b3, c33)
            if not use_async:
                if step + 1 < k_steps:
                    put(sa, sb, regs, 1 - current, t)
                nova.syncthreads()
            current = current + 1 if current + 1 < buffers else 0
        out = (m0 + row0) * n + n0 + col0
        nova.mma.store(c, out, c00, ld=n)
        nova.mma.store(c, out + 16, c01, ld=n)
        nova.mma.store(c, out + 32, c02, ld=n)
        nova.mma.store(c, out + 48, c03, ld=n)
        nova.mma.store(c, out + 16 * n, c10, ld=n)
        nova.mma.store(c, out + 16 * n + 16, c11, ld=n)
        nova.mma.store(c, out + 16 * n + 32, c12, ld=n)
        nova.mma.store(c, out + 16 * n + 48, c13, ld=n)
        nova.mma.store(c, out + 32 * n, c20, ld=n)
        nova.mma.store(c, out + 32 * n + 16, c21, ld=n)
        nova.mma.store(c, out + 32 * n + 32, c22, ld=n)
        nova.mma.store(c, out + 32 * n + 48, c23, ld=n)
        nova.mma.store(c, out + 48 * n, c30, ld=n)
        nova.mma.store(c, out + 48 * n + 16, c31, ld=n)
        nova.mma.store(c, out + 48 * n + 32, c32, ld=n)
        nova.mma.store(c, out + 48 * n + 48, c33, ld=n)

    return mma_matmul


def make_wgmma_matmul(m: int, n: int, k: int, cfg: Config) -> Any:
    """The Hopper kernel for C[m, n] = A[m, k] @ B[k, n] (row-major, flattened): each
    warpgroup owns 64 rows of the BM x BN block tile, multiplied by `nova.wgmma` (m64nBNk16,
    operands straight from shared memory). Per stage the A tile (BM x 64, K-major) and the B tile
    (64 x BN, N-major: B's rows are contiguous in N) sit in 128-byte swizzled layouts: A row r
    at byte r * 128 with its 16-byte chunk c at (c ^ r % 8) * 16 (8-row atoms 1024 bytes apart:
    SBO 1024); B as 64-column blocks of 64 x 128 bytes (LBO 8192 bytes apart), k row at
    (k / 8) * 1024 + (k % 8) * 128, chunk c at (c ^ k % 8) * 16 (SBO 1024). cp.async fills
    them (16 bytes a copy, the swizzle applied to the destination; `fence_shared` hands the
    landed copies to the async proxy the tensor cores read through). Pipeline: stages - 2 tiles
    travel while one is multiplied and the previous step's MMAs may still run
    (`wgmma.wait(1)`): a step waits for its tile, one barrier (which also tells that every
    warpgroup's MMAs of two steps ago are done), starts the copies of the tile stages - 2
    ahead into that freed buffer, then issues its 4 MMAs (K step 64) and commits them."""
    if m % cfg.bm or n % cfg.bn or k % cfg.bk:
        raise ValueError(f"sizes must be multiples of ({cfg.bm}, {cfg.bn}, {cfg.bk}), got "
                         f"({m}, {n}, {k})")
    bm, bn, bk, stages, threads = cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.threads
    a_stage, b_stage = bm * bk, bk * bn                       # elements per stage
    a_chunks, b_chunks = a_stage // 8 // threads, b_stage // 8 // threads
    row_chunks_b = bn // 8
    k_steps = k // bk
    blocks_m, blocks_n = m // bm, n // bn
    group = min(cfg.group, blocks_m) if cfg.group else 0
    ahead_tiles = stages - 2

    @nova.func
    def copy_tiles(sa, sb, a, b, m0, n0, k0, stage, t):
        """This thread's cp.async copies of the A and B tiles at k0 into buffer `stage`, at
        their swizzled places."""
        for i in range(a_chunks):
            q = t + i * threads
            r, c = q // 8, q % 8
            nova.async_copy(sa, stage * a_stage + r * 64 + ((c ^ (r % 8)) * 8), a,
                            (m0 + r) * k + k0 + c * 8, 8)
        for i in range(b_chunks):
            q = t + i * threads
            kr, cn = q // row_chunks_b, q % row_chunks_b
            c = cn % 8
            nova.async_copy(sb, stage * b_stage + (cn // 8) * 4096 + (kr // 8) * 512
                            + (kr % 8) * 64 + ((c ^ (kr % 8)) * 8), b,
                            (k0 + kr) * n + n0 + cn * 8, 8)

    @nova.kernel
    def wgmma_matmul(c, a, b):
        sa = nova.dynamic_shared_array(nova.float16, stages * a_stage)
        sb = nova.dynamic_shared_array(nova.float16, stages * b_stage, 2 * stages * a_stage)
        t = nova.thread_id(0)
        wg = t // WARPGROUP
        pid = nova.block_id(0)
        if group:
            per_group = group * blocks_n
            first = (pid // per_group) * group
            rows = min(blocks_m - first, group)
            m0 = (first + (pid % per_group) % rows) * bm
            n0 = ((pid % per_group) // rows) * bn
        else:
            m0 = (pid // blocks_n) * bm
            n0 = (pid % blocks_n) * bn
        for s in range(ahead_tiles):
            if s < k_steps:
                copy_tiles(sa, sb, a, b, m0, n0, s * bk, s, t)
            nova.async_commit()
        acc = nova.wgmma.zero(bn)
        for step in range(k_steps):
            nova.async_wait(ahead_tiles - 1)   # this thread's copies of tile `step` landed,
            nova.wgmma.fence_shared()          # visible to the tensor cores' async proxy
            nova.syncthreads()                 # everyone's; MMAs of step - 2 all retired
            if step + ahead_tiles < k_steps:
                copy_tiles(sa, sb, a, b, m0, n0, (step + ahead_tiles) * bk,
                           (step + ahead_tiles) % stages, t)
            nova.async_commit()
            buf = step % stages
            nova.wgmma.fence()
            for kk in range(4):
                da = nova.wgmma.descriptor(sa, buf * a_stage + wg * WG_M * 64 + kk * 16,
                                           SWIZZLE, 16, 1024)
                db = nova.wgmma.descriptor(sb, buf * b_stage + kk * 1024, SWIZZLE, 8192, 1024)
                acc = nova.wgmma.mma(acc, da, db, layout_b="row")
            nova.wgmma.commit()
            nova.wgmma.wait(1)
        nova.wgmma.wait(0)
        nova.wgmma.store(c, (m0 + wg * WG_M) * n + n0, acc, n)

    return wgmma_matmul


def make_kernel(m: int, n: int, k: int, cfg: Config) -> Any:
    """The kernel of a configuration (wgmma or the nova.mma one)."""
    return (make_wgmma_matmul if cfg.wgmma else make_mma_matmul)(m, n, k, cfg)


def launch(kern: Any, cfg: Config, size: int, c: Any, a: Any, b: Any) -> None:
    """One launch of a make_mma_matmul kernel for size^3."""
    kern[cfg.grid(size, size), cfg.threads, None, cfg.shared_bytes](c, a, b)


def _timed(device: nova.Device, fn: Any, repeat: int) -> float:
    """Median seconds per `fn()` (CUDA events on the device's default stream; wall on cpu)."""
    fn()
    device.synchronize()
    times = []
    for _ in range(repeat):
        if device.kind == "cuda":
            start, end = device.create_event(timing=True), device.create_event(timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_ms(end) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            device.synchronize()
            times.append(time.perf_counter() - t)
    return float(np.median(times))


def check(got: np.ndarray, want: np.ndarray) -> tuple[bool, float]:
    """(ok, max relative error): every element within 1e-3 of the product's scale. NaN (never
    written) fails."""
    scale = float(np.max(np.abs(want))) or 1.0
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    return bool(np.isfinite(err) and err <= 1e-3), err


def _peer(row: dict[str, Any], name: str, fn: Any) -> None:
    """Run a peer; one that fails is reported in the row, not raised."""
    try:
        row.update(fn())
    except Exception as exc:
        row[name] = f"failed: {type(exc).__name__}: {exc}"[:200]


def _cupy_peer(a_host: np.ndarray, b_host: np.ndarray, want: np.ndarray, flops: float,
               repeat: int) -> dict[str, Any]:
    import cupy

    ca, cb = cupy.asarray(a_host), cupy.asarray(b_host)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    out = cupy.matmul(ca, cb)
    times = []
    for _ in range(repeat):
        start.record()
        out = cupy.matmul(ca, cb)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    ok, _ = check(cupy.asnumpy(out).astype(np.float32), want)
    return {"cublas_tflops": flops / float(np.median(times)) / 1e12, "cublas_ok": ok}


def _torch_peer(a_host: np.ndarray, b_host: np.ndarray, want: np.ndarray, flops: float,
                repeat: int) -> dict[str, Any]:
    import torch

    ta, tb = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
    out = torch.matmul(ta, tb)
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = torch.matmul(ta, tb)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    ok, _ = check(out.float().cpu().numpy(), want)
    return {"torch_tflops": flops / float(np.median(times)) / 1e12, "torch_ok": ok}


def _bench_config(device: nova.Device, cfg: Config, size: int, repeat: int, bufs: tuple,
                  want: np.ndarray, row: dict[str, Any]) -> None:
    """Compile, time and check one configuration; its results go into `row`."""
    c, a, b = bufs
    name = f"nova_{cfg}"
    device.memset(c, 0xFF, c.nbytes)  # NaN: a kernel that leaves any of C unwritten fails
    kern = make_kernel(size, size, size, cfg)
    t0 = time.perf_counter()
    launch(kern, cfg, size, c, a, b)
    device.synchronize()
    row[f"{name}_first_call_s"] = time.perf_counter() - t0
    t = _timed(device, lambda: launch(kern, cfg, size, c, a, b), repeat)
    row[f"{name}_tflops"] = 2.0 * size ** 3 / t / 1e12
    ok, err = check(c.numpy().reshape(size, size), want)
    row[f"{name}_ok"], row[f"{name}_max_rel_err"] = ok, err


def bench(device: nova.Device, size: int, repeat: int, configs: list[Config]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    a_host = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b_host = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    bufs = (device.empty(size * size, np.float32), nova.to_device(a_host.reshape(-1), device),
            nova.to_device(b_host.reshape(-1), device))
    flops = 2.0 * size ** 3
    row: dict[str, Any] = {"size": size}
    for cfg in configs:
        _bench_config(device, cfg, size, repeat, bufs, want, row)
    if device.kind == "cuda":
        _peer(row, "cupy", lambda: _cupy_peer(a_host, b_host, want, flops, repeat))
        _peer(row, "torch", lambda: _torch_peer(a_host, b_host, want, flops, repeat))
        if isinstance(row.get("cublas_tflops"), float):
            for cfg in configs:
                row[f"nova_{cfg}_vs_cublas"] = row[f"nova_{cfg}_tflops"] / row["cublas_tflops"]
    return row


def cpu_size(size: int, configs: list[Config]) -> int:
    """The CPU device's check size: at most 256, rounded up to every configuration's tiles."""
    step = math.lcm(*(math.lcm(c.bm, c.bn, c.bk) for c in configs))
    return max(step, min(size, 256) // step * step)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                   help="comma-separated kernel configurations BMxBNxBKsS[gG] (cp.async, S "
                        "stages, block-row group G), BMxBNxBKsS[gG]w (wgmma) or BMxBNxBKr "
                        "(register staging); default "
                        "%(default)s")
    p.add_argument("--out", type=Path, default=None,
                   help="result file (default bench/results/python_mma-<kind>-<date>.json)")
    args = p.parse_args(argv)
    try:
        configs = [Config.parse(text) for text in args.configs.split(",") if text.strip()]
    except ValueError as exc:
        p.error(str(exc))
    if not configs:
        p.error("--configs names no configuration")
    device = nova.get_device(args.device)
    if device.kind == "cuda" and device.properties.compute_capability != (9, 0):
        skipped = [str(c) for c in configs if c.wgmma]
        configs = [c for c in configs if not c.wgmma]
        if skipped:
            print(f"skipping {', '.join(skipped)}: wgmma needs compute capability 9.0, this GPU "
                  f"is {device.arch}")
        if not configs:
            p.error("no configuration runs on this GPU")
    if device.kind == "cpu":
        args.size, args.repeat = cpu_size(args.size, configs), min(args.repeat, 2)
    step = math.lcm(*(math.lcm(c.bm, c.bn, c.bk) for c in configs))
    if args.size % step:
        p.error(f"--size {args.size} is not a multiple of the configurations' tiles ({step})")
    row = bench(device, args.size, args.repeat, configs)
    results = {"device": device.name, "kind": device.kind, "python": platform.python_version(),
               "configs": [str(c) for c in configs], "mma_matmul": row}
    print(f"== fp16 matmul {args.size}^3 on {device.name} (float32 accumulation)")
    for key, value in row.items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {key:34s} {text}")
    checked = [(f"nova {cfg}", row[f"nova_{cfg}_ok"]) for cfg in configs]
    checked += [(peer, row[f"{peer}_ok"]) for peer in ("cublas", "torch") if f"{peer}_ok" in row]
    for what, ok in checked:
        record(f"{what}: C differs from the float64 product", bool(ok))
    if finish():
        print("FAILED: " + ", ".join(what for what, ok in checked if not ok)
              + " (no result file written)")
        return 1
    out_dir = Path(__file__).parent / "results" if args.out is None else args.out.parent
    out_dir.mkdir(exist_ok=True)
    path = args.out or out_dir / f"python_mma-{device.kind}-{date.today()}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

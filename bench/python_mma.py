"""Tensor cores from Python kernels: a float16 matmul written with `nova.mma` against cuBLAS.

The kernel (`make_mma_matmul`): a block computes a 128x128 tile of C = A @ B (float16 A and B,
float32 accumulation and output), stepping through K 32 at a time. Two warp layouts are measured:
8 warps of 64x32 (4x2 accumulator fragments each, fed per 16-deep step by 4 A and 2 B fragments)
and 4 warps of 64x64 (4x4 fragments: half the shared-memory reads per multiply). The A (128x32)
and B (32x128) tiles are double-buffered in shared memory, their rows padded by 8 elements (16
bytes) so the fragment loads hit distinct banks; the next tiles are read from global memory into
registers (16-byte loads: the sizes are compile-time constants, so every chunk's alignment is
known) while the warps multiply the current ones, then stored into the other buffer: one barrier
per K step. The accumulators go straight to C. ptxas (sm_90): 64x32 uses 96 registers, no spills.

Peers in the same run: cuBLAS through `cupy.matmul` on the same float16 arrays (its float16
GEMM accumulates in float32), and `torch.matmul` when PyTorch sees the GPU. Every timed result is
checked against a float64 product of the same inputs (C starts as NaN before each kernel, so a
kernel that leaves any element unwritten fails); a failed check (Nova's or a peer's) prints
FAILED, writes no result file and exits 1 (bench/checks.py).

Usage: python bench/python_mma.py [--device cuda] [--size 4096] [--repeat 20]
On the CPU device (--device cpu; size capped at 256) it checks the kernels only.
Goal (issue 13): nova >= 0.6x cuBLAS at 4096^3 on an H100.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/checks.py, also when imported
from checks import finish, record

import nova

BM, BN, BK = 128, 128, 32           # block tile (M, N) and K step
LDA, LDB = BK + 8, BN + 8           # padded shared rows (conflict-free fragment loads)
A_STAGE, B_STAGE = BM * LDA, BK * LDB
ROW_CHUNKS_A, ROW_CHUNKS_B = BK // 8, BN // 8   # 16-byte chunks (8 x float16) per tile row
WARP_TILES = {"64x32": (2, 4), "64x64": (2, 2)}
"""Warp tile (rows x columns of C per warp) -> the block's warps (along M, along N): 8 warps of
4x2 accumulator fragments, or 4 warps of 4x4 (half the shared-memory reads per multiply, more
registers per thread, fewer threads per block)."""


@nova.func
def fetch8(regs, r, src, s):
    """regs[r:r+8] = src[s:s+8]: one 16-byte load when s is a multiple of 8 (r is a constant
    once LLVM unrolls the callers' loops, so `regs` stays in registers)."""
    regs[r] = src[s]
    regs[r + 1] = src[s + 1]
    regs[r + 2] = src[s + 2]
    regs[r + 3] = src[s + 3]
    regs[r + 4] = src[s + 4]
    regs[r + 5] = src[s + 5]
    regs[r + 6] = src[s + 6]
    regs[r + 7] = src[s + 7]


@nova.func
def put8(dst, d, regs, r):
    """dst[d:d+8] = regs[r:r+8]: one 16-byte shared-memory store."""
    dst[d] = regs[r]
    dst[d + 1] = regs[r + 1]
    dst[d + 2] = regs[r + 2]
    dst[d + 3] = regs[r + 3]
    dst[d + 4] = regs[r + 4]
    dst[d + 5] = regs[r + 5]
    dst[d + 6] = regs[r + 6]
    dst[d + 7] = regs[r + 7]


def threads_of(warp_tile: str) -> int:
    warps_m, warps_n = WARP_TILES[warp_tile]
    return 32 * warps_m * warps_n


def make_mma_matmul(m: int, n: int, k: int, warp_tile: str = "64x32") -> Any:
    """The kernel for C[m, n] = A[m, k] @ B[k, n] (row-major, passed flattened to 1-D), sizes
    multiples of the block tile; launch with grid (n // BN, m // BM) and threads_of(warp_tile)
    threads. The sizes are compile-time constants: index arithmetic folds, and LLVM knows every
    16-byte chunk's alignment (16-byte global loads and shared stores)."""
    if m % BM or n % BN or k % BK:
        raise ValueError(f"sizes must be multiples of ({BM}, {BN}, {BK}), got ({m}, {n}, {k})")
    warps_m, warps_n = WARP_TILES[warp_tile]
    threads = threads_of(warp_tile)
    wm, wn = BM // warps_m, BN // warps_n
    a_rows, b_rows = threads // ROW_CHUNKS_A, threads // ROW_CHUNKS_B  # tile rows per pass
    a_passes, b_passes = BM // a_rows, BK // b_rows                    # chunks per thread
    k_steps = k // BK

    @nova.func
    def fetch(regs, a, b, m0, n0, k0, t):
        """This thread's 16-byte chunks of the A and B tiles at k0 (constant-trip loops that
        LLVM unrolls, so `regs` is indexed by constants and stays in registers)."""
        ar, ac = t // ROW_CHUNKS_A, (t % ROW_CHUNKS_A) * 8
        br, bc = t // ROW_CHUNKS_B, (t % ROW_CHUNKS_B) * 8
        for i in range(a_passes):
            fetch8(regs, 8 * i, a, (m0 + ar + i * a_rows) * k + k0 + ac)
        for i in range(b_passes):
            fetch8(regs, 8 * (a_passes + i), b, (k0 + br + i * b_rows) * n + n0 + bc)

    @nova.func
    def put(sa, sb, regs, stage, t):
        """The fetched chunks into shared-memory buffer `stage`."""
        ar, ac = t // ROW_CHUNKS_A, (t % ROW_CHUNKS_A) * 8
        br, bc = t // ROW_CHUNKS_B, (t % ROW_CHUNKS_B) * 8
        for i in range(a_passes):
            put8(sa, stage * A_STAGE + (ar + i * a_rows) * LDA + ac, regs, 8 * i)
        for i in range(b_passes):
            put8(sb, stage * B_STAGE + (br + i * b_rows) * LDB + bc, regs, 8 * (a_passes + i))

    @nova.kernel
    def mma_64x32(c, a, b):
        sa = nova.shared_array(2 * A_STAGE, nova.float16)
        sb = nova.shared_array(2 * B_STAGE, nova.float16)
        regs = nova.local_array(8 * (a_passes + b_passes), nova.float16)
        t = nova.thread_id(0)
        warp = t // 32
        row0 = (warp // warps_n) * wm
        col0 = (warp % warps_n) * wn
        m0 = nova.block_id(1) * BM
        n0 = nova.block_id(0) * BN
        fetch(regs, a, b, m0, n0, 0, t)
        put(sa, sb, regs, 0, t)
        nova.syncthreads()
        c00 = nova.mma.fill(0.0)
        c01 = nova.mma.fill(0.0)
        c10 = nova.mma.fill(0.0)
        c11 = nova.mma.fill(0.0)
        c20 = nova.mma.fill(0.0)
        c21 = nova.mma.fill(0.0)
        c30 = nova.mma.fill(0.0)
        c31 = nova.mma.fill(0.0)
        for step in range(k_steps):
            stage = step % 2
            if step + 1 < k_steps:  # the next tiles travel while this step multiplies
                fetch(regs, a, b, m0, n0, (step + 1) * BK, t)
            sa0 = stage * A_STAGE + row0 * LDA
            sb0 = stage * B_STAGE + col0
            for kk in range(0, BK, 16):
                a0 = nova.mma.load(sa, sa0 + kk, "a", ld=LDA)
                a1 = nova.mma.load(sa, sa0 + 16 * LDA + kk, "a", ld=LDA)
                a2 = nova.mma.load(sa, sa0 + 32 * LDA + kk, "a", ld=LDA)
                a3 = nova.mma.load(sa, sa0 + 48 * LDA + kk, "a", ld=LDA)
                b0 = nova.mma.load(sb, sb0 + kk * LDB, "b", ld=LDB)
                b1 = nova.mma.load(sb, sb0 + kk * LDB + 16, "b", ld=LDB)
                c00 = nova.mma.mma(a0, b0, c00)
                c01 = nova.mma.mma(a0, b1, c01)
                c10 = nova.mma.mma(a1, b0, c10)
                c11 = nova.mma.mma(a1, b1, c11)
                c20 = nova.mma.mma(a2, b0, c20)
                c21 = nova.mma.mma(a2, b1, c21)
                c30 = nova.mma.mma(a3, b0, c30)
                c31 = nova.mma.mma(a3, b1, c31)
            if step + 1 < k_steps:
                put(sa, sb, regs, 1 - stage, t)
            nova.syncthreads()
        out = (m0 + row0) * n + n0 + col0
        nova.mma.store(c, out, c00, ld=n)
        nova.mma.store(c, out + 16, c01, ld=n)
        nova.mma.store(c, out + 16 * n, c10, ld=n)
        nova.mma.store(c, out + 16 * n + 16, c11, ld=n)
        nova.mma.store(c, out + 32 * n, c20, ld=n)
        nova.mma.store(c, out + 32 * n + 16, c21, ld=n)
        nova.mma.store(c, out + 48 * n, c30, ld=n)
        nova.mma.store(c, out + 48 * n + 16, c31, ld=n)

    @nova.kernel
    def mma_64x64(c, a, b):
        sa = nova.shared_array(2 * A_STAGE, nova.float16)
        sb = nova.shared_array(2 * B_STAGE, nova.float16)
        regs = nova.local_array(8 * (a_passes + b_passes), nova.float16)
        t = nova.thread_id(0)
        warp = t // 32
        row0 = (warp // warps_n) * wm
        col0 = (warp % warps_n) * wn
        m0 = nova.block_id(1) * BM
        n0 = nova.block_id(0) * BN
        fetch(regs, a, b, m0, n0, 0, t)
        put(sa, sb, regs, 0, t)
        nova.syncthreads()
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
            stage = step % 2
            if step + 1 < k_steps:
                fetch(regs, a, b, m0, n0, (step + 1) * BK, t)
            sa0 = stage * A_STAGE + row0 * LDA
            sb0 = stage * B_STAGE + col0
            for kk in range(0, BK, 16):
                a0 = nova.mma.load(sa, sa0 + kk, "a", ld=LDA)
                a1 = nova.mma.load(sa, sa0 + 16 * LDA + kk, "a", ld=LDA)
                a2 = nova.mma.load(sa, sa0 + 32 * LDA + kk, "a", ld=LDA)
                a3 = nova.mma.load(sa, sa0 + 48 * LDA + kk, "a", ld=LDA)
                b0 = nova.mma.load(sb, sb0 + kk * LDB, "b", ld=LDB)
                b1 = nova.mma.load(sb, sb0 + kk * LDB + 16, "b", ld=LDB)
                b2 = nova.mma.load(sb, sb0 + kk * LDB + 32, "b", ld=LDB)
                b3 = nova.mma.load(sb, sb0 + kk * LDB + 48, "b", ld=LDB)
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
            if step + 1 < k_steps:
                put(sa, sb, regs, 1 - stage, t)
            nova.syncthreads()
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

    return mma_64x32 if warp_tile == "64x32" else mma_64x64


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


def bench(device: nova.Device, size: int, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    a_host = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b_host = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    a = nova.to_device(a_host.reshape(-1), device)
    b = nova.to_device(b_host.reshape(-1), device)
    c = device.empty(size * size, np.float32)
    grid = (size // BN, size // BM)
    flops = 2.0 * size ** 3
    row: dict[str, Any] = {"size": size}
    for tile in WARP_TILES:
        device.memset(c, 0xFF, c.nbytes)  # NaN: a kernel that leaves any of C unwritten fails
        kern, threads = make_mma_matmul(size, size, size, tile), threads_of(tile)
        t0 = time.perf_counter()
        kern[grid, threads](c, a, b)
        device.synchronize()
        row[f"nova_{tile}_first_call_s"] = time.perf_counter() - t0
        t = _timed(device, lambda kern=kern, threads=threads: kern[grid, threads](c, a, b),
                   repeat)
        row[f"nova_{tile}_tflops"] = flops / t / 1e12
        ok, err = check(c.numpy().reshape(size, size), want)
        row[f"nova_{tile}_ok"], row[f"nova_{tile}_max_rel_err"] = ok, err
    if device.kind == "cuda":
        _peer(row, "cupy", lambda: _cupy_peer(a_host, b_host, want, flops, repeat))
        _peer(row, "torch", lambda: _torch_peer(a_host, b_host, want, flops, repeat))
        if isinstance(row.get("cublas_tflops"), float):
            for tile in WARP_TILES:
                row[f"nova_{tile}_vs_cublas"] = row[f"nova_{tile}_tflops"] / row["cublas_tflops"]
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--out", type=Path, default=None,
                   help="result file (default bench/results/python_mma-<kind>-<date>.json)")
    args = p.parse_args(argv)
    device = nova.get_device(args.device)
    if device.kind == "cpu":
        args.size, args.repeat = min(args.size, 256), min(args.repeat, 2)
    row = bench(device, args.size, args.repeat)
    results = {"device": device.name, "kind": device.kind, "python": platform.python_version(),
               "mma_matmul": row}
    print(f"== fp16 matmul {args.size}^3 on {device.name} (float32 accumulation)")
    for key, value in row.items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {key:24s} {text}")
    checked = [(f"nova {tile}", row[f"nova_{tile}_ok"]) for tile in WARP_TILES]
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

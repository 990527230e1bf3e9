"""Tensor cores from Python kernels: a float16 matmul written with `nova.mma` against cuBLAS.

The kernel (`make_mma_matmul`): a block of 8 warps computes a 128x128 tile of C = A @ B (float16
A and B, float32 accumulation and output), stepping through K 32 at a time. Each warp owns a
64x32 piece: 4x2 accumulator fragments, fed per 16-deep step by 4 A and 2 B fragments loaded
from shared memory. The A (128x32) and B (32x128) tiles are double-buffered in shared memory,
their rows padded by 8 elements (16 bytes) so the fragment loads hit distinct banks; the next
tiles are read from global memory into registers (16-byte loads: the sizes are compile-time
constants, so every chunk's alignment is known) while the warps multiply the current ones, then
stored into the other buffer: one barrier per K step. The accumulators go straight to C.

Peers in the same run: cuBLAS through `cupy.matmul` on the same float16 arrays (its float16
GEMM accumulates in float32), and `torch.matmul` when PyTorch sees the GPU. Every timed result is
checked against a float32 product (C starts as NaN, so a kernel that writes nothing fails).

Usage: python bench/python_mma.py [--device cuda] [--size 4096] [--repeat 20]
On the CPU device (--device cpu; size capped at 256) it checks the kernel only.
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

import nova

BM, BN, BK = 128, 128, 32           # block tile (M, N) and K step
WARPS_M, WARPS_N = 2, 4             # 8 warps, each a WM x WN piece of the block tile
WM, WN = BM // WARPS_M, BN // WARPS_N
THREADS = 32 * WARPS_M * WARPS_N
LDA, LDB = BK + 8, BN + 8           # padded shared rows (conflict-free fragment loads)
A_STAGE, B_STAGE = BM * LDA, BK * LDB
ROW_CHUNKS_A, ROW_CHUNKS_B = BK // 8, BN // 8   # 16-byte chunks (8 x float16) per tile row
assert BM * BK == 2 * 8 * THREADS and BK * BN == 2 * 8 * THREADS  # two chunks of each per thread


@nova.func
def fetch8(regs, r, src, s):
    """regs[r:r+8] = src[s:s+8]: one 16-byte load when s is a multiple of 8 (r is a constant,
    so `regs` stays in registers)."""
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


def make_mma_matmul(m: int, n: int, k: int) -> Any:
    """The kernel for C[m, n] = A[m, k] @ B[k, n] (row-major, passed flattened to 1-D), sizes
    multiples of the block tile; launch with grid (n // BN, m // BM) and THREADS threads."""
    if m % BM or n % BN or k % BK:
        raise ValueError(f"sizes must be multiples of ({BM}, {BN}, {BK}), got ({m}, {n}, {k})")
    k_steps = k // BK

    @nova.func
    def fetch(regs, a, b, m0, n0, k0, t):
        """This thread's two 16-byte chunks of the A tile and two of the B tile at k0."""
        ar, ac = t // ROW_CHUNKS_A, (t % ROW_CHUNKS_A) * 8
        br, bc = t // ROW_CHUNKS_B, (t % ROW_CHUNKS_B) * 8
        fetch8(regs, 0, a, (m0 + ar) * k + k0 + ac)
        fetch8(regs, 8, a, (m0 + ar + BM // 2) * k + k0 + ac)
        fetch8(regs, 16, b, (k0 + br) * n + n0 + bc)
        fetch8(regs, 24, b, (k0 + br + BK // 2) * n + n0 + bc)

    @nova.func
    def put(sa, sb, regs, stage, t):
        """The fetched chunks into shared-memory buffer `stage`."""
        ar, ac = t // ROW_CHUNKS_A, (t % ROW_CHUNKS_A) * 8
        br, bc = t // ROW_CHUNKS_B, (t % ROW_CHUNKS_B) * 8
        put8(sa, stage * A_STAGE + ar * LDA + ac, regs, 0)
        put8(sa, stage * A_STAGE + (ar + BM // 2) * LDA + ac, regs, 8)
        put8(sb, stage * B_STAGE + br * LDB + bc, regs, 16)
        put8(sb, stage * B_STAGE + (br + BK // 2) * LDB + bc, regs, 24)

    @nova.kernel
    def mma_matmul(c, a, b):
        sa = nova.shared_array(2 * A_STAGE, nova.float16)
        sb = nova.shared_array(2 * B_STAGE, nova.float16)
        regs = nova.local_array(32, nova.float16)
        t = nova.thread_id(0)
        warp = t // 32
        wm = (warp // WARPS_N) * WM
        wn = (warp % WARPS_N) * WN
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
            sa0 = stage * A_STAGE + wm * LDA
            sb0 = stage * B_STAGE + wn
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
        out = (m0 + wm) * n + n0 + wn
        nova.mma.store(c, out, c00, ld=n)
        nova.mma.store(c, out + 16, c01, ld=n)
        nova.mma.store(c, out + 16 * n, c10, ld=n)
        nova.mma.store(c, out + 16 * n + 16, c11, ld=n)
        nova.mma.store(c, out + 32 * n, c20, ld=n)
        nova.mma.store(c, out + 32 * n + 16, c21, ld=n)
        nova.mma.store(c, out + 48 * n, c30, ld=n)
        nova.mma.store(c, out + 48 * n + 16, c31, ld=n)

    return mma_matmul


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
    device.memset(c, 0xFF, c.nbytes)  # NaN: a kernel that writes nothing fails the check
    kern = make_mma_matmul(size, size, size)
    grid = (size // BN, size // BM)
    flops = 2.0 * size ** 3
    t0 = time.perf_counter()
    kern[grid, THREADS](c, a, b)
    device.synchronize()
    row: dict[str, Any] = {"size": size, "first_call_s": time.perf_counter() - t0}
    t = _timed(device, lambda: kern[grid, THREADS](c, a, b), repeat)
    row["nova_tflops"] = flops / t / 1e12
    row["nova_ok"], row["nova_max_rel_err"] = check(c.numpy().reshape(size, size), want)
    if device.kind == "cuda":
        _peer(row, "cupy", lambda: _cupy_peer(a_host, b_host, want, flops, repeat))
        _peer(row, "torch", lambda: _torch_peer(a_host, b_host, want, flops, repeat))
        if isinstance(row.get("cublas_tflops"), float):
            row["nova_vs_cublas"] = row["nova_tflops"] / row["cublas_tflops"]
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=20)
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
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"python_mma-{device.kind}-{date.today()}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")
    return 0 if row["nova_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""Python kernels (@nova.kernel) on the GPU against their peers, in one run (issue 5's goals).

1. Bandwidth: an elementwise kernel (out = a * x) against the device-to-device copy rate (same
   bytes: read n, write n) and CuPy's and PyTorch's elementwise multiply. Variants: one element
   per thread (`nova`), grid-stride loops with 4/8 scalar loads in flight (`nova_x4/x8`), four
   neighbouring elements per thread, which Nova compiles to 16-byte vector accesses when the
   launch finds the arrays aligned and disjoint (`nova_v4`), and that in a grid-stride loop
   (`nova_v4x2`). Goal: >= 90% of the copy rate. Each sample times 10 back-to-back launches.
2. Matmul (fp32): the tiled shared-memory kernel of the test suite (16x16 tiles) and a
   register-blocked one (64x64 block tile, 4x4 outputs per thread) against cuBLAS through
   `cupy.matmul`; reports the ratios.
3. Compile latency of the first call (cold: empty cache; warm: compiled code from the disk
   cache in a fresh kernel object) and cached-call launch overhead (host time per launch of a
   tiny kernel on device arrays), against numba-cuda where installed.

Every result is checked against NumPy/CuPy; a mismatch is reported in the table (never raised).
Prints a table and writes JSON (bench/results/python_kernels-<date>.json).

Usage: python bench/python_kernels.py [--device cuda] [--n 67108864] [--matmul 2048]
       [--repeat 20] [--launches 5000]
On the CPU device (--device cpu, small sizes) it checks the kernels only; peers need CUDA.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import checks
import numpy as np

import nova
from nova import config
from nova.lang.api import KernelFunction

BLOCK = 256
TILE = 16
BM, BN, BK, TM, TN = 64, 64, 16, 4, 4  # register-blocked matmul: 16x16 threads


def _scale(out, x, a):
    i = nova.global_id(0)
    if i < len(x):
        out[i] = a * x[i]


scale = nova.kernel(_scale)


@nova.kernel
def scale4(out, x, a):
    """The same map, written for bandwidth: a grid-stride loop with four independent loads in
    flight per thread. One 4-byte load per thread cannot cover HBM latency (Little's law: ~4 MB
    must be in flight at 4.8 TB/s, and a full H200 holds ~270k threads)."""
    n = len(x)
    stride = nova.grid_dim(0) * nova.block_dim(0)
    i = nova.global_id(0)
    while i + 3 * stride < n:
        v0 = x[i]
        v1 = x[i + stride]
        v2 = x[i + 2 * stride]
        v3 = x[i + 3 * stride]
        out[i] = a * v0
        out[i + stride] = a * v1
        out[i + 2 * stride] = a * v2
        out[i + 3 * stride] = a * v3
        i += 4 * stride
    while i < n:
        out[i] = a * x[i]
        i += stride


@nova.kernel
def scale8(out, x, a):
    """As scale4 with eight independent loads in flight per thread."""
    n = len(x)
    stride = nova.grid_dim(0) * nova.block_dim(0)
    i = nova.global_id(0)
    while i + 7 * stride < n:
        v0 = x[i]
        v1 = x[i + stride]
        v2 = x[i + 2 * stride]
        v3 = x[i + 3 * stride]
        v4 = x[i + 4 * stride]
        v5 = x[i + 5 * stride]
        v6 = x[i + 6 * stride]
        v7 = x[i + 7 * stride]
        out[i] = a * v0
        out[i + stride] = a * v1
        out[i + 2 * stride] = a * v2
        out[i + 3 * stride] = a * v3
        out[i + 4 * stride] = a * v4
        out[i + 5 * stride] = a * v5
        out[i + 6 * stride] = a * v6
        out[i + 7 * stride] = a * v7
        i += 8 * stride
    while i < n:
        out[i] = a * x[i]
        i += stride


@nova.kernel
def scale_v4(out, x, a):
    """Four neighbouring elements per thread: with `out` and `x` 16-byte aligned and disjoint
    (checked at launch, T.ArrayType), LLVM merges them into one 16-byte load (ld.global.nc.v4)
    and one 16-byte store per thread, as a CUDA programmer would with float4."""
    n = len(x)
    i = nova.global_id(0) * 4
    if i + 3 < n:
        v0 = x[i]
        v1 = x[i + 1]
        v2 = x[i + 2]
        v3 = x[i + 3]
        out[i] = a * v0
        out[i + 1] = a * v1
        out[i + 2] = a * v2
        out[i + 3] = a * v3
    else:
        while i < n:
            out[i] = a * x[i]
            i += 1


@nova.kernel
def scale_v4x2(out, x, a):
    """scale_v4 in a grid-stride loop with two 16-byte loads in flight per thread."""
    n = len(x)
    stride = nova.grid_dim(0) * nova.block_dim(0) * 4
    i = nova.global_id(0) * 4
    while i + stride + 3 < n:
        j = i + stride
        v0 = x[i]
        v1 = x[i + 1]
        v2 = x[i + 2]
        v3 = x[i + 3]
        w0 = x[j]
        w1 = x[j + 1]
        w2 = x[j + 2]
        w3 = x[j + 3]
        out[i] = a * v0
        out[i + 1] = a * v1
        out[i + 2] = a * v2
        out[i + 3] = a * v3
        out[j] = a * w0
        out[j + 1] = a * w1
        out[j + 2] = a * w2
        out[j + 3] = a * w3
        i += 2 * stride
    while i < n:
        k = i
        while k < i + 4 and k < n:
            out[k] = a * x[k]
            k += 1
        i += stride


@nova.kernel
def tiled_matmul(c, a, b):
    sa = nova.shared_array((TILE, TILE), nova.float32)
    sb = nova.shared_array((TILE, TILE), nova.float32)
    tx = nova.thread_id(0)
    ty = nova.thread_id(1)
    row = nova.block_id(1) * TILE + ty
    col = nova.block_id(0) * TILE + tx
    n = a.shape[0]
    k = a.shape[1]
    m = b.shape[1]
    acc = nova.float32(0)
    for t in range((k + TILE - 1) // TILE):
        kk = t * TILE
        sa[ty, tx] = a[row, kk + tx] if row < n and kk + tx < k else 0
        sb[ty, tx] = b[kk + ty, col] if kk + ty < k and col < m else 0
        nova.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        nova.syncthreads()
    if row < n and col < m:
        c[row, col] = acc


@nova.kernel
def blocked_matmul(c, a, b):
    sa = nova.shared_array((BK, BM), nova.float32)  # the A tile, transposed
    sb = nova.shared_array((BK, BN), nova.float32)
    acc = nova.local_array((TM, TN), nova.float32)
    tx = nova.thread_id(0)
    ty = nova.thread_id(1)
    tid = ty * 16 + tx
    row0 = nova.block_id(1) * BM
    col0 = nova.block_id(0) * BN
    n = a.shape[0]
    k = a.shape[1]
    m = b.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = 0.0
    for kk in range(0, k, BK):
        for step in range(BM * BK // 256):
            e = tid + step * 256
            r = e // BK
            q = e % BK
            sa[q, r] = a[row0 + r, kk + q] if row0 + r < n and kk + q < k else 0.0
            r2 = e // BN
            q2 = e % BN
            sb[r2, q2] = b[kk + r2, col0 + q2] if kk + r2 < k and col0 + q2 < m else 0.0
        nova.syncthreads()
        for p in range(BK):
            for i in range(TM):
                av = sa[p, ty * TM + i]
                for j in range(TN):
                    acc[i, j] += av * sb[p, tx * TN + j]
        nova.syncthreads()
    for i in range(TM):
        for j in range(TN):
            r = row0 + ty * TM + i
            q = col0 + tx * TN + j
            if r < n and q < m:
                c[r, q] = acc[i, j]


def _timed(device: nova.Device, fn: Any, repeat: int, batch: int = 1) -> float:
    """Median seconds per `fn()` on the device's default stream (CUDA events; wall on cpu).
    With `batch` > 1 each sample times that many back-to-back calls: the host's launch cost of
    the first call is then the only one the events see (the others overlap the GPU's work), so
    the figure is the kernel's, not the Python launch path's."""
    fn()
    device.synchronize()
    times = []
    for _ in range(repeat):
        if device.kind == "cuda":
            start, end = device.create_event(timing=True), device.create_event(timing=True)
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_ms(end) / 1e3 / batch)
        else:
            t = time.perf_counter()
            for _ in range(batch):
                fn()
            device.synchronize()
            times.append((time.perf_counter() - t) / batch)
    return float(np.median(times))


def _cupy() -> Any:
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _cupy_seconds(cupy: Any, fn: Any, repeat: int, batch: int = 1) -> float:
    """Median seconds per `fn()` on CuPy's current stream (CuPy events; `batch` as _timed)."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    fn()
    times = []
    for _ in range(repeat):
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3 / batch)
    return float(np.median(times))


def _peer(row: dict[str, Any], name: str, fn: Any) -> None:
    """Run a peer measurement; a peer that fails here is reported in the row, not raised."""
    try:
        row.update(fn())
    except Exception as exc:
        row[name] = f"failed: {type(exc).__name__}: {exc}"[:200]


BANDWIDTH_BATCH = 10
"""Back-to-back launches per timed sample in bench_bandwidth (see _timed)."""


def bench_bandwidth(device: nova.Device, n: int, repeat: int) -> dict[str, Any]:
    x_host = np.random.default_rng(0).random(n, dtype=np.float32)
    x = nova.to_device(x_host, device)
    out = device.empty(n, np.float32)
    expect = x_host * np.float32(2)
    nbytes = 2 * n * 4
    sms = device.properties.multiprocessor_count if device.kind == "cuda" else 4
    grid = (n + BLOCK - 1) // BLOCK
    grid_v4 = (n + 4 * BLOCK - 1) // (4 * BLOCK)
    variants = [  # (row key, kernel, grid): one element per thread first
        ("nova", scale, grid),
        ("nova_x4", scale4, min(grid, sms * 8)),
        ("nova_x8", scale8, min(grid, sms * 8)),
        ("nova_v4", scale_v4, grid_v4),
        ("nova_v4x2", scale_v4x2, min(grid_v4, sms * 8)),
    ]
    row: dict[str, Any] = {"n": n, "batch": BANDWIDTH_BATCH}
    for key, kern, g in variants:
        device.memset(out, 0)
        t = _timed(device, lambda k=kern, g=g: k[g, BLOCK](out, x, np.float32(2)), repeat,
                   BANDWIDTH_BATCH)
        row[f"{key}_gbs"] = nbytes / t / 1e9
        row[f"{key}_ok"] = bool(np.array_equal(out.numpy(), expect))
    t = _timed(device, lambda: device.copy_dtod(out, x, stream=device.default_stream), repeat,
               BANDWIDTH_BATCH)
    row["copy_gbs"] = nbytes / t / 1e9
    for key, _, _ in variants:
        row[f"{key}_vs_copy"] = row[f"{key}_gbs"] / row["copy_gbs"]
    cupy = _cupy() if device.kind == "cuda" else None
    if cupy is not None:
        def run() -> dict[str, float]:
            cx = cupy.asarray(x_host)
            cout = cupy.empty_like(cx)
            gbs = nbytes / _cupy_seconds(
                cupy, lambda: cupy.multiply(cx, np.float32(2), out=cout), repeat,
                BANDWIDTH_BATCH) / 1e9
            best = max(row[f"{key}_gbs"] for key, _, _ in variants)
            return {"cupy_gbs": gbs, "nova_vs_cupy": row["nova_gbs"] / gbs,
                    "nova_best_vs_cupy": best / gbs}

        _peer(row, "cupy", run)
    if device.kind == "cuda":
        _peer(row, "torch", lambda: _torch_bandwidth(x_host, nbytes, repeat, row))
    return row


def _torch_bandwidth(x_host: np.ndarray, nbytes: int, repeat: int,
                     row: dict[str, Any]) -> dict[str, float]:
    """PyTorch's elementwise multiply (torch.mul(x, 2, out=)) timed with CUDA events, batched
    like the others: a second named peer for the elementwise figure."""
    import torch

    tx = torch.from_numpy(x_host).cuda()
    tout = torch.empty_like(tx)
    torch.mul(tx, 2.0, out=tout)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(BANDWIDTH_BATCH):
            torch.mul(tx, 2.0, out=tout)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / BANDWIDTH_BATCH)
    gbs = nbytes / float(np.median(times)) / 1e9
    ok = bool(np.array_equal(tout.cpu().numpy(), x_host * np.float32(2)))
    return {"torch_gbs": gbs, "torch_ok": ok, "torch_vs_copy": gbs / row["copy_gbs"]}


def bench_matmul(device: nova.Device, size: int, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    a_host = rng.random((size, size), dtype=np.float32)
    b_host = rng.random((size, size), dtype=np.float32)
    a, b = nova.to_device(a_host, device), nova.to_device(b_host, device)
    c = device.empty((size, size), np.float32)
    flops = 2.0 * size ** 3
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    row: dict[str, Any] = {"size": size}
    g16 = ((size + TILE - 1) // TILE, (size + TILE - 1) // TILE)
    t = _timed(device, lambda: tiled_matmul[g16, (TILE, TILE)](c, a, b), repeat)
    row["tiled_tflops"] = flops / t / 1e12
    row["tiled_ok"] = bool(np.allclose(c.numpy(), want, rtol=1e-3, atol=1e-3))
    g64 = ((size + BN - 1) // BN, (size + BM - 1) // BM)
    device.memset(c, 0xFF, c.nbytes)  # NaNs: the tiled kernel's result must not pass for this one's
    t = _timed(device, lambda: blocked_matmul[g64, (16, 16)](c, a, b), repeat)
    row["blocked_tflops"] = flops / t / 1e12
    row["blocked_ok"] = bool(np.allclose(c.numpy(), want, rtol=1e-3, atol=1e-3))
    cupy = _cupy() if device.kind == "cuda" else None
    if cupy is not None:
        def run() -> dict[str, float]:
            ca, cb = cupy.asarray(a_host), cupy.asarray(b_host)
            tflops = flops / _cupy_seconds(cupy, lambda: cupy.matmul(ca, cb), repeat) / 1e12
            return {"cublas_tflops": tflops,
                    "tiled_vs_cublas": row["tiled_tflops"] / tflops,
                    "blocked_vs_cublas": row["blocked_tflops"] / tflops}

        _peer(row, "cupy", run)
    return row


def _launch_loop(launch: Any, sync: Any, count: int) -> float:
    launch()
    sync()
    start = time.perf_counter()
    for _ in range(count):
        launch()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / count


def bench_latency(device: nova.Device, launches: int) -> dict[str, Any]:
    row: dict[str, Any] = {}
    x = nova.to_device(np.zeros(BLOCK, np.float32), device)
    with tempfile.TemporaryDirectory() as tmp, config.scoped(cache_dir=Path(tmp),
                                                              cache_enabled=True):
        cold = KernelFunction(_scale)
        t = time.perf_counter()
        cold[1, BLOCK](x, x, np.float32(1))
        device.synchronize()
        row["nova_first_call_cold_s"] = time.perf_counter() - t
        warm = KernelFunction(_scale)
        t = time.perf_counter()
        warm[1, BLOCK](x, x, np.float32(1))
        device.synchronize()
        row["nova_first_call_disk_cache_s"] = time.perf_counter() - t
        row["nova_launch_us"] = 1e6 * _launch_loop(
            lambda: warm[1, BLOCK](x, x, np.float32(1)), device.synchronize, launches)
    if device.kind != "cuda":
        return row
    try:
        if not hasattr(np, "row_stack"):
            # numba-cuda 0.2x still calls np.row_stack, removed in NumPy 2.5: a shim so the
            # peer runs at all (it changes nothing about what is timed).
            np.row_stack = np.vstack  # type: ignore[attr-defined]
        from numba import cuda
    except ImportError:
        row["numba"] = "not installed"
        return row
    _peer(row, "numba", lambda: _numba_latency(cuda, launches))
    return row


def _numba_latency(cuda: Any, launches: int) -> dict[str, float]:
    def nb_scale(out, xs, a):
        i = cuda.grid(1)
        if i < xs.shape[0]:
            out[i] = a * xs[i]

    dx = cuda.to_device(np.zeros(BLOCK, np.float32))
    t = time.perf_counter()
    jitted = cuda.jit(nb_scale)
    jitted[1, BLOCK](dx, dx, np.float32(1))
    cuda.synchronize()
    first = time.perf_counter() - t
    per_launch = _launch_loop(lambda: jitted[1, BLOCK](dx, dx, np.float32(1)),
                              cuda.synchronize, launches)
    return {"numba_first_call_s": first, "numba_launch_us": 1e6 * per_launch}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--n", type=int, default=1 << 26)
    p.add_argument("--matmul", type=int, default=2048)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--launches", type=int, default=5000)
    args = p.parse_args(argv)
    device = nova.get_device(args.device)
    if device.kind == "cpu":
        args.n, args.matmul = min(args.n, 1 << 20), min(args.matmul, 128)
        args.repeat, args.launches = min(args.repeat, 3), min(args.launches, 200)
    results = {
        "device": device.name, "kind": device.kind, "python": platform.python_version(),
        "bandwidth": bench_bandwidth(device, args.n, args.repeat),
        "matmul": bench_matmul(device, args.matmul, args.repeat),
        "latency": bench_latency(device, args.launches),
    }
    for section in ("bandwidth", "matmul", "latency"):
        print(f"== {section}")
        for key, value in results[section].items():
            text = f"{value:.4g}" if isinstance(value, float) else str(value)
            print(f"  {key:32s} {text}")
    for section in ("bandwidth", "matmul", "latency"):
        for key, value in results[section].items():
            if key.endswith("_ok"):
                checks.record(f"{section} {key}", bool(value))
    if checks.finish():
        return 1  # no result file for wrong results
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"python_kernels-{device.kind}-{date.today()}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU device vs numba's CUDA simulator and NumPy, on the same kernels (issue 3's goals).

Kernels: `saxpy` (elementwise, y = a*x + y) and `block_sum` (per-block tree reduction in
workgroup memory with barriers in a loop). Nova runs them as compiled MLIR programs on the CPU
device; numba's simulator (NUMBA_ENABLE_CUDASIM=1, run in a subprocess because the variable must
be set before numba is imported) runs the equivalent @cuda.jit kernels; NumPy computes saxpy.
Prints a table and writes JSON (bench/results/cpu_device-<date>.json). Never asserts; it does
check every result against NumPy and reports a mismatch in the table.

Usage: python bench/cpu_device.py [--n-small 16384] [--n-large 4194304] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from datetime import date
from pathlib import Path

import numpy as np
from checks import finish, record

BLOCK = 256

SAXPY_MLIR = """
module attributes {gpu.container_module} {
  func.func @saxpy(%a: f32, %x: memref<?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cb = arith.constant 256 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %cb : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %cb, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %xv = memref.load %x[%i] : memref<?xf32>
        %yv = memref.load %y[%i] : memref<?xf32>
        %ax = arith.mulf %a, %xv : f32
        %r = arith.addf %ax, %yv : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    return
  }
}
"""

BLOCK_SUM_MLIR = """
module attributes {gpu.container_module} {
  func.func @block_sum(%x: memref<?xf32>, %out: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cb = arith.constant 256 : index
    %nb = memref.dim %out, %c0 : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %cb, %sy = %c1, %sz = %c1)
               workgroup(%tile : memref<256xf32, #gpu.address_space<workgroup>>) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %v = memref.load %x[%i] : memref<?xf32>
      memref.store %v, %tile[%tx] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c128 = arith.constant 128 : index
      %c2 = arith.constant 2 : index
      %last = scf.while (%s = %c128) : (index) -> index {
        %more = arith.cmpi ugt, %s, %c0 : index
        scf.condition(%more) %s : index
      } do {
      ^bb0(%s: index):
        %active = arith.cmpi ult, %tx, %s : index
        scf.if %active {
          %j = arith.addi %tx, %s : index
          %p = memref.load %tile[%tx] : memref<256xf32, #gpu.address_space<workgroup>>
          %q = memref.load %tile[%j] : memref<256xf32, #gpu.address_space<workgroup>>
          %r = arith.addf %p, %q : f32
          memref.store %r, %tile[%tx] : memref<256xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
        %next = arith.divui %s, %c2 : index
        scf.yield %next : index
      }
      %first = arith.cmpi eq, %tx, %c0 : index
      scf.if %first {
        %total = memref.load %tile[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
        memref.store %total, %out[%bx] : memref<?xf32>
      }
      gpu.terminator
    }
    return
  }
}
"""

NUMBA_SIM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from numba import cuda, float32

    @cuda.jit
    def saxpy(a, x, y):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < x.shape[0]:
            y[i] = a * x[i] + y[i]

    @cuda.jit
    def block_sum(x, out):
        tile = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        tile[t] = x[cuda.blockIdx.x * 256 + t]
        cuda.syncthreads()
        s = 128
        while s > 0:
            if t < s:
                tile[t] += tile[t + s]
            cuda.syncthreads()
            s //= 2
        if t == 0:
            out[cuda.blockIdx.x] = tile[0]

    n = int(sys.argv[1]); rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32); y = rng.standard_normal(n).astype(np.float32)
    t0 = time.perf_counter(); saxpy[(n + 255) // 256, 256](np.float32(2.0), x, y)
    t_saxpy = time.perf_counter() - t0
    out = np.zeros(n // 256, np.float32)
    t0 = time.perf_counter(); block_sum[n // 256, 256](x, out); t_sum = time.perf_counter() - t0
    print(json.dumps({"saxpy": t_saxpy, "block_sum": t_sum}))
""")


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_numba_sim(n: int) -> dict[str, float] | str:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", NUMBA_SIM, str(n)], env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return f"numba simulator unavailable: {proc.stderr.strip().splitlines()[-1:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-small", type=int, default=16384)
    parser.add_argument("--n-large", type=int, default=1 << 22)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-peers", action="store_true", help="skip the numba simulator")
    args = parser.parse_args()

    import nova

    saxpy = nova.compile(SAXPY_MLIR, device="cpu")
    block_sum = nova.compile(BLOCK_SUM_MLIR, device="cpu")
    rng = np.random.default_rng(0)
    rows = []

    def nova_saxpy(n: int) -> tuple[float, bool]:
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        expect = np.float32(2.0) * x + y
        saxpy.saxpy(np.float32(2.0), x, y.copy())  # warm-up
        work = y.copy()
        seconds = best_of(args.repeat, lambda: saxpy.saxpy(np.float32(2.0), x, work))
        check = y.copy()
        saxpy.saxpy(np.float32(2.0), x, check)
        return seconds, bool(np.allclose(check, expect, rtol=1e-6))

    def nova_block_sum(n: int) -> tuple[float, bool]:
        x = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n // BLOCK, np.float32)
        seconds = best_of(args.repeat, lambda: block_sum.block_sum(x, out))
        expect = x.reshape(-1, BLOCK).sum(axis=1, dtype=np.float64)
        return seconds, bool(np.allclose(out, expect, rtol=1e-4, atol=1e-4))

    sim = run_numba_sim(args.n_small) if not args.no_peers else "skipped (--no-peers)"
    for name, bench in (("saxpy", nova_saxpy), ("block_sum", nova_block_sum)):
        t_nova, ok = bench(args.n_small)
        t_sim = sim.get(name) if isinstance(sim, dict) else None
        rows.append({"kernel": name, "n": args.n_small, "nova_cpu_s": t_nova,
                     "numba_sim_s": t_sim, "speedup_vs_sim": (t_sim / t_nova) if t_sim else None,
                     "correct": ok})

    n = args.n_large
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    t_numpy = best_of(args.repeat, lambda: np.add(np.multiply(np.float32(2.0), x), y, out=y))
    t_nova, ok = nova_saxpy(n)
    rows.append({"kernel": "saxpy", "n": n, "nova_cpu_s": t_nova, "numpy_s": t_numpy,
                 "nova_over_numpy": t_nova / t_numpy, "correct": ok})

    print(f"CPU device benchmark, {date.today()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores")
    print(f"{'kernel':<10} {'n':>9} {'nova cpu':>11} {'peer':>11} {'ratio':>14} correct")
    for r in rows:
        if "numba_sim_s" in r:
            peer = f"{r['numba_sim_s']:.4f}s" if r["numba_sim_s"] else "n/a"
            ratio = f"{r['speedup_vs_sim']:.0f}x faster" if r["speedup_vs_sim"] else str(sim)[:40]
            label = "numba-sim"
        else:
            peer, label = f"{r['numpy_s']:.4f}s", "numpy"
            ratio = f"{r['nova_over_numpy']:.2f}x numpy"
        print(f"{r['kernel']:<10} {r['n']:>9} {r['nova_cpu_s']:>10.4f}s {peer:>11} "
              f"{ratio:>14} {r['correct']} ({label})")
    for r in rows:
        record(f"{r['kernel']} n={r['n']}", bool(r["correct"]))
    if finish():
        return 1  # no result file for wrong results
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / f"cpu_device-{date.today()}.json").write_text(json.dumps(
        {"date": str(date.today()), "machine": platform.node(), "cores": os.cpu_count(),
         "command": "python bench/cpu_device.py " + " ".join(sys.argv[1:]), "rows": rows},
        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU device vs NumPy on the same kernels, MLIR and Python-kernel frontends (issues 3 and 13).

Kernels: `saxpy` (elementwise, y = a*x + y, 256 threads per block) and `block_sum` (per-block
tree reduction of 256 floats in workgroup memory, a barrier in a loop). Each runs as a compiled
MLIR program (`nova.compile(..., device="cpu")`) and as a `@nova.kernel` Python kernel, and NumPy
computes the same result (saxpy: `np.add(np.multiply(a, x), y, out=y)`; block_sum:
`x.reshape(-1, 256).sum(axis=1)`). Every Nova result is checked against NumPy.

Each CPU-device configuration runs in its own subprocess (the settings are read at start-up):
- `native+regions` (the default): kernels compiled for this machine's CPU (NOVA_CPU_ARCH=native)
  and barrier kernels run as barrier regions (NOVA_CPU_REGIONS=1);
- `generic+fibers` (`--baseline`, the CPU device before issue 13): generic x86-64 code, every
  barrier kernel as per-thread fibers.
NumPy is timed in the same subprocess as the Nova kernels it is compared with.

Times are the best of `--repeat` wall-clock calls (after a warm-up call), including the Python
call and the launch. Prints a table and writes JSON
(bench/results/cpu_device-<date>-regions.json).
`--numba-sim` adds numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) at --n-sim elements.

Usage: python bench/cpu_device.py [--sizes 1048576 16777216] [--repeat 20] [--baseline]
       [--baseline-repeat 3] [--numba-sim] [--n-sim 16384]
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
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from checks import failed, finish, record

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

PY_KERNELS = '''
import nova


@nova.kernel(device="cpu")
def saxpy(a, x, y):
    i = nova.global_id(0)
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@nova.kernel(device="cpu")
def block_sum(x, out):
    tile = nova.shared_array(256, nova.float32)
    t = nova.thread_id(0)
    tile[t] = x[nova.block_id(0) * 256 + t]
    nova.syncthreads()
    s = 128
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        nova.syncthreads()
        s //= 2
    if t == 0:
        out[nova.block_id(0)] = tile[0]
'''

CONFIGS = {
    "native+regions": {"NOVA_CPU_ARCH": "native", "NOVA_CPU_REGIONS": "1"},
    "generic+fibers": {"NOVA_CPU_ARCH": "generic", "NOVA_CPU_REGIONS": "0"},
}

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


CPU_SECONDS: list[float] = []
"""Process CPU time (all threads) of the best call of each `best_of`, in call order."""


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Best wall-clock seconds of `repeat` calls after a warm-up; also records the process CPU
    time of the fastest call (on a loaded machine, CPU time / cores bounds the idle wall time)."""
    fn()  # warm-up (first-call compilation, page faults)
    times = []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    wall, cpu = min(times)
    CPU_SECONDS.append(cpu)
    return wall


def _python_kernels() -> object:
    """The @nova.kernel definitions, from a real file (kernels need their source)."""
    import importlib.util
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="nova-bench-")) / "cpu_bench_kernels.py"
    path.write_text(PY_KERNELS)
    spec = importlib.util.spec_from_file_location("cpu_bench_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(sizes: list[int], repeat: int) -> list[dict[str, object]]:
    """Time every kernel, frontend and size in this process (its NOVA_* settings)."""
    import nova

    mlir = {"saxpy": nova.compile(SAXPY_MLIR, device="cpu").saxpy,
            "block_sum": nova.compile(BLOCK_SUM_MLIR, device="cpu").block_sum}
    py = _python_kernels()
    rng = np.random.default_rng(0)
    rows: list[dict[str, object]] = []
    for n in sizes:
        x = rng.standard_normal(n).astype(np.float32)
        y0 = rng.standard_normal(n).astype(np.float32)
        for staged in (False, True):
            rows += _saxpy_rows(mlir["saxpy"], py.saxpy, n, x, y0, repeat, staged)  # type: ignore[attr-defined]
            rows += _block_sum_rows(mlir["block_sum"], py.block_sum, n, x, repeat, staged)  # type: ignore[attr-defined]
    return rows


def _arrays(staged: bool) -> tuple[Callable[[np.ndarray], Any], Callable[[Any], np.ndarray], str,
                                   Callable[[], None]]:
    """How a row passes its arrays: cpu-device Buffers (kernels use them in place), or NumPy
    arrays, which the cpu device stages (copies in and back: it runs kernels in place only on
    its own guarded memory, docs/device-layer.md "Memory isolation on the cpu device"). Also
    what a timed call waits with: a launch on Buffers is stream-ordered (it returns once
    enqueued), so those calls end with the device's synchronize."""
    if staged:
        return (lambda a: a), (lambda a: a), "/np", (lambda: None)
    from nova.runtime.selection import get_device

    device = get_device("cpu")
    return device.to_device, (lambda b: b.numpy()), "", device.synchronize


def _saxpy_rows(mlir: Callable[..., object], py: object, n: int, x: np.ndarray, y0: np.ndarray,
                repeat: int, staged: bool) -> list[dict[str, object]]:
    a = np.float32(2.0)
    work = y0.copy()
    t_np = best_of(repeat, lambda: np.add(np.multiply(a, x), work, out=work))
    put, get, tag, wait = _arrays(staged)
    xs = put(x)
    launches = {
        "mlir": lambda y: (mlir(a, xs, y), wait()),
        "python": lambda y: (py[(n + BLOCK - 1) // BLOCK, BLOCK](a, xs, y), wait()),  # type: ignore[index]
    }
    rows: list[dict[str, object]] = []
    for frontend, launch in launches.items():
        buffer = put(y0.copy())
        seconds = best_of(repeat, lambda launch=launch, buffer=buffer: launch(buffer))  # type: ignore[misc]
        cpu = CPU_SECONDS[-1]
        check = put(y0.copy())
        launch(check)
        ok = bool(np.allclose(get(check), a * x + y0, rtol=1e-5, atol=1e-6))
        rows.append({"kernel": "saxpy", "frontend": frontend + tag, "n": n, "nova_s": seconds,
                     "nova_cpu_s": cpu, "numpy_s": t_np, "correct": ok})
    return rows


def _block_sum_rows(mlir: Callable[..., object], py: object, n: int, x: np.ndarray,
                    repeat: int, staged: bool) -> list[dict[str, object]]:
    put, get, tag, wait = _arrays(staged)
    out = put(np.zeros(n // BLOCK, np.float32))
    xs = put(x)
    t_np = best_of(repeat, lambda: x.reshape(-1, BLOCK).sum(axis=1))
    expect = x.reshape(-1, BLOCK).sum(axis=1, dtype=np.float64)
    sums = {
        "mlir": lambda: (mlir(xs, out), wait()),
        "python": lambda: (py[n // BLOCK, BLOCK](xs, out), wait()),  # type: ignore[index]
    }
    rows: list[dict[str, object]] = []
    for frontend, launch in sums.items():
        if staged:
            out[:] = 0
        else:
            out.copy_from_host(np.zeros(n // BLOCK, np.float32))
        seconds = best_of(repeat, launch)
        ok = bool(np.allclose(get(out), expect, rtol=1e-4, atol=1e-4))
        rows.append({"kernel": "block_sum", "frontend": frontend + tag, "n": n,
                     "nova_s": seconds, "nova_cpu_s": CPU_SECONDS[-1], "numpy_s": t_np,
                     "correct": ok})
    return rows


def run_config(name: str, sizes: list[int], repeat: int) -> list[dict[str, object]]:
    env = dict(os.environ, **CONFIGS[name])
    cmd = [sys.executable, __file__, "--child", "--repeat", str(repeat), "--sizes",
           *map(str, sizes)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{name} run failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_numba_sim(n: int) -> dict[str, float] | str:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", NUMBA_SIM, str(n)], env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return f"numba simulator unavailable: {proc.stderr.strip().splitlines()[-1:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 20, 1 << 24])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--baseline", action="store_true",
                        help="also run generic x86-64 code with fibers (the earlier CPU device)")
    parser.add_argument("--baseline-repeat", type=int, default=3,
                        help="calls timed in the baseline (fibers take seconds at 2^24)")
    parser.add_argument("--numba-sim", action="store_true")
    parser.add_argument("--n-sim", type=int, default=16384)
    parser.add_argument("--in-process", action="store_true",
                        help="run the default configuration in this process (no child: what "
                             "tests/unit/test_bench_checks.py sabotages)")
    parser.add_argument("--no-peers", action="store_true", help="no numba simulator (default)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.sizes, args.repeat)))
        return 0

    names = ["native+regions"] + (["generic+fibers"] if args.baseline else [])
    results = {name: (child(args.sizes, args.repeat) if i == 0 and args.in_process else
                      run_config(name, args.sizes, args.repeat if i == 0 else
                                 args.baseline_repeat))
               for i, name in enumerate(names)}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"CPU device benchmark, {date.today()}, {cpu_model()}, {os.cpu_count()} cores, "
          f"load average {load:.1f} at the end; best of {args.repeat} wall-clock calls "
          f"(cpu time: process CPU seconds of that call, {names[0]}, all threads)")
    head = f"{'kernel':<10} {'frontend':<9} {'n':>9} {'numpy':>10}"
    for name in names:
        head += f" {name:>15} {'/numpy':>7}"
    print(head + f" {'cpu time':>10} correct")
    rows = []
    for i, base in enumerate(results[names[0]]):
        line = (f"{base['kernel']:<10} {base['frontend']:<9} {base['n']:>9} "
                f"{base['numpy_s'] * 1e3:>8.3f}ms")
        correct = True
        row = dict(base)
        for name in names:
            r = results[name][i]
            line += f" {r['nova_s'] * 1e3:>13.3f}ms {r['nova_s'] / r['numpy_s']:>6.2f}x"
            correct = correct and record(
                f"{name} {base['kernel']} ({base['frontend']}, n={base['n']}) matches NumPy",
                bool(r["correct"]))
            row[f"{name}_s"] = r["nova_s"]
        print(line + f" {base['nova_cpu_s'] * 1e3:>8.3f}ms {correct}")
        row["correct"] = correct
        rows.append(row)
    sim = run_numba_sim(args.n_sim) if args.numba_sim and not args.no_peers else None
    if sim is not None:
        print(f"numba CUDA simulator at n={args.n_sim}: {sim}")
    if failed():
        return finish()  # no result file for wrong results
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / f"cpu_device-{date.today()}-regions.json").write_text(json.dumps(
        {"date": str(date.today()), "machine": f"{cpu_model()} ({platform.node()})",
         "cores": os.cpu_count(), "load_average": load,
         "command": "python bench/cpu_device.py " + " ".join(sys.argv[1:]), "rows": rows,
         "numba_sim": sim}, indent=1))
    return finish()


if __name__ == "__main__":
    sys.exit(main())

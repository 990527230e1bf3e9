"""The run-time cost of check_bounds: two Python kernels launched with and without it.

saxpy (one load pair and a store per thread: the worst case on the CPU device, where checked
kernels run their threads as fibers) and a row sum (512 loads per thread: the per-access compare
dominates). Device arrays, so only the kernels are timed; best of `--reps` launches, each waited
for. Prints one line per setting. The outputs are cleared before each setting and checked after
it (exit 1 on a wrong result: bench/checks.py). docs/debugging.md records the numbers.

    python bench/bounds_check.py [--device cpu|cuda] [--reps 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
from checks import finish, record

import nova
from nova.runtime.device import Device
from nova.runtime.selection import get_device

N = 1 << 22
ROWS, COLS = 4096, 512


def kernels(check: bool) -> tuple[Any, Any]:
    """saxpy and rowsum compiled with `check_bounds=check`."""

    @nova.kernel(check_bounds=check)
    def saxpy(out, x, y, a):
        i = nova.global_id(0)
        if i < x.shape[0]:
            out[i] = a * x[i] + y[i]

    @nova.kernel(check_bounds=check)
    def rowsum(out, m):
        r = nova.global_id(0)
        if r < m.shape[0]:
            s = nova.float32(0)
            for j in range(m.shape[1]):
                s += m[r, j]
            out[r] = s

    return saxpy, rowsum


def best_launch(dev: Device, kern: Any, args: tuple[Any, ...], grid: int, block: int,
                reps: int) -> float:
    """Seconds of the fastest of `reps` launches (after one warm-up that compiles)."""
    kern.launch(*args, grid=grid, block=block, device=dev)
    dev.synchronize()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        kern.launch(*args, grid=grid, block=block, device=dev)
        dev.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    dev = get_device(args.device)
    x = dev.to_device(np.ones(N, np.float32))
    y = dev.to_device(np.ones(N, np.float32))
    out = dev.empty(N, "float32")
    m = dev.to_device(np.ones((ROWS, COLS), np.float32))
    sums = dev.empty(ROWS, "float32")
    for check in (False, True):
        saxpy, rowsum = kernels(check)
        dev.memset(out, 0, out.nbytes)
        dev.memset(sums, 0, sums.nbytes)
        a = best_launch(dev, saxpy, (out, x, y, np.float32(2)), N // 256, 256, args.reps)
        b = best_launch(dev, rowsum, (sums, m), ROWS // 128, 128, args.reps)
        record(f"saxpy check_bounds={check}", bool((out.numpy() == 3).all()))
        record(f"rowsum check_bounds={check}", bool((sums.numpy() == COLS).all()))
        print(f"{dev.kind} check_bounds={check}: saxpy {N} f32 {a * 1e3:.3f} ms, "
              f"rowsum {ROWS}x{COLS} f32 {b * 1e3:.3f} ms")
    return finish()


if __name__ == "__main__":
    sys.exit(main())

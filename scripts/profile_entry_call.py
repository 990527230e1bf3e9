"""Profile the Python -> compiled entry call path (cProfile), to find per-call waste.

Usage: python scripts/profile_entry_call.py [--device cuda|cpu] [--calls 20000]
Prints the mean per-call time of a one-kernel entry on device-resident buffers and the top
functions by own time. A diagnostic tool, not a benchmark (see bench/launch_overhead.py).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

PROGRAM = """
module attributes {gpu.container_module} {
  func.func @bump(%x: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%tx] : memref<256xf32>
      %one = arith.constant 1.0 : f32
      %r = arith.addf %v, %one : f32
      memref.store %r, %x[%tx] : memref<256xf32>
      gpu.terminator
    }
    return
  }
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    import nova

    mod = nova.compile(PROGRAM, device=None if args.device == "auto" else args.device)
    buf = mod.device.to_device(np.zeros(256, np.float32))
    for _ in range(200):
        mod.bump(buf)
    start = time.perf_counter()
    for _ in range(args.calls):
        mod.bump(buf)
    per_call = (time.perf_counter() - start) / args.calls * 1e6
    print(f"{mod.device.kind}: {per_call:.2f} us per call (one kernel, device-resident buffer)")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.calls):
        mod.bump(buf)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    expect = 200 + 2 * args.calls
    got = buf.numpy()
    print("result check:", "ok" if np.all(got == expect) else f"WRONG ({got[:4]} != {expect})")


if __name__ == "__main__":
    main()

"""Nova's host cost of a Python-kernel launch, native checked call against the Python call, in
one process (issue 13; no GPU needed).

    python bench/launch_host_ab.py [--launches 20000] [--rounds 25]

On the host section's fake cuda device (bench/launch_overhead.py: the launch module calls a
native no-op driver), the same prepared launch `run = add1.prepare(x, grid=1, block=32)` and
the same specialised `add1[1, 32]` are timed with two classes each, swapped between loops:

- `python`: the generated Python call (nova.lang.guard), which is what every launch ran before
  the checked builtins and what they fall back to (the class layout of that tree);
- `native`: the checked launch builtin (nova.runtime.cuda.py_checked) as the class's `__call__`.

Loops alternate (python, native, python, ...), each of `--launches` launches timed in the
thread's CPU time, so a shared machine's load drifts hit both alike; the table gives the min and
median per launch, beside the launcher's native call with prebuilt slots (the floor). Every
loop's launches are counted by the fake driver, and the last slots it received are checked
(bench/checks.py: a failure prints CHECK FAILED and exits 1).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import checks
from launch_overhead import _fake_cuda_device


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    import nova
    from nova.lang.api import KernelFunction

    def kernel(x):  # type: ignore[no-untyped-def]
        i = nova.thread_id(0)
        x[i] += 1.0

    dev, driver = _fake_cuda_device()
    driver.record_params(5)
    kern = KernelFunction(kernel)
    x = dev.to_device(np.zeros(32, np.float32))
    for _ in range(3):
        kern[1, 32](x)
    configured = kern[1, 32]
    cached_native = type(configured)
    if cached_native.__call__.__class__.__name__ != "builtin_function_or_method":
        print("no checked builtins on this interpreter: nothing to compare")
        return 1
    cached_python = cached_native.__mro__[1]
    run = kern.prepare(x, grid=1, block=32)
    prepared_native = type(run)
    prepared_python = type("PreparedLaunch", (prepared_native.__mro__[1],),
                           {"__slots__": (), "__call__": prepared_native.python_call})
    call, call_args = run.launcher.native_call(run.config,
                                               run.launcher.pack(x.ptr, x.ptr, 0, 32, 1))
    n = args.launches

    def cached() -> None:
        for _ in range(n):
            kern[1, 32](x)

    def prepared() -> None:
        for _ in range(n):
            run(x)

    def floor() -> None:
        for _ in range(n):
            call(*call_args)

    rows: dict[str, list[float]] = {}

    def timed(name: str, body: Callable[[], None], obj: Any = None,
              cls: type | None = None) -> None:
        if obj is not None:
            obj.__class__ = cls
        before = driver.last()[0]
        start = time.thread_time()
        body()
        rows.setdefault(name, []).append((time.thread_time() - start) / n * 1e9)
        made = driver.last()[0] - before
        checks.record(f"{name}: {made} launches reached the driver, {n} expected, with x's "
                      "slots", made == n and driver.last()[11:16] == [x.ptr, x.ptr, 0, 32, 1])

    for _ in range(args.rounds):
        timed("prepared run(x), python call", prepared, run, prepared_python)
        timed("prepared run(x), native", prepared, run, prepared_native)
        timed("cached add1[1, 32](x), python call", cached, configured, cached_python)
        timed("cached add1[1, 32](x), native", cached, configured, cached_native)
        timed("launcher's native call, slots prebuilt", floor)
    if checks.failed():
        return checks.finish()
    print(f"{args.rounds} rounds of {n} launches, thread CPU time, ns/launch; every launch "
          "verified at the fake driver")
    print(f"{'row':44s} {'min':>8s} {'median':>8s}")
    for name, values in rows.items():
        print(f"{name:44s} {min(values):8.1f} {statistics.median(values):8.1f}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())

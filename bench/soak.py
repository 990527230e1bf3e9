"""Soak: memory stays flat over 10^5 calls of every entry shape (issue 12, "No leaks").

Each shape is called `--warmup` times, then `--calls` times, sampling host RSS (after
`malloc_trim`, so freed heap pages do not count), device memory and the runtime's own
accounting before and every `--calls/10` calls:

- `scalars`: `add(i, k)` -> i64 (scalar arguments and result);
- `memref numpy`, `memref buffer`: `step(x)` (a kernel, x += k in place) on a NumPy array
  (staged on cuda, used in place on cpu) and on a device Buffer;
- `returned heap`: `twice(a)` returns a fresh `memref.alloc` (host malloc) of 1 KiB;
- `returned device`: `dtwice(buf)` returns a fresh `gpu.alloc` filled by a kernel;
- `async tokens`: `chain(buf)` with gpu.wait async, an async launch, gpu.wait [token];
- `graph replay`: `mod.capture("gstep", buf)` replayed;
- `python kernel`: an `@nova.kernel` launch (x += k) on a device Buffer.

Calls that return with work still queued (`memref buffer`, `async tokens`, `graph replay`,
`python kernel` on device Buffers) synchronize every `--sync-every` (64) calls, as a program
reading its results does: without that, the cpu device's stream queues grow with contention
between the calling thread and the stream worker (2 loaded cores) and RSS keeps the backlog's
high-water mark, which is not a leak (`--sync-every 0` shows it).

Every shape's results are verified (per call where the call returns something, else the final
contents, which count the calls); `--sabotage SHAPE` builds that shape's code with the wrong
constant, to show the check fails. Memory: RSS (/proc/self/status), the Nova device pool's
reserved bytes, the CUDA driver's default pool (used; cuda only: gpu.alloc's memory) and the
count of returned allocations alive (`nova.runtime.results.stats()`). The run FAILS (exit 1)
when a check fails or when RSS or device memory grew by more than `--limit-mib` (1 MiB) between
the first sample after warm-up and the last, or returned allocations stay alive.

    python bench/soak.py [--device cpu|cuda] [--calls 100000] [--warmup 2000] [--quick]
                         [--shapes a,b] [--sabotage SHAPE] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

import nova

ROOT = Path(__file__).resolve().parents[1]
N = 256  # elements per array: 1 KiB of f32 (the api1 reproducer's smallest case)

_LAUNCH = ("blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1) "
           "threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)")

# One increment kernel body: x[i] = x[i] + K for i < n (i = bx * 64 + tx).
_BODY = """
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {{
        %v = memref.load {src}[%i] : memref<?xf32>
        %w = arith.{op} %v, %k : f32
        memref.store %w, {dst}[%i] : memref<?xf32>
      }}
      gpu.terminator"""

_PRELUDE = """
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c64 : index
    %k = arith.constant {k} : f32"""

PROGRAM = """
module attributes {{gpu.container_module}} {{
  func.func @add(%a: i64, %b: i64) -> i64 {{
    %k = arith.constant {k_scalars} : i64
    %s = arith.addi %a, %b : i64
    %r = arith.addi %s, %k : i64
    return %r : i64
  }}

  func.func @step(%x: memref<?xf32>) {{{prelude_step}
    gpu.launch {launch} {{{body_step}
    }}
    return
  }}

  func.func @gstep(%x: memref<?xf32>) {{{prelude_graph}
    gpu.launch {launch} {{{body_graph}
    }}
    return
  }}

  func.func @twice(%x: memref<?xf32>) -> memref<?xf32> {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %k = arith.constant {k_heap} : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %r = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {{
      %v = memref.load %x[%i] : memref<?xf32>
      %w = arith.mulf %v, %k : f32
      memref.store %w, %r[%i] : memref<?xf32>
    }}
    return %r : memref<?xf32>
  }}

  func.func @dtwice(%x: memref<?xf32>) -> memref<?xf32> {{{prelude_device}
    %d = gpu.alloc (%n) : memref<?xf32>
    gpu.launch {launch} {{{body_device}
    }}
    return %d : memref<?xf32>
  }}

  func.func @chain(%x: memref<?xf32>) {{{prelude_async}
    %t0 = gpu.wait async
    %t1 = gpu.launch async [%t0] {launch} {{{body_async}
    }}
    gpu.wait [%t1]
    return
  }}
}}
"""

SHAPES = ("scalars", "memref numpy", "memref buffer", "returned heap", "returned device",
          "async tokens", "graph replay", "python kernel")

_RIGHT = {"scalars": "7", "memref numpy": "1.0", "memref buffer": "1.0", "returned heap": "2.0",
          "returned device": "2.0", "async tokens": "1.0", "graph replay": "1.0",
          "python kernel": "1.0"}
_WRONG = {"scalars": "8", "returned heap": "3.0", "returned device": "3.0"}  # others: 0.0


def program(sabotage: str | None) -> str:
    """The soak program, with the constant of shape `sabotage` (if any) wrong."""
    k = {s: (_WRONG.get(s, "0.0") if s == sabotage else v) for s, v in _RIGHT.items()}
    # memref numpy and memref buffer share @step: sabotaging either breaks both
    step = k["memref numpy"] if sabotage == "memref numpy" else k["memref buffer"]
    inc = {"src": "%x", "dst": "%x", "op": "addf"}
    return PROGRAM.format(
        k_scalars=k["scalars"], k_heap=k["returned heap"], launch=_LAUNCH,
        prelude_step=_PRELUDE.format(k=step), body_step=_BODY.format(**inc),
        prelude_graph=_PRELUDE.format(k=k["graph replay"]), body_graph=_BODY.format(**inc),
        prelude_device=_PRELUDE.format(k=k["returned device"]),
        body_device=_BODY.format(src="%x", dst="%d", op="mulf"),
        prelude_async=_PRELUDE.format(k=k["async tokens"]), body_async=_BODY.format(**inc))


def _increment(x: Any, k: Any) -> None:
    i = nova.global_id(0)
    if i < len(x):
        x[i] = x[i] + k


# --- measurement ------------------------------------------------------------------------------
def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def driver_pool_used(device: Any) -> int | None:
    """Bytes in use in the CUDA memory pool gpu.alloc draws from (the device's stream-ordered
    pool, `CudaDevice.ordered_pool_usage`, else the default pool), or None on cpu / when the
    driver cannot say."""
    driver = getattr(device, "driver", None)
    if driver is None:
        return None
    try:
        usage = device.ordered_pool_usage()
        if usage is not None:
            return int(usage[0])
        pool = driver.call("cuDeviceGetDefaultMemPool", device.cu_device)
        attr = driver.raw.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT
        return int(driver.call("cuMemPoolGetAttribute", pool, attr))
    except Exception:  # older driver or bindings: report what we have
        return None


def _trim_heap() -> None:
    """Give glibc's free heap pages back to the system (malloc_trim), so RSS counts live memory
    rather than the allocator's high-water mark (fragmentation is not a leak)."""
    with contextlib.suppress(AttributeError, OSError):  # not glibc: RSS as it is
        ctypes.CDLL(None).malloc_trim(0)


def sample(device: Any, calls: int) -> dict[str, Any]:
    from nova.runtime import results

    gc.collect()
    device.synchronize()
    _trim_heap()
    pool = device.pool.stats()
    return {"calls": calls, "rss": rss_bytes(), "pool_reserved": pool.bytes_reserved,
            "pool_in_use": pool.bytes_in_use, "driver_pool_used": driver_pool_used(device),
            "live_results": results.stats().live}


@dataclass
class Case:
    """One entry shape: `call(i)` runs call number i and returns whether its result is right
    (True when the call returns nothing); `final()` checks what the calls left behind."""

    name: str
    call: Callable[[int], bool]
    final: Callable[[int], bool] = lambda total: True
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    in_flight: bool = False  # calls return with work still queued (device Buffers)


def _counter(name: str, buf: Any, run: Callable[[], Any], read: Callable[[], np.ndarray]) -> Case:
    """A shape whose calls each add 1 to every element of `buf` (checked at the end)."""

    def call(i: int) -> bool:
        run()
        return True

    return Case(name, call, lambda total: bool((read() == total).all()),
                in_flight=not isinstance(buf, np.ndarray))


def make_cases(mod: Any, device: Any, sabotage: str | None) -> list[Case]:
    a = np.arange(N, dtype=np.float32)
    doubled = 2 * a
    dev_a = device.to_device(a)
    host = np.zeros(N, np.float32)
    bufs = {name: device.to_device(np.zeros(N, np.float32))
            for name in ("buffer", "async", "graph", "kernel")}
    k_kernel = np.float32(0.0 if sabotage == "python kernel" else 1.0)
    increment = nova.kernel(_increment)
    blocks = -(-N // 64)

    def scalars(i: int) -> bool:
        return bool(mod.add(i, 3) == i + 10)

    def heap(i: int) -> bool:
        return bool(np.array_equal(mod.twice(a), doubled))

    def returned_device(i: int) -> bool:
        return bool(np.array_equal(mod.dtwice(dev_a), doubled))

    graph = mod.capture("gstep", bufs["graph"])
    cases = [
        Case("scalars", scalars),
        _counter("memref numpy", host, lambda: mod.step(host), lambda: host),
        _counter("memref buffer", bufs["buffer"], lambda: mod.step(bufs["buffer"]),
                 bufs["buffer"].numpy),
        Case("returned heap", heap),
        Case("returned device", returned_device),
        _counter("async tokens", bufs["async"], lambda: mod.chain(bufs["async"]),
                 bufs["async"].numpy),
        _counter("graph replay", bufs["graph"], lambda: graph.replay(bufs["graph"]),
                 bufs["graph"].numpy),
        _counter("python kernel", bufs["kernel"],
                 lambda: increment[blocks, 64](bufs["kernel"], k_kernel), bufs["kernel"].numpy),
    ]
    cases[6].cleanup.append(graph.close)
    return cases


def soak(case: Case, device: Any, calls: int, warmup: int, limit: int,
         sync_every: int = 0) -> dict[str, Any]:
    """Run one shape: warm-up, then `calls` calls sampled ten times; the row of the table.
    A shape whose calls leave work in flight synchronizes every `sync_every` calls (0: only
    at the samples)."""
    bad = 0
    for i in range(warmup):
        bad += not case.call(i)
    samples = [sample(device, 0)]
    every = max(1, calls // 10)
    sync = sync_every if case.in_flight and sync_every > 0 else 0
    elapsed = 0.0
    start = time.perf_counter()
    for i in range(warmup, warmup + calls):
        bad += not case.call(i)
        done = i - warmup + 1
        if sync and done % sync == 0:
            device.synchronize()
        if done % every == 0 or done == calls:
            elapsed += time.perf_counter() - start
            samples.append(sample(device, done))
            start = time.perf_counter()
    final_ok = case.final(warmup + calls)
    for cleanup in case.cleanup:
        cleanup()
    first, last = samples[0], samples[-1]
    growth = {"rss": last["rss"] - first["rss"],
              "pool_reserved": last["pool_reserved"] - first["pool_reserved"]}
    if first["driver_pool_used"] is not None and last["driver_pool_used"] is not None:
        growth["driver_pool_used"] = last["driver_pool_used"] - first["driver_pool_used"]
    live_growth = last["live_results"] - first["live_results"]
    flat = all(g <= limit for g in growth.values()) and live_growth <= 0
    return {"shape": case.name, "calls": calls, "warmup": warmup,
            "us_per_call": elapsed / max(calls, 1) * 1e6, "bad_calls": bad,
            "final_ok": bool(final_ok), "ok": bad == 0 and bool(final_ok),
            "sync_every": sync, "growth": growth, "live_results_growth": live_growth,
            "flat": flat,
            "samples": samples}


# --- report -----------------------------------------------------------------------------------
def _mib(value: float | None) -> str:
    return f"{'n/a':>9}" if value is None else f"{value / 2**20:+9.3f}"


def print_table(kind: str, rows: list[dict[str, Any]], limit: int) -> None:
    print(f"\nSoak on {kind}: growth after warm-up, MiB (FAIL above {limit / 2**20:g} MiB)")
    head = (f"{'shape':<16} {'calls':>7} {'us/call':>8} {'RSS MiB':>8} {'RSS +':>9} "
            f"{'pool +':>9} {'driver +':>9} {'live +':>6} {'check':>5} {'flat':>5}")
    print(head)
    print("-" * len(head))
    for r in rows:
        g = r["growth"]
        print(f"{r['shape']:<16} {r['calls']:>7} {r['us_per_call']:8.1f} "
              f"{r['samples'][-1]['rss'] / 2**20:8.1f} {_mib(g['rss'])} "
              f"{_mib(g['pool_reserved'])} {_mib(g.get('driver_pool_used'))} "
              f"{r['live_results_growth']:>+6} {'ok' if r['ok'] else 'FAIL':>5} "
              f"{'yes' if r['flat'] else 'NO':>5}")


def print_samples(rows: list[dict[str, Any]]) -> None:
    print("\nSamples (calls: RSS MiB / pool reserved MiB / live results)")
    for r in rows:
        cells = [f"{s['calls']}: {s['rss'] / 2**20:.1f}/{s['pool_reserved'] / 2**20:.2f}/"
                 f"{s['live_results']}" for s in r["samples"]]
        print(f"  {r['shape']:<16} " + "  ".join(cells))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--quick", action="store_true",
                        help="3000 calls after 300 warm-up calls (a smoke run)")
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help="comma-separated shapes to run (default: all)")
    parser.add_argument("--sabotage", choices=SHAPES, default=None,
                        help="build this shape's code wrong: its check must fail")
    parser.add_argument("--limit-mib", type=float, default=1.0)
    parser.add_argument("--sync-every", type=int, default=64,
                        help="shapes whose calls return with work in flight (device Buffers, "
                        "kernel launches) synchronize every N calls, as a program reading its "
                        "results would (0: only at the samples; the queue of launches then "
                        "grows with host/worker contention and RSS keeps its high-water mark)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.calls, args.warmup = 3000, 300
    unknown = set(args.shapes.split(",")) - set(SHAPES)
    if unknown:
        parser.error(f"unknown shape(s) {sorted(unknown)}; shapes: {', '.join(SHAPES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from nova.runtime.selection import get_device

    device = get_device(args.device)
    limit = int(args.limit_mib * 2**20)
    wanted = args.shapes.split(",")
    mod = nova.compile(program(args.sabotage), device=args.device)
    rows = []
    try:
        for case in make_cases(mod, device, args.sabotage):
            if case.name in wanted:
                rows.append(soak(case, device, args.calls, args.warmup, limit,
                                 args.sync_every))
            else:
                for cleanup in case.cleanup:
                    cleanup()
    finally:
        mod.close()
    print_table(args.device, rows, limit)
    print_samples(rows)
    failed = [r["shape"] for r in rows if not (r["ok"] and r["flat"])]
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'all shapes flat and correct'}")
    if args.json is not None:
        report = {"benchmark": "soak", "date": date.today().isoformat(),
                  "device": args.device, "python": platform.python_version(),
                  "limit_bytes": limit, "sabotage": args.sabotage, "rows": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

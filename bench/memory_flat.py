"""Memory stays flat over 10 000 calls of a compiled entry point (issue 3).

Three entry points of one compiled program, each called `--calls` times after `--warmup` calls:

- `step(x)`: one kernel (x[i] += 1) on a device-resident Buffer: nothing should be allocated.
- `alloc_step(x)`: gpu.alloc inside the program, copy in, kernel, copy out, gpu.dealloc: every
  call allocates and frees device memory (cuMemAllocFromPoolAsync/cuMemFreeAsync on the device's
  stream-ordered pool on cuda, the caching pool on cpu).
- `scratch_step(x, d)`: the same copies and kernel on a preallocated scratch Buffer `d`, so
  `alloc_step / scratch_step` is the cost of allocating and freeing alone (`step` does no
  copies).
- `alloc_only_step(x)`: `step`'s kernel (which also stores its result into a scratch buffer)
  between a gpu.alloc and a gpu.dealloc, no copies: `alloc_only_step / step` is the cost of the
  allocate/free pair against the same kernel without it.
- automatic graphs (cuda; docs/async.md, "Automatic graphs"): `alloc_step` and `scratch_step`
  issue three stream operations from replayable host code, so from their third identical call
  they run as one recorded CUDA graph (graph memory for the allocation); `step` and
  `alloc_only_step` issue one and run directly. Same run: `alloc_step` and `scratch_step` again
  with automatic graphs off (`..., no automatic graphs`: the host code and the block cache on
  every call), and `step` replayed as an explicit graph (`mod.capture`), which shows what a
  graph does for a single launch.
- cuda only, same run: `alloc_step` and `alloc_only_step` again with the native block cache off
  (nova.runtime.cuda.native_blocks: every pair then goes to the driver's pool), the peers that
  show what the cache saves.
- `step(host)` with a NumPy array: the executor stages it to the device and back every call.
- peers, same run: `step` and `alloc_step` compiled after Nova's `async-region` pass (upstream's
  `gpu-async-region`: one token chain, one host wait), which the compile pipeline does not run
  (docs/async.md, "Why the pipeline does not run async-region"): against the default lowering,
  which already waits once per call, they show what the chain's stream costs.
- native peer, cuda only, same run (bench/peers/launch_loop.cu `chain=MODE`, built with nvcc by
  bench/native_peer.py; skipped with a note without nvcc): C++ making per call the driver calls
  each of `step`, `alloc_step`, `scratch_step` and `alloc_only_step` needs, on the same kernel
  shape (x[i] += 1, 256-thread blocks, Nova's kernel parameters), on one non-blocking stream
  with one cuStreamSynchronize per call; the copies are cuMemcpyAsync, the allocation
  cuMemAllocFromPoolAsync/cuMemFreeAsync from a pool that keeps freed memory (release threshold
  UINT64_MAX, as Nova's). It verifies that x counts its calls (a wrong count fails the
  benchmark). Its table gives each native time beside Nova's (`nova/native`), then both
  programs' three ratios and Nova's divided by the native one.

How to read the ratios: `alloc_step / scratch_step` and `alloc_only_step / step` are the cost of
the allocate/free pair alone; `alloc_step / step` also counts the two device-to-device copies,
which are two more operations in a synchronised chain: each costs about what the kernel launch
does (a few microseconds of enqueue and completion latency, whoever issues it), so a native
program pays that ratio too. Nova's `alloc_step / step` is honest only next to the native one:
the `nova / native` line says how much of it is Nova's and how much the driver's.

For each, host RSS (/proc/self/status) and device memory are sampled before, every `--calls/10`
calls, and after: cuda `mem_info()` free bytes and the memory pool gpu.alloc draws from (used
and reserved, cuMemPoolGetAttribute) on cuda, and Nova's caching pool (`device.pool.stats()`) on
both (on cpu device memory is host memory, so RSS covers it; `mem_info()` there is the whole
system's and is not reported as growth). The result is checked once (x counts the calls) and
reported, as are the growth per 1000 calls and the time per call, and the ratios of
`alloc_step` to `step` and to `scratch_step`. Prints a table and writes JSON (the native rows
and ratios under "native_peer"); never asserts on times. A failed verification (Nova's or the
native peer's) is a failed check (bench/checks.py): exit 1, no JSON written.

    python bench/memory_flat.py [--device cpu|cuda|all] [--calls 10000] [--warmup 200] [--n 4096]
                                [--json bench/results/memory_flat-<date>.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import native_peer
import numpy as np
from checks import finish, record

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
module attributes {gpu.container_module} {
  func.func @step(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c256 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %x[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    return
  }

  func.func @alloc_step(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c256 : index
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %v = memref.load %d[%i] : memref<?xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %d[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    gpu.memcpy %x, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    return
  }

  func.func @alloc_only_step(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c256 : index
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %d[%i] : memref<?xf32>
        memref.store %w, %x[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    gpu.dealloc %d : memref<?xf32>
    return
  }

  func.func @scratch_step(%x: memref<?xf32>, %d: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c256 : index
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %v = memref.load %d[%i] : memref<?xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %d[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    gpu.memcpy %x, %d : memref<?xf32>, memref<?xf32>
    return
  }
}
"""


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


def driver_pool(device: Any) -> dict[str, int] | None:
    """Used and reserved bytes of the CUDA memory pool gpu.alloc draws from (the device's
    stream-ordered pool, else the default pool), or None on cpu / when the query fails."""
    driver = getattr(device, "driver", None)
    if driver is None:
        return None
    try:
        usage = getattr(device, "ordered_pool_usage", lambda: None)()
        if usage is not None:
            return {"used": int(usage[0]), "reserved": int(usage[1])}
        raw = driver.raw
        pool = driver.call("cuDeviceGetDefaultMemPool", device.cu_device)
        attr = raw.CUmemPool_attribute
        used = driver.call("cuMemPoolGetAttribute", pool,
                           attr.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
        reserved = driver.call("cuMemPoolGetAttribute", pool,
                               attr.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        return {"used": int(used), "reserved": int(reserved)}
    except Exception:  # an older driver or bindings: report what we have
        return None


def sample(device: Any) -> dict[str, Any]:
    gc.collect()
    device.synchronize()
    stats = device.pool.stats()
    free, total = device.mem_info()
    return {"rss": rss_bytes(), "device_free": free, "device_total": total,
            "pool_in_use": stats.bytes_in_use, "pool_cached": stats.bytes_cached,
            "pool_device_allocs": stats.device_allocs, "pool_device_frees": stats.device_frees,
            "driver_pool": driver_pool(device)}


def measure(device: Any, call: Callable[[], None], calls: int, warmup: int) -> dict[str, Any]:
    for _ in range(warmup):
        call()
    before = sample(device)
    samples = [dict(before, calls=0)]
    every = max(1, calls // 10)
    start = time.perf_counter()
    elapsed = 0.0
    for i in range(1, calls + 1):
        call()
        if i % every == 0 or i == calls:
            elapsed += time.perf_counter() - start
            samples.append(dict(sample(device), calls=i))
            start = time.perf_counter()
    after = samples[-1]
    per_k = calls / 1000

    def growth(key: str) -> float:
        return (after[key] - before[key]) / per_k

    result = {
        "us_per_call": elapsed / calls * 1e6,
        "rss_before": before["rss"], "rss_after": after["rss"],
        "rss_growth_per_1000_calls": growth("rss"),
        # on cpu mem_info() is the whole system's free memory: other processes' noise
        "device_used_growth_per_1000_calls": (None if device.kind == "cpu"
                                              else -growth("device_free")),
        "pool_in_use_after": after["pool_in_use"], "pool_cached_after": after["pool_cached"],
        "pool_raw_allocs_during": after["pool_device_allocs"] - before["pool_device_allocs"],
        "samples": samples,
    }
    if before["driver_pool"] and after["driver_pool"]:
        result["driver_pool_used_growth"] = (after["driver_pool"]["used"]
                                             - before["driver_pool"]["used"])
        result["driver_pool_reserved_after"] = after["driver_pool"]["reserved"]
    return result


def run_device(kind: str, calls: int, warmup: int, n: int) -> list[dict[str, Any]]:
    import nova
    from nova.runtime.selection import get_device

    device = get_device(kind)
    mod = nova.compile(PROGRAM, device=kind)
    region = nova.compile(async_region_program(), device=kind)
    rows = []
    buf = device.to_device(np.zeros(n, np.float32))
    scratch = device.to_device(np.zeros(n, np.float32))
    host = np.zeros(n, np.float32)
    cases: list[tuple[str, Callable[[], None], Callable[[], np.ndarray]]] = [
        ("step(device buffer)", lambda: mod.step(buf), buf.numpy),
        ("alloc_step(device buffer)", lambda: mod.alloc_step(buf), buf.numpy),
        ("scratch_step(device buffers)", lambda: mod.scratch_step(buf, scratch), buf.numpy),
        ("alloc_only_step(device buffer)", lambda: mod.alloc_only_step(buf), buf.numpy),
        ("step(numpy array)", lambda: mod.step(host), lambda: host),
    ]
    cache = block_cache(device)
    if cache is not None:
        cases += [(f"{name}, no block cache", call, value)
                  for name, call, value in cases if name.startswith("alloc")]
    captured = None
    if mod.alloc_step.auto_graphs:
        cases += [(f"{name}, {DIRECT}", call, value) for name, call, value in cases
                  if name.startswith(("alloc_step", "scratch_step")) and "," not in name]
        captured = mod.capture("step", buf)
        cases.append((f"step(device buffer), {CAPTURED}", lambda: captured(buf), buf.numpy))
    cases += [(f"step(device buffer), {REGION}", lambda: region.step(buf), buf.numpy),
              (f"alloc_step(device buffer), {REGION}", lambda: region.alloc_step(buf), buf.numpy)]
    for name, call, value in cases:
        if cache is not None:
            cache.set_block_cache("no block cache" not in name)
        # the direct path's rows: the host code runs on every call (the block cache serves
        # its allocations; an automatic graph's are graph memory)
        graphs = DIRECT not in name and "no block cache" not in name
        mod.alloc_step.auto_graphs = mod.scratch_step.auto_graphs = graphs
        start_value = float(value()[0])
        row = {"device": kind, "case": name, "calls": calls, "warmup": warmup, "n": n,
               **measure(device, call, calls, warmup)}
        got = float(value()[0]) - start_value
        row["result_ok"] = bool(got == calls + warmup)
        rows.append(row)
    if cache is not None:
        cache.set_block_cache(True)
    if captured is not None:
        captured.close()
    mod.close()
    region.close()
    return rows


REGION = "async-region"
DIRECT = "no automatic graphs"
CAPTURED = "mod.capture replay"


def async_region_program() -> str:
    """PROGRAM after `outline-kernels,async-region` (what `nova-opt -p` prints): every GPU op of
    an entry async on one token chain, one `gpu.wait` before each return."""
    from nova.ir.parser import parse_mlir, print_mlir
    from nova.passes.registry import run_pipeline

    module = parse_mlir(PROGRAM, "memory_flat.mlir")
    run_pipeline(module, "outline-kernels,async-region")
    return print_mlir(module)


def block_cache(device: Any) -> Any:
    """The cuda device's native ABI (its block cache can be switched off), or None."""
    if device.kind != "cuda":
        return None
    from nova.runtime.cuda.abi import native_for

    return native_for(device)


NATIVE_CASES = {"step": "step(device buffer)", "alloc_step": "alloc_step(device buffer)",
                "scratch_step": "scratch_step(device buffers)",
                "alloc_only_step": "alloc_only_step(device buffer)"}
"""bench/peers/launch_loop.cu's chain modes and the Nova row each one mirrors (with automatic
graphs, the Nova rows of the direct path: `..., no automatic graphs`)."""
NATIVE_GRAPH_CASES = {"alloc_step": "alloc_step(device buffer)",
                      "scratch_step": "scratch_step(device buffers)"}
"""The chain modes the peer also runs as one CUDA graph per call (`graph`: captured once,
cuGraphLaunch + cuStreamSynchronize per call), beside Nova's automatic graphs."""
NATIVE_REPEATS = 10


def native_modes(graphs: bool) -> list[tuple[str, str, tuple[str, ...]]]:
    """(mode label, the Nova case it mirrors, extra peer arguments) of every native row."""
    modes = [(mode, f"{case}, {DIRECT}" if graphs and mode in NATIVE_GRAPH_CASES else case, ())
             for mode, case in NATIVE_CASES.items()]
    if graphs:
        modes += [(f"{mode} graph", case, ("graph",)) for mode, case in NATIVE_GRAPH_CASES.items()]
    return modes


def run_native(calls: int, warmup: int, n: int,
               graphs: bool = False) -> tuple[list[dict[str, Any]], str | None]:
    """The native peer's rows (cuda only): each entry point's driver calls made by C++ per call
    (bench/peers/launch_loop.cu `chain=MODE`: the same kernel shape and parameters, the copies
    as cuMemcpyAsync, the allocation from a pool that keeps freed memory, one
    cuStreamSynchronize), `warmup` calls, then NATIVE_REPEATS runs of calls/NATIVE_REPEATS;
    us_per_call is their mean, like Nova's rows. The peer checks that x counts its calls (a
    wrong count: result_ok False, a failed check); a peer that fails to run gets result_ok None
    and its error as the note. Returns (rows, None), or ([], why) when nvcc is missing."""
    per_repeat = max(1, calls // NATIVE_REPEATS)
    rows = []
    for mode, nova_case, extra in native_modes(graphs):
        row: dict[str, Any] = {"device": "cuda", "case": f"native C++ {mode}", "mode": mode,
                               "nova_case": nova_case, "calls": per_repeat * NATIVE_REPEATS,
                               "warmup": warmup, "n": n}
        try:
            us = native_peer.run("launch_loop", str(per_repeat), str(NATIVE_REPEATS),
                                 f"chain={mode.split()[0]}", f"elements={n}",
                                 f"warmup={warmup}", *extra)
        except native_peer.PeerUnavailable as exc:
            return [], str(exc)
        except native_peer.WrongResult as exc:
            text = str(exc)
            row.update(result_ok=False, note=text if text.startswith("WRONG") else f"WRONG: {text}")
        except Exception as exc:  # the build or a driver call failed: noted, as for other peers
            row.update(result_ok=None, note=f"error: {type(exc).__name__}: {exc}"[:300])
        else:
            row.update(us_per_call=statistics.fmean(us), min_us=min(us),
                       median_us=statistics.median(us), result_ok=True,
                       note=f"verified by the peer: x counts {warmup + per_repeat * len(us)} "
                            "calls")
        rows.append(row)
    return rows, None


def ratios(us: dict[str, float]) -> dict[str, float]:
    """The three ratios of issue 13 from microseconds per call by entry point name."""
    return {"alloc_step / step": us["alloc_step"] / us["step"],
            "alloc_step / scratch_step": us["alloc_step"] / us["scratch_step"],
            "alloc_only_step / step": us["alloc_only_step"] / us["step"]}


def print_native(native: list[dict[str, Any]], nova_us: dict[str, float]) -> dict[str, Any]:
    """The native peer's table and its ratios beside Nova's (same run, same GPU); returns the
    ratios for the JSON report (empty when a native row did not run)."""
    print("\nNative peer, same GPU, same run (bench/peers/launch_loop.cu: C++ driver calls per "
          "call, same kernel)")
    head = (f"{'case':<32} {'us/call':>8} {'min us':>8} {'median':>8} {'nova us':>8} "
            f"{'nova/native':>11}  note")
    print(head)
    print("-" * len(head))
    for r in native:
        call = nova_us.get(r["nova_case"])
        if "us_per_call" in r:
            times = f"{r['us_per_call']:8.1f} {r['min_us']:8.1f} {r['median_us']:8.1f}"
            vs = f"{call / r['us_per_call']:10.2f}x" if call else f"{'-':>11}"
        else:
            times, vs = f"{'-':>8} {'-':>8} {'-':>8}", f"{'-':>11}"
        nova_text = f"{call:8.1f}" if call else f"{'-':>8}"
        print(f"{r['case']:<32} {times} {nova_text} {vs}  {r['note']}")
    native_us = {r["mode"]: r["us_per_call"] for r in native if "us_per_call" in r}
    nova = {r["mode"]: nova_us[r["nova_case"]] for r in native if r["nova_case"] in nova_us}
    report: dict[str, Any] = {}
    for label, suffix in [("one by one", ""), ("as graphs", " graph")]:
        modes = {m: m + suffix if m + suffix in native_us else m for m in NATIVE_CASES}
        if not suffix.strip() or any(m != v for m, v in modes.items()):
            if any(v not in native_us or v not in nova for v in modes.values()):
                print(f"native ratios ({label}): not all native rows ran")
                continue
            theirs = ratios({m: native_us[v] for m, v in modes.items()})
            ours = ratios({m: nova[v] for m, v in modes.items()})
            print(f"{label}: alloc_step and scratch_step "
                  f"{'each one CUDA graph' if suffix else 'op by op'}, step and "
                  "alloc_only_step direct")
            print("  nova:   " + ", ".join(f"{k} = {v:.2f}x" for k, v in ours.items()))
            print("  native: " + ", ".join(f"{k} = {v:.2f}x" for k, v in theirs.items()))
            print("  nova / native: " + ", ".join(f"{k} {ours[k] / v:.2f}"
                                                  for k, v in theirs.items()))
            report[label] = {"native": theirs, "nova": ours,
                             "nova_over_native": {k: ours[k] / v for k, v in theirs.items()}}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="all", choices=("all", "cpu", "cuda"))
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--n", type=int, default=4096, help="elements per buffer")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from nova.runtime.selection import cuda_status

    kinds = ["cpu", "cuda"] if args.device == "all" else [args.device]
    rows: list[dict[str, Any]] = []
    native: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for kind in kinds:
        if kind == "cuda" and not cuda_status().usable:
            skipped["cuda"] = cuda_status().reason
            continue
        rows += run_device(kind, args.calls, args.warmup, args.n)
        if kind == "cuda":
            graphs = any(DIRECT in r["case"] for r in rows)
            native, why = run_native(args.calls, args.warmup, args.n, graphs)
            if why is not None:
                skipped["native peer"] = why

    def mib(value: float | None) -> str:
        return f"{'n/a':>9}" if value is None else f"{value / 2**20:+9.3f}"

    print(f"\nMemory over {args.calls} calls (after {args.warmup} warm-up calls), n = {args.n}")
    head = (f"{'device':<6} {'case':<52} {'us/call':>8} {'RSS MiB':>9} {'RSS/1k':>9} "
            f"{'dev/1k':>9} {'pool use':>9} {'raw alloc':>9} {'ok':>3}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['device']:<6} {r['case']:<52} {r['us_per_call']:8.1f} "
              f"{r['rss_after'] / 2**20:9.1f} {mib(r['rss_growth_per_1000_calls'])} "
              f"{mib(r['device_used_growth_per_1000_calls'])} "
              f"{r['pool_in_use_after'] / 2**20:9.3f} {r['pool_raw_allocs_during']:>9} "
              f"{'yes' if r['result_ok'] else 'NO':>3}")
    for kind in dict.fromkeys(r["device"] for r in rows):
        us = {r["case"]: r["us_per_call"] for r in rows if r["device"] == kind}
        alloc = us["alloc_step(device buffer)"]
        step = us["step(device buffer)"]
        print(f"{kind}: alloc_step / step = {alloc / step:.2f}x, "
              f"alloc_step / scratch_step = {alloc / us['scratch_step(device buffers)']:.2f}x, "
              f"alloc_only_step / step = {us['alloc_only_step(device buffer)'] / step:.2f}x")
        direct = f"alloc_step(device buffer), {DIRECT}"
        if direct in us:
            print(f"{kind}, {DIRECT}: alloc_step / step = {us[direct] / step:.2f}x, "
                  f"alloc_step / scratch_step = "
                  f"{us[direct] / us[f'scratch_step(device buffers), {DIRECT}']:.2f}x; "
                  f"step as an explicit graph: "
                  f"{us[f'step(device buffer), {CAPTURED}'] / step:.2f}x step")
        peer = "{}(device buffer), " + REGION
        if peer.format("alloc_step") in us:
            region_step, region_alloc = us[peer.format("step")], us[peer.format("alloc_step")]
            print(f"{kind}, {REGION} peer: step {region_step:.1f} us ({region_step / step:.2f}x "
                  f"the default lowering's), alloc_step {region_alloc:.1f} us "
                  f"({region_alloc / alloc:.2f}x)")
        off = "{}(device buffer), no block cache"
        if off.format("alloc_step") in us:
            scratch = us["scratch_step(device buffers)"]
            print(f"{kind}, block cache off: alloc_step / scratch_step = "
                  f"{us[off.format('alloc_step')] / scratch:.2f}x, alloc_only_step / step = "
                  f"{us[off.format('alloc_only_step')] / step:.2f}x")
    native_ratios: dict[str, Any] = {}
    if native:
        native_ratios = print_native(native, {r["case"]: r["us_per_call"] for r in rows
                                              if r["device"] == "cuda"})
    for kind, reason in skipped.items():
        print(f"{kind}: skipped ({reason})")
    print("RSS/1k, dev/1k: growth in MiB per 1000 calls (host RSS; device memory in use from "
          "mem_info, cuda only); pool use: Nova pool bytes in use after; raw alloc: "
          "pool allocations from the device during the measured calls")

    for r in rows:
        record(f"{r['device']} {r['case']}: result", bool(r["result_ok"]))
    for r in native:  # a peer that failed to run (result_ok None) is only noted
        record(f"cuda {r['case']}: {r['note']}", r["result_ok"] is not False)
    if finish():
        return 1  # no result file for wrong results
    report = {"benchmark": "memory_flat", "date": date.today().isoformat(),
              "python": platform.python_version(), "machine": platform.machine(),
              "calls": args.calls, "warmup": args.warmup, "n": args.n, "skipped": skipped,
              "results": rows, "native_peer": {"rows": native, "ratios": native_ratios}}
    path = args.json or ROOT / "bench" / "results" / f"memory_flat-{date.today()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

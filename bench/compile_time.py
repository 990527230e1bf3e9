"""Compile time in fresh processes, cold (empty caches) and from the cache: a ~50-line program,
and the pre-LN encoder layer of nova.models (d=768, 12 heads, FF 3072, batch 8, seq 512) against
its goal (issue 10: <= 2 s cold, <= 50 ms from the cache, byte-identical `.nova` files).

Each run is a new Python process (what `nova-translate` or a first `nova.compile` costs): it
imports the driver, compiles, and reports the process's import time and the driver's per-stage
times; the parent adds the process's wall time and its CPU time (user + system, ptxas included),
which stays meaningful on a loaded machine. Prints a table and writes JSON. Every bundle a run
produced (cold and warm: a cache hit must give a working bundle too) is loaded on the cpu device
and run against NumPy; a wrong result or a failed compilation is a failed check
(bench/checks.py: exit 1, FAILED in the table, no result file). Other --emit stages are not run.
ptxas runs in the background (nova.compiler.stages): its `cubin` row is ptxas's own wall time,
which overlaps cpu-llvm/cpu-obj/host-llvm, so the stage rows add up to more than `compile call`.
Before/after records with the commands: bench/results/compile_time-<date>.md.

The encoder rows (bench/compile_time_model.py holds their child process and checks): each
configuration (dtype x target: `cuda` = PTX + cubin with generated GEMMs, `gemm="nova"`, the
heaviest case; `cuda-auto` = GEMMs to cuBLASLt as on a GPU where it loads; `cpu` = the cpu
device's object) is compiled cold in fresh processes with every cache (bundle, model, kernel
image, runtime objects: one NOVA_CACHE_DIR) empty, then from the cache. "compile" is
nova.models' build of the specialisation (key, lookup, lowering, the driver, storing; no device
load, no weight upload; wall time), "compile cpu" its CPU time (all threads, ptxas excluded:
the number to compare on a loaded machine), "process cpu" the whole process's user + system
time (interpreter start, imports, building the graph and ptxas included). With worker processes
(nova.compiler.parallel; NOVA_COMPILE_JOBS or --jobs; auto: one per CPU on >= 4 CPUs) the main
process's `parse` is the host part only; `modules` is the wall time from sending the device
modules to the workers until the last came back (it overlaps parse, host-llvm and the wait in
embed), `slowest module` the longest module's own time (the critical path inside `modules`),
and `<stage> (workers)` the workers' stage times summed over modules (work, not wall time);
"compile cpu" then counts the main process only. Checks: every
cold and cached run gives byte-identical `.nova` bytes and weights (runs use different
PYTHONHASHSEEDs), and a small encoder compiled the same way for the cpu device computes what
NumPy does (on a machine with a GPU, `--device cuda` also runs the full cuda bundles).

    python bench/compile_time.py [--runs 3] [--emit nova] [--json PATH]
                                 [--model-runs 2] [--model-rows fp16-cuda,fp32-cuda,...]
                                 [--model-quick] [--device cpu|cuda] [--jobs N|auto]
        (default PATH: bench/results/compile_time-<date>.json)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import compile_time_model as model_rows
from checks import finish, record

PROGRAM = """\
// Two kernels (an elementwise update and a block reduction through workgroup memory) and a
// host loop, launched from one host function.
func.func @saxpy_and_sum(%x: memref<1024xf32>, %y: memref<1024xf32>, %out: memref<4xf32>,
                         %a: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c256 : index
    %i = arith.addi %base, %tx : index
    %xv = memref.load %x[%i] : memref<1024xf32>
    %yv = memref.load %y[%i] : memref<1024xf32>
    %ax = arith.mulf %a, %xv : f32
    %r = arith.addf %ax, %yv : f32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             workgroup(%partial : memref<256xf32, 3>) {
    %base = arith.muli %bx, %c256 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %y[%i] : memref<1024xf32>
    memref.store %v, %partial[%tx] : memref<256xf32, 3>
    gpu.barrier
    %is_first = arith.cmpi eq, %tx, %c0 : index
    scf.if %is_first {
      %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
        %p = memref.load %partial[%k] : memref<256xf32, 3>
        %next = arith.addf %acc, %p : f32
        scf.yield %next : f32
      }
      memref.store %sum, %out[%bx] : memref<4xf32>
    }
    gpu.terminator
  }
  %total = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %p = memref.load %out[%j] : memref<4xf32>
    %next = arith.addf %acc, %p : f32
    scf.yield %next : f32
  }
  memref.store %total, %out[%c0] : memref<4xf32>
  return
}
"""

# Runs in the fresh process: import the driver, compile, print one JSON line.
CHILD = """\
import json, sys, time
start = time.perf_counter()
from nova.compiler.driver import CompileOptions, compile_source
imported = time.perf_counter()
text = open(sys.argv[1]).read()
try:
    result = compile_source(text, sys.argv[1], CompileOptions(emit=sys.argv[2]))
    report = {"timings": result.timings, "cache_hit": result.cache_hit, "error": None}
    if isinstance(result.output, bytes):
        open(sys.argv[3], "wb").write(result.output)
except Exception as exc:  # report, never fail: this is a benchmark
    report = {"timings": {}, "cache_hit": False, "error": f"{type(exc).__name__}: {exc}"}
report["import_s"] = imported - start
report["compile_s"] = time.perf_counter() - imported
print(json.dumps(report))
"""


def run_once(source: Path, emit: str, cache_dir: Path) -> dict:
    """One fresh-process compilation; adds the parent-measured wall time (interpreter start
    included) and, for a bundle, whether it computes the right result."""
    env = {**os.environ, "NOVA_CACHE_DIR": str(cache_dir), "NOVA_CACHE": "1"}
    env.pop("NOVA_DUMP_DIR", None)
    env.pop("NOVA_OVERRIDE_DIR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    bundle = cache_dir.parent / f"{cache_dir.name}.nova"
    bundle.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(source), emit, str(bundle)],
                          capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        report = {"timings": {}, "cache_hit": False, "import_s": 0.0, "compile_s": 0.0,
                  "error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    report["wall_s"] = wall
    report["cpu_s"] = cpu  # user + system time of the process and its children (ptxas)
    report["verified"] = verify(bundle, env) if emit == "nova" and not report["error"] else None
    return report


# Runs in a fresh process of the same tree and environment as the compile: load the bundle on
# the cpu device, run it, compare with NumPy (small integers: exact in float32, whatever the
# summation order); prints "ok" or what differs.
VERIFY = """\
import sys
import numpy as np
import nova
x = (np.arange(1024) % 7).astype(np.float32)
y = np.ones(1024, np.float32)
out = np.zeros(4, np.float32)
want_y = (np.float32(2.0) * x + y).astype(np.float32)
want_out = want_y.reshape(4, 256).sum(axis=1, dtype=np.float32)
want_out[0] = want_out.sum(dtype=np.float32)
mod = nova.load(open(sys.argv[1], "rb").read(), device="cpu")
mod["saxpy_and_sum"](x, y, out, np.float32(2.0))
mod.close()
ok = np.array_equal(y, want_y) and np.array_equal(out, want_out)
print("ok" if ok else f"wrong: out {out.tolist()} != {want_out.tolist()}")
"""


def verify(bundle: Path, env: dict[str, str] | None = None) -> bool:
    """Run the compiled bundle on the cpu device (a fresh process with `env`, so the tree that
    compiled it also runs it): its results must equal NumPy's."""
    if not bundle.exists():
        return False
    done = subprocess.run([sys.executable, "-c", VERIFY, str(bundle)], capture_output=True,
                          text=True, env=env, check=False)
    return done.returncode == 0 and done.stdout.strip() == "ok"


def summarize(reports: list[dict]) -> dict:
    """Medians over runs of each stage and of the totals."""
    stages: list[str] = []
    for report in reports:
        stages += [s for s in report["timings"] if s not in stages]
    return {
        "stages_ms": {s: statistics.median(r["timings"].get(s, 0.0) for r in reports) * 1e3
                      for s in stages},
        "import_ms": statistics.median(r["import_s"] for r in reports) * 1e3,
        "compile_ms": statistics.median(r["compile_s"] for r in reports) * 1e3,
        "wall_ms": statistics.median(r["wall_s"] for r in reports) * 1e3,
        "cpu_ms": statistics.median(r["cpu_s"] for r in reports) * 1e3,
        "cache_hits": sum(bool(r["cache_hit"]) for r in reports),
        "errors": sorted({r["error"] for r in reports if r["error"]}),
        "wrong_results": sum(r["verified"] is False for r in reports),
    }


def print_table(results: dict[str, dict], runs: int) -> None:
    stages: list[str] = []
    for summary in results.values():
        stages += [s for s in summary["stages_ms"] if s not in stages]
    names = list(results)
    print(f"compile time, median of {runs} fresh processes (ms)")
    print(f"{'':<16}" + "".join(f"{n:>12}" for n in names))
    for stage in stages:
        row = [results[n]["stages_ms"].get(stage) for n in names]
        print(f"{'  ' + stage:<16}" + "".join("" if v is None else f"{v:12.1f}" for v in row))
    for key, label in (("import_ms", "import driver"), ("compile_ms", "compile call"),
                       ("wall_ms", "process wall"), ("cpu_ms", "process cpu")):
        print(f"{label:<16}" + "".join(f"{results[n][key]:12.1f}" for n in names))
    print(f"{'cache hits':<16}" + "".join(f"{results[n]['cache_hits']:>12}" for n in names))
    print(f"{'wrong results':<16}" + "".join(f"{results[n]['wrong_results']:>12}"
                                             for n in names))
    for name in names:
        for error in results[name]["errors"]:
            record(f"{name}: {error}", False)
            print(f"{name}: FAILED: {error}")
        wrong = results[name]["wrong_results"]
        if not record(f"{name}: {wrong} compiled bundles compute wrong results", not wrong):
            print(f"{name}: FAILED: {wrong} compiled bundles compute wrong results")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--emit", default="nova", help="stage to compile to (default: nova)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the JSON record")
    model_rows.add_arguments(parser)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="nova-bench-") as tmp:
        source = Path(tmp) / "program.mlir"
        source.write_text(PROGRAM)
        cold = [run_once(source, args.emit, Path(tmp) / f"cold-cache-{i}")
                for i in range(args.runs)]
        warm_cache = Path(tmp) / "warm-cache"
        run_once(source, args.emit, warm_cache)  # fill the cache
        warm = [run_once(source, args.emit, warm_cache) for _ in range(args.runs)]

    results = {"cold": summarize(cold), "warm": summarize(warm)}
    print_table(results, args.runs)
    encoder = model_rows.run(args)
    print(f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}")
    if finish():
        return 1  # no result file for wrong results
    report = {
        "benchmark": "compile_time",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine(),
                    "load_average_1m": os.getloadavg()[0]},
        "program_lines": PROGRAM.count("\n"),
        "emit": args.emit,
        "runs": args.runs,
        "results": results,
        "raw": {"cold": cold, "warm": warm},
        "encoder_layer": encoder,
    }
    path = args.json or (Path(__file__).parent / "results"
                         / f"compile_time-{datetime.now(UTC):%Y-%m-%d}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

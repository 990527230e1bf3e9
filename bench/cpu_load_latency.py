"""CPU device start-up: `import nova` + `nova.load` + the first entry call, in fresh processes.

What a user pays before a compiled program's first result on the cpu device, split into:
`import` (nova.runtime.executor, what `nova.load` needs), `load` (read + verify the bundle, link
the host object, get the cpu device), `first call` (loads the device module: links its CPU object;
then one one-kernel launch), `call` (median of later calls: the per-call overhead of a
compiled entry with one tiny kernel) and `noop call` (an entry that launches nothing). The
bundle is compiled once in the parent (not timed). Each child also reports its CPU time
(user + system, all threads), which stays meaningful on a loaded machine. Each child checks that
every call's kernel ran (each adds 1 to 32 counters): a wrong result or a failed child is a
failed check (bench/checks.py; exit 1, FAILED in the table, no result file).

    python bench/cpu_load_latency.py [--runs 5] [--calls 300] [--json PATH]
        (default PATH: bench/results/cpu_load_latency-<date>.json)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from checks import finish, record

PROGRAM = """
func.func @one(%x: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %x[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

func.func @noop(%x: memref<32xf32>) {
  return
}
"""

CHILD = """\
import json, sys, time
calls = int(sys.argv[2])
t0 = time.perf_counter(); c0 = time.process_time()
import nova.runtime.executor as executor
import numpy as np
t1 = time.perf_counter()
mod = executor.load(open(sys.argv[1], "rb").read(), device="cpu")
x = np.zeros(32, np.float32)
t2 = time.perf_counter()
mod.one(x)
t3 = time.perf_counter()
def median_call(entry):
    samples = []
    for _ in range(calls):
        s = time.perf_counter(); entry(x); samples.append(time.perf_counter() - s)
    samples.sort()
    return samples[len(samples) // 2]
call = median_call(mod.one)
noop = median_call(mod.noop)
ok = bool((x == 1 + calls).all())
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_call_s": t3 - t2,
                  "call_s": call, "noop_call_s": noop, "ok": ok,
                  "cpu_s": time.process_time() - c0}))
"""


def run_child(bundle: Path, calls: int) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(bundle), str(calls)],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}", "wall_s": wall}
    report["wall_s"] = wall
    report["error"] = None
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    from nova.compiler.driver import CompileOptions, compile_to_bundle

    with tempfile.TemporaryDirectory(prefix="nova-bench-") as tmp:
        bundle = Path(tmp) / "latency.nova"
        bundle.write_bytes(compile_to_bundle(PROGRAM, "latency.mlir",
                                             CompileOptions(ptx=False)))
        reports = [run_child(bundle, args.calls) for _ in range(args.runs)]
    good = [r for r in reports if not r["error"]]
    rows = [("import nova.runtime.executor", "import_s", 1e3, "ms"),
            ("nova.load (cpu)", "load_s", 1e3, "ms"),
            ("first call (module load + launch)", "first_call_s", 1e3, "ms"),
            ("later call, one tiny kernel", "call_s", 1e6, "us"),
            ("later call, no kernel", "noop_call_s", 1e6, "us"),
            ("process CPU (all of the above)", "cpu_s", 1e3, "ms"),
            ("process wall (interpreter start included)", "wall_s", 1e3, "ms")]
    medians = {}
    print(f"cpu device start-up, median of {len(good)} fresh processes")
    for label, key, scale, unit in rows:
        if good:
            medians[key] = statistics.median(r[key] for r in good)
            print(f"  {label:<44}{medians[key] * scale:10.1f} {unit}")
    for i, r in enumerate(reports):
        if r["error"]:
            record(f"run {i}: {r['error']}", False)
            print(f"FAILED: run {i}: {r['error']}")
        elif not record(f"run {i}: the counters do not count every call's kernel", r["ok"]):
            print(f"FAILED: run {i}: wrong result (a call's kernel did not run)")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cpus, load average {load:.1f}")
    report = {
        "benchmark": "cpu_load_latency",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1m": load},
        "runs": args.runs, "calls": args.calls, "medians_s": medians, "raw": reports,
    }
    if finish():
        return 1  # no result file for wrong results
    path = args.json or (Path(__file__).parent / "results"
                         / f"cpu_load_latency-{datetime.now(UTC):%Y-%m-%d}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Cold start with a warm cache: what a fresh process pays before its first result.

Issue 13's goals, each measured in new Python processes (median and minimum of --runs), after
one untimed run that fills a private cache directory (NOVA_CACHE_DIR) and Python's bytecode
caches, and each reported against its limit by both statistics:

- `kernel first call` (<= 20 ms): a script that imports NumPy (its data needs it), then, timed
  in-process, `import nova`, defines a `@nova.kernel` and launches it once on the device
  (NOVA_DEVICE, from --device: cpu by default; NumPy arrays in and back).
- `nova-translate hit` (<= 40 ms): `nova-translate prog.mlir -o out.nova` answered from the
  compile cache, started the way the installed console script starts it; wall time of the
  process.
- `nova-run cached .nova` (<= 120 ms): `nova-run prog.nova --device DEVICE` of that bundle; wall
  time of the process.
- `cached kernel imports xDSL` (never): whether any kernel run imported xDSL (or llvmlite).

`kernel, NOVA_DEVICE unset` (no goal) is the kernel first call on the default device ('auto').

Every run's result is checked (bench/checks.py: a wrong kernel result, translate output or
nova-run printout fails the script with exit 1 and no result file): the kernel's output against
NumPy, the translated bundle against the one the untimed run wrote, nova-run's stdout against
the expected printout, and that no kernel run imported xDSL or llvmlite.

Peers in the same run: `python -c pass` and `python -c "import numpy"` (the floor every
process pays). CPU time (user + system) is reported beside wall time: on a loaded machine it
stays meaningful where the wall time does not. For the tools it is the whole process's; for
`kernel first call` the timed window's (`time.process_time`, every thread of the process), and
`wall ms` is the whole process's wall time. `--phases` adds a breakdown of the kernel's first
call from extra runs whose script times each phase (imports, device creation, source key, cache
read, module load, launch); the wrappers that time them cost a little, so the phases' total is
no substitute for the row above. `--src DIR` runs another Nova source tree (e.g. the main
checkout) for before/after comparisons in one session.

    python bench/cold_start.py [--runs 15] [--device cpu|cuda] [--phases] [--src DIR]
                               [--json PATH]
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
from collections.abc import Callable
from pathlib import Path

from checks import finish, record

GOALS_MS = {"kernel first call": 20.0, "nova-translate hit": 40.0, "nova-run cached .nova": 120.0}

AXPY = """\
def axpy(out, a, x, y):
    i = nova.global_id(0)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]

n = 1000
x = np.arange(n, dtype=np.float32)
y = np.full(n, 0.5, np.float32)
out = np.zeros(n, np.float32)
"""
"""The kernel both child scripts launch and its data: one text, so the phase breakdown's process
finds the kernel the timed runs cached (the cache key covers the function's source)."""

KERNEL_SCRIPT = """\
import sys, time
import numpy as np
t0, c0 = time.perf_counter(), time.process_time()
import nova

@nova.kernel
""" + AXPY + """axpy[(n + 127) // 128, 128](out, np.float32(2.0), x, y)
t1, c1 = time.perf_counter(), time.process_time()
ok = bool(np.array_equal(out, np.float32(2.0) * x + y))
print(f"{(t1 - t0) * 1e3:.3f} {(c1 - c0) * 1e3:.3f} {ok} {'xdsl' in sys.modules} "
      f"{'llvmlite' in sys.modules}")
"""

PROGRAM = """\
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %buf = gpu.alloc host_shared () : memref<64xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %i = arith.index_cast %tx : index to i32
    %f = arith.sitofp %i : i32 to f32
    %sq = arith.mulf %f, %f : f32
    memref.store %sq, %buf[%tx] : memref<64xf32>
    gpu.terminator
  }
  %c10 = arith.constant 10 : index
  %v = memref.load %buf[%c10] : memref<64xf32>
  vector.print %v : f32
  return
}
"""
EXPECTED_RUN_OUTPUT = "100\n"

AUTO_ROW = "kernel, NOVA_DEVICE unset"
"""The kernel first call with the default device ('auto': cuda where a GPU is usable, else cpu),
for information: on a machine without a GPU it is the cpu device's first call plus the CUDA
probe."""

CONSOLE = ("import sys\nfrom nova.cli.{tool} import main\n"
           "sys.argv[0] = 'nova-{tool}'\nsys.exit(main())\n")


def _env(src: Path, cache: Path, device: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(src), NOVA_CACHE_DIR=str(cache), NOVA_DEVICE=device)
    for name in ("PYTHONDONTWRITEBYTECODE", "NOVA_CACHE", "NOVA_DUMP_DIR", "NOVA_OVERRIDE_DIR"):
        env.pop(name, None)  # users have bytecode caches; the measurements need the Nova cache
    return env


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall ms, CPU ms of the child, stdout) of one process; fails loudly on a nonzero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    wall = (time.perf_counter() - start) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3
    return wall, cpu, done.stdout


class Row:
    """The samples of one measurement."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list[float] = []
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.notes: set[str] = set()

    def summary(self) -> dict[str, object]:
        def med(xs: list[float]) -> float | None:
            return round(statistics.median(xs), 2) if xs else None

        return {"median_ms": med(self.values), "min_ms": round(min(self.values), 2),
                "wall_median_ms": med(self.walls), "cpu_median_ms": med(self.cpus),
                "goal_ms": GOALS_MS.get(self.name), "notes": sorted(self.notes)}


def _kernel_run(row: Row, work: Path, env: dict[str, str]) -> None:
    wall, _, out = _timed([sys.executable, str(work / "kernel.py")], env)
    ms, cpu_ms, ok, xdsl, llvmlite = out.split()
    record(f"kernel first call: the kernel's result (run {len(row.values) + 1})", ok == "True")
    record("kernel first call: no xDSL or llvmlite import on the cached path",
           xdsl == "False" and llvmlite == "False")
    row.values.append(float(ms))
    row.walls.append(wall)
    row.cpus.append(float(cpu_ms))  # the timed window's CPU time (all threads of the process)
    row.notes.add(f"xdsl imported: {xdsl}, llvmlite imported: {llvmlite}")


def _tool_run(row: Row, argv: list[str], env: dict[str, str],
              check: Callable[[str], bool]) -> None:
    wall, cpu, out = _timed(argv, env)
    record(f"{row.name}: expected output (got {out[:60]!r})", check(out))
    row.values.append(wall)
    row.walls.append(wall)
    row.cpus.append(cpu)


def measure(src: Path, runs: int, device: str,
            phases: bool) -> tuple[dict[str, dict[str, object]], dict[str, dict[str, float]]]:
    """(the rows' summaries, the kernel first call's phases: {} without `phases`)."""
    with tempfile.TemporaryDirectory(prefix="nova-coldstart-") as tmp:
        work = Path(tmp)
        env = _env(src, work / "cache", device)
        (work / "kernel.py").write_text(KERNEL_SCRIPT)
        (work / "phases.py").write_text(PHASES_SCRIPT)
        (work / "prog.mlir").write_text(PROGRAM)
        for tool in ("translate", "run"):
            (work / f"nova-{tool}").write_text(CONSOLE.format(tool=tool))
        translate = [sys.executable, str(work / "nova-translate"), str(work / "prog.mlir"),
                     "-o", str(work / "out.nova")]
        run = [sys.executable, str(work / "nova-run"), str(work / "prog.nova"), "--device", device]
        auto = {k: v for k, v in env.items() if k != "NOVA_DEVICE"}  # the default device
        _timed([sys.executable, str(work / "kernel.py")], env)  # fill the caches (untimed)
        _timed([sys.executable, str(work / "kernel.py")], auto)
        if phases:
            _timed([sys.executable, str(work / "phases.py")], env)
        _timed(translate, env)
        expected = (work / "out.nova").read_bytes()
        (work / "prog.nova").write_bytes(expected)
        _timed(run, env)
        rows = {name: Row(name) for name in ("python -c pass", "python -c 'import numpy'",
                                             *GOALS_MS, AUTO_ROW)}
        phase_samples: dict[str, list[tuple[float, float]]] = {}
        for _ in range(runs):  # interleaved, so load drifts hit every row alike
            _tool_run(rows["python -c pass"], [sys.executable, "-c", "pass"], env,
                      lambda out: out == "")
            _tool_run(rows["python -c 'import numpy'"], [sys.executable, "-c", "import numpy"],
                      env, lambda out: out == "")
            _kernel_run(rows["kernel first call"], work, env)
            _kernel_run(rows[AUTO_ROW], work, auto)
            (work / "out.nova").unlink()
            _tool_run(rows["nova-translate hit"], translate, env,
                      lambda out: out == "" and (work / "out.nova").read_bytes() == expected)
            _tool_run(rows["nova-run cached .nova"], run, env,
                      lambda out: out == EXPECTED_RUN_OUTPUT)
            if phases:
                _phases_run(phase_samples, work, env)
        summary = {name: row.summary() for name, row in rows.items()}
        return summary, {name: _phase_summary(v) for name, v in phase_samples.items()}


def _phase_summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    return {"median_ms": round(statistics.median(walls), 3), "min_ms": round(min(walls), 3),
            "cpu_median_ms": round(statistics.median(cpus), 3),
            "cpu_min_ms": round(min(cpus), 3)}


PHASES_SCRIPT = """\
import json, sys, time
import numpy as np
phases = {}

def pc():  # (wall, CPU time of this thread) in ms
    return time.perf_counter() * 1e3, time.thread_time() * 1e3

def mark(name, t0):
    now = pc()
    wall, cpu = phases.get(name, (0.0, 0.0))
    phases[name] = (wall + now[0] - t0[0], cpu + now[1] - t0[1])

def timed(owner, attr, name):
    inner = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        t0 = pc()
        try:
            return inner(*args, **kwargs)
        finally:
            mark(name, t0)
    setattr(owner, attr, wrapper)

start = pc()
import nova
mark("import nova", start)
t0 = pc()
kernel = nova.kernel  # imports nova.lang and the shared runtime
mark("import nova.lang", t0)
from nova.lang import api, image_cache
from nova.runtime.device import Device
timed(api, "_default_device", "device: import and create")
timed(api, "source_key", "source key (fingerprint)")
timed(image_cache, "get", "cache entry read")
timed(Device, "load_module", "module load (objects placed)")
timed(api, "LaunchPlan", "launch plan (launcher)")

@kernel
""" + AXPY + """t0 = pc()
axpy[(n + 127) // 128, 128](out, np.float32(2.0), x, y)
mark("first launch, all of it", t0)
mark("total", start)
inner = ("device: import and create", "source key (fingerprint)", "cache entry read",
         "module load (objects placed)", "launch plan (launcher)")
phases["launch: the rest (staging, run, copies)"] = tuple(
    phases["first launch, all of it"][i] - sum(phases.get(k, (0.0, 0.0))[i] for k in inner)
    for i in (0, 1))
phases["ok"] = (float(np.array_equal(out, np.float32(2.0) * x + y)),) * 2
print(json.dumps(phases))
"""


def _phases_run(samples: dict[str, list[tuple[float, float]]], work: Path,
                env: dict[str, str]) -> None:
    _, _, out = _timed([sys.executable, str(work / "phases.py")], env)
    phases = json.loads(out)
    record("kernel first call phases: the kernel's result", phases.pop("ok")[0] == 1.0)
    for name, (wall, cpu) in phases.items():
        samples.setdefault(name, []).append((wall, cpu))


def _verdict(value: float, goal: float | None) -> str:
    if goal is None:
        return ""
    return "meets" if value <= goal else "misses"


def _table(results: dict[str, dict[str, object]]) -> str:
    lines = [f"{'measurement':<26} {'median ms':>10} {'min ms':>8} {'wall ms':>8} {'cpu ms':>8} "
             f"{'goal ms':>8}  {'median':<7} {'min':<7}"]
    for name, r in results.items():
        goal = r["goal_ms"]
        median, least = r["median_ms"], r["min_ms"]
        assert isinstance(median, float) and isinstance(least, float)
        assert goal is None or isinstance(goal, float)
        lines.append(f"{name:<26} {median:>10} {least:>8} {r['wall_median_ms']:>8} "
                     f"{r['cpu_median_ms']:>8} {'' if goal is None else goal:>8}  "
                     f"{_verdict(median, goal):<7} {_verdict(least, goal):<7}")
    notes = results["kernel first call"]["notes"]
    assert isinstance(notes, list)
    xdsl = any("xdsl imported: True" in n for n in notes)
    lines.append(f"{'cached kernel imports xDSL':<26} {'yes' if xdsl else 'no':>10} "
                 f"{'':>8} {'':>8} {'':>8} {'never':>8}  {'misses' if xdsl else 'meets':<7}")
    lines.append(f"kernel first call: in-process ms (cpu ms: CPU time) from `import nova` to the "
                 f"first launch's return; wall ms: its whole process; {'; '.join(notes)}")
    return "\n".join(lines)


def _phase_table(phases: dict[str, dict[str, float]]) -> str:
    lines = [f"{'kernel first call, phase':<42} {'median ms':>10} {'min ms':>8} "
             f"{'cpu median':>10} {'cpu min':>8}"]
    lines += [f"{name:<42} {p['median_ms']:>10} {p['min_ms']:>8} {p['cpu_median_ms']:>10} "
              f"{p['cpu_min_ms']:>8}" for name, p in phases.items()]
    lines.append("(phases: wall and main-thread CPU time, from runs with timing wrappers)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1] / "src",
                        help="the Nova source tree to measure (default: this checkout's)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--phases", action="store_true",
                        help="also time the phases of the kernel's first call (extra runs)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    results, phases = measure(args.src.resolve(), args.runs, args.device, args.phases)
    load = os.getloadavg()
    print(f"{platform.node()}: {os.cpu_count()} cores, load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f}; Python {platform.python_version()}; "
          f"src {args.src}; device {args.device}; {args.runs} runs")
    print(_table(results))
    if phases:
        print(_phase_table(phases))
    status = finish()
    if status == 0 and args.json is not None:
        args.json.write_text(json.dumps({"src": str(args.src), "runs": args.runs,
                                         "device": args.device, "load": load,
                                         "results": results, "phases": phases}, indent=2))
    sys.exit(status)


if __name__ == "__main__":
    main()

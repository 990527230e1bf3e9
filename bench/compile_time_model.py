"""The encoder-layer rows of bench/compile_time.py (see its docstring): compile time of the
nova.models encoder layer, cold and from the cache, in fresh processes, against issue 10's goal,
with the checks that make the numbers mean something (byte-identical bundles and weights across
processes and hash seeds; a compiled encoder that computes what NumPy computes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from checks import record

GOAL_COLD_MS = 2000.0
GOAL_CACHED_MS = 50.0
FULL = (768, 12, 3072, 8, 512)
"""d, heads, FF, batch, seq of the encoder layer (bench/models.py's enc-b8)."""
QUICK = (64, 4, 256, 2, 32)
ROWS = ("fp16-cuda", "fp32-cuda", "fp16-cuda-auto", "fp16-cpu", "fp32-cpu")

# Runs in a fresh process: build one specialisation of the encoder (nova.models.build: the model
# cache, else lowering + the driver) and write its bundle and weights; prints one JSON line.
CHILD = """\
import json, sys, time
start = time.perf_counter()
import numpy as np
from nova.models import examples
from nova.models.build import Settings, build
from nova.models.graph import TensorType
imported = time.perf_counter()
dtype, target, out = sys.argv[1], sys.argv[2], sys.argv[3]
d, heads, ff, batch, seq = (int(v) for v in sys.argv[4].split(","))
graph = examples.encoder_layer(d, heads, ff).graph
gpu = target.startswith("cuda")
settings = Settings(tensor_cores=gpu, gemm="auto" if target == "cuda-auto" else "nova",
                    library="cublaslt" if gpu else "numpy", conv="nova",
                    conv_library="cudnn" if gpu else "numpy", attention="auto",
                    asked_conv="nova", options={"ptx": gpu, "cubin": gpu, "cpu_image": not gpu})
inputs = [TensorType(dtype if graph.types[n].dtype == "float32" else graph.types[n].dtype,
                     graph.types[n].shape) for n in graph.inputs]
begin = time.perf_counter()
cpu_begin = time.process_time()
try:
    built = build(graph, {"batch": batch, "seq": seq}, dtype, settings, inputs)
    compile_s = time.perf_counter() - begin
    compile_cpu_s = time.process_time() - cpu_begin
    open(out + ".nova", "wb").write(built.entry.bundle)
    np.savez(out + ".npz", *[np.ascontiguousarray(w) for w in built.entry.weights.values()])
    report = {"timings": built.timings, "cache_hit": built.cache_hit, "error": None}
except Exception as exc:  # report, never fail: this is a benchmark
    compile_s = time.perf_counter() - begin
    compile_cpu_s = time.process_time() - cpu_begin
    report = {"timings": {}, "cache_hit": False, "error": f"{type(exc).__name__}: {exc}"}
report["import_s"] = imported - start
report["compile_s"] = compile_s
from nova.compiler import parallel
report["workers"] = (parallel.jobs(built.lowered.program.split)
                     if "modules" in report["timings"] else 1)
report["compile_cpu_s"] = compile_cpu_s
print(json.dumps(report))
"""

# Runs in a fresh process: compile an encoder for `device` through nm.compile (its model cache
# included), run it and compare with the NumPy reference; prints "ok" or what differs.
VERIFY = """\
import sys
import numpy as np
import nova.models as nm
from nova.models import examples
dtype, device = sys.argv[1], sys.argv[2]
d, heads, ff, batch, seq = (int(v) for v in sys.argv[3].split(","))
ex = examples.encoder_layer(d, heads, ff)
x = np.random.default_rng(0).standard_normal((batch, seq, d)).astype(np.float32)
options = {"gemm": "nova"} if device == "cuda" else {}
model = nm.compile(ex.graph, device=device, dtype=dtype, **options)
got = np.asarray(model(x.astype(np.float16 if dtype == "float16" else np.float32)),
                 dtype=np.float64)
want = ex.forward(x)
err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
limit = 2e-2 if dtype == "float16" else 1e-3
print("ok" if err <= limit else f"rel. L2 error {err:.3g} > {limit}")
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-runs", type=int, default=2,
                        help="fresh processes per encoder row, cold and cached (default 2)")
    parser.add_argument("--model-rows", default=",".join(ROWS),
                        help=f"encoder rows to time (default: {','.join(ROWS)}; '' for none)")
    parser.add_argument("--model-quick", action="store_true",
                        help=f"a small encoder {QUICK} instead of {FULL} (to debug the bench)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="also run the encoder on this device to check it (default cpu)")
    parser.add_argument("--jobs", default=None,
                        help="NOVA_COMPILE_JOBS of the encoder compiles (default: as set, else "
                             "auto: one worker process per CPU on >= 4 CPUs; 1: serial)")


def _child(row: str, sizes: tuple[int, ...], cache: Path, out: Path, seed: int,
           jobs: str | None) -> dict[str, Any]:
    dtype = {"fp16": "float16", "fp32": "float32"}[row.split("-")[0]]
    target = row.split("-", 1)[1]
    env = {**os.environ, "NOVA_CACHE_DIR": str(cache), "NOVA_CACHE": "1",
           "PYTHONHASHSEED": str(seed)}
    if jobs is not None:
        env["NOVA_COMPILE_JOBS"] = jobs
    env.pop("NOVA_DUMP_DIR", None)
    env.pop("NOVA_OVERRIDE_DIR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, dtype, target, str(out),
                           ",".join(map(str, sizes))], capture_output=True, text=True, env=env,
                          check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        report = {"timings": {}, "cache_hit": False, "import_s": 0.0, "compile_s": 0.0,
                  "error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    report.setdefault("compile_cpu_s", 0.0)
    report.setdefault("workers", 1)
    report["wall_s"] = wall
    report["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report["digest"] = _digest(out) if not report["error"] else None
    return report


def _digest(out: Path) -> str | None:
    """SHA-256 of the bundle and of the weights' bytes (the npz's members, not its zip
    headers, which carry times)."""
    import numpy as np

    try:
        bundle = Path(f"{out}.nova").read_bytes()
        with np.load(f"{out}.npz") as z:
            weights = [z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))]
    except OSError:
        return None
    h = hashlib.sha256(bundle)
    for w in weights:
        h.update(w.dtype.str.encode() + str(w.shape).encode() + w.tobytes())
    return h.hexdigest()


def _verify(dtype: str, device: str, sizes: tuple[int, ...], cache: Path) -> str:
    env = {**os.environ, "NOVA_CACHE_DIR": str(cache), "NOVA_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", VERIFY, dtype, device,
                           ",".join(map(str, sizes))], capture_output=True, text=True, env=env,
                          check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    return lines[-1]


def _median(reports: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in reports) * 1e3


def _stages(reports: list[dict[str, Any]]) -> dict[str, float]:
    names: list[str] = []
    for r in reports:
        names += [s for s in r["timings"] if s not in names]
    return {s: statistics.median(r["timings"].get(s, 0.0) for r in reports) * 1e3
            for s in names}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time and check the encoder rows; print their table; return the JSON record."""
    rows = [r for r in args.model_rows.split(",") if r]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        raise SystemExit(f"unknown --model-rows {unknown} (known: {', '.join(ROWS)})")
    sizes = QUICK if args.model_quick else FULL
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nova-bench-model-") as tmp:
        for row in rows:
            seed = 0
            cold, cached = [], []
            for i in range(args.model_runs):
                cache = Path(tmp) / f"{row}-cache-{i}"
                seed += 1
                cold.append(_child(row, sizes, cache, Path(tmp) / f"{row}-cold-{i}", seed,
                                   args.jobs))
                seed += 1
                cached.append(_child(row, sizes, cache, Path(tmp) / f"{row}-hit-{i}", seed,
                                     args.jobs))
            results[row] = _summarize(row, cold, cached)
        dtypes = {{"fp16": "float16", "fp32": "float32"}[r.split("-")[0]] for r in rows}
        checks = {}
        for dtype in sorted(dtypes):  # the small encoder on the cpu device: kernels that run
            checks[f"{dtype} cpu {QUICK}"] = _verify(dtype, "cpu", QUICK, Path(tmp) / "v")
            if args.device == "cuda":
                checks[f"{dtype} cuda {sizes}"] = _verify(dtype, "cuda", sizes, Path(tmp) / "v")
    for what, outcome in checks.items():
        if not record(f"encoder {what}: {outcome}", outcome == "ok"):
            print(f"encoder {what}: FAILED: {outcome}")
    _print(results, sizes, args.model_runs)
    return {"sizes": dict(zip(("d", "heads", "ff", "batch", "seq"), sizes, strict=True)),
            "goal_ms": {"cold": GOAL_COLD_MS, "cached": GOAL_CACHED_MS}, "rows": results,
            "checks": checks}


def _summarize(row: str, cold: list[dict[str, Any]], cached: list[dict[str, Any]]) \
        -> dict[str, Any]:
    errors = sorted({r["error"] for r in cold + cached if r["error"]})
    for error in errors:
        record(f"encoder {row}: {error}", False)
        print(f"encoder {row}: FAILED: {error}")
    digests = {r["digest"] for r in cold + cached}
    same = not errors and len(digests) == 1 and None not in digests
    record(f"encoder {row}: cold and cached compiles give byte-identical bundles and weights",
           same)
    hits = sum(bool(r["cache_hit"]) for r in cached)
    record(f"encoder {row}: {hits}/{len(cached)} second compiles came from the cache",
           hits == len(cached))
    return {"cold": {"compile_ms": _median(cold, "compile_s"), "cpu_ms": _median(cold, "cpu_s"),
                     "workers": max(r["workers"] for r in cold),
                     "compile_cpu_ms": _median(cold, "compile_cpu_s"),
                     "wall_ms": _median(cold, "wall_s"), "import_ms": _median(cold, "import_s"),
                     "stages_ms": _stages(cold)},
            "cached": {"compile_ms": _median(cached, "compile_s"),
                       "compile_cpu_ms": _median(cached, "compile_cpu_s"),
                       "cpu_ms": _median(cached, "cpu_s"), "wall_ms": _median(cached, "wall_s"),
                       "import_ms": _median(cached, "import_s"), "stages_ms": _stages(cached)},
            "byte_identical": same, "cache_hits": hits, "errors": errors,
            "raw": {"cold": cold, "cached": cached}}


def _print(results: dict[str, Any], sizes: tuple[int, ...], runs: int) -> None:
    if not results:
        return
    names = list(results)
    print(f"\nencoder layer d={sizes[0]} heads={sizes[1]} ff={sizes[2]} batch={sizes[3]} "
          f"seq={sizes[4]}: compile time, median of {runs} fresh processes (ms)")
    print(f"{'':<22}" + "".join(f"{n:>16}" for n in names))
    for phase in ("cold", "cached"):
        stages: list[str] = []
        for n in names:
            stages += [s for s in results[n][phase]["stages_ms"] if s not in stages]
        print(f"{phase}")
        if phase == "cold":
            print(f"{'  worker processes':<22}" + "".join(f"{results[n][phase]['workers']:16d}"
                                                      for n in names))
        for stage in stages:
            vals = [results[n][phase]["stages_ms"].get(stage) for n in names]
            print(f"{'  ' + stage:<22}" + "".join("" if v is None else f"{v:16.1f}"
                                                  for v in vals))
        goal = GOAL_COLD_MS if phase == "cold" else GOAL_CACHED_MS
        for key, label in (("compile_ms", f"compile (goal {goal:g})"),
                           ("compile_cpu_ms", "compile cpu"), ("cpu_ms", "process cpu"),
                           ("wall_ms", "process wall")):
            print(f"{'  ' + label:<22}" + "".join(f"{results[n][phase][key]:16.1f}"
                                                  for n in names))
        met = ["met" if results[n][phase]["compile_ms"] <= goal else "MISSED" for n in names]
        print(f"{'  goal':<22}" + "".join(f"{m:>16}" for m in met))
    print(f"{'byte-identical':<22}" + "".join(f"{results[n]['byte_identical']!s:>16}"
                                              for n in names))

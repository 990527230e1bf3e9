"""Device module load time: cubin vs PTX JIT, cold (fresh process) and warm (same process).

Issue 3 asks what loading a program's device code costs. Two device modules are built once with
the driver: *small*, one elementwise kernel, and *large*, a generated module of `--kernels`
kernels (default 50) of the same family. Each image kind the device can load is then measured in
fresh processes (one per run):

- cuda: `cubin` (cuModuleLoadData of the ptxas-built cubin; only when ptxas was found at build
  time) and `ptx` (cuModuleLoadDataEx, the driver JIT-compiles). PTX is measured with the
  driver's JIT cache disabled (CUDA_CACHE_DISABLE=1: a true cold JIT) and with a private, primed
  JIT cache (CUDA_CACHE_PATH: what a second run of the same program sees). CUDA 12+ loads
  kernels lazily (CUDA_MODULE_LOADING=LAZY, the default kept here), which moves part of a load
  into the first lookup/launch of each kernel; the `eager` rows load everything up front.
- cpu: `cpuobj` (the x86-64 object linked by llvmlite's MCJIT).

In each child: `first` = the first load (`Device.load_module`), `functions` = looking up every
kernel afterwards (CUDA loads kernels lazily, so part of the cost moves here), `reload` = median
of `--reloads` further loads of the same image that bypass Nova's module cache (a new CUmodule /
MCJIT engine each: the warm cost in a process that already loaded one), `cached` = a load served
by Nova's module cache (what every later program sharing the image pays). Device start-up (context
creation) is reported separately. On cpu, `first` includes one-time setup of the process (LLVM's
native target, ~0.1 s, and the fault guard's JIT, ~0.04 s), which `reload` does not.
After timing, each child launches kernel k0 of the first load and of the last reload and compares
its output with NumPy: a module that loads but does not compute right (or a child that fails) is
a failed check (bench/checks.py: exit 1, FAILED in the table, no result file).

    python bench/module_load.py [--device auto|cuda|cpu] [--runs 3] [--reloads 5] [--kernels 50]
                                [--json bench/results/module_load-<date>.json]
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
from datetime import date
from pathlib import Path

from checks import finish, record

ROOT = Path(__file__).resolve().parents[1]


def large_program(kernels: int) -> str:
    """One gpu.module of `kernels` distinct elementwise kernels (load, fma-like math, exp, store,
    bounds check), launched from a host function so the driver builds every image."""
    bodies = []
    for i in range(kernels):
        bodies.append(f"""
    gpu.func @k{i}(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) kernel {{
      %c0 = arith.constant 0 : index
      %w = arith.constant {i + 1}.0 : f32
      %bx = gpu.block_id x
      %bd = gpu.block_dim x
      %tx = gpu.thread_id x
      %base = arith.muli %bx, %bd : index
      %j = arith.addi %base, %tx : index
      %n = memref.dim %x, %c0 : memref<?xf32>
      %ok = arith.cmpi ult, %j, %n : index
      scf.if %ok {{
        %xv = memref.load %x[%j] : memref<?xf32>
        %yv = memref.load %y[%j] : memref<?xf32>
        %ax = arith.mulf %a, %xv : f32
        %s = arith.mulf %yv, %w : f32
        %r = arith.addf %ax, %s : f32
        %e = math.exp %r : f32
        memref.store %e, %y[%j] : memref<?xf32>
      }}
      gpu.return
    }}""")
    return f"""module attributes {{gpu.container_module}} {{
  gpu.module @big {{{''.join(bodies)}
  }}
  func.func @run(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) {{
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @big::@k0 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%x : memref<?xf32>, %y : memref<?xf32>, %a : f32)
    return
  }}
}}
"""


def build_images(arch: str, kernels: int, out: Path) -> dict[str, dict]:
    """Compile both programs; write each module's images under `out`; return their metadata."""
    from nova.bundle.format import PayloadKind
    from nova.bundle.reader import read_bundle
    from nova.compiler.driver import CompileOptions, compile_to_bundle

    programs = {"small": (large_program(1), "small-1-kernel.mlir"),
                "large": (large_program(kernels), f"large-{kernels}-kernels.mlir")}
    meta: dict[str, dict] = {}
    for label, (text, filename) in programs.items():
        bundle = read_bundle(compile_to_bundle(text, filename, CompileOptions(arch=arch)))
        module = max(bundle.manifest.modules, key=lambda m: len(m.kernels))
        files = {}
        for kind, suffix in ((PayloadKind.PTX, "ptx"), (PayloadKind.CUBIN, "cubin"),
                             (PayloadKind.CPU_OBJECT, "o")):
            data = bundle.payload(module.name, kind)
            if data is not None:
                path = out / f"{label}.{suffix}"
                path.write_bytes(data)
                files[str(kind)] = str(path)
        k0 = next(k for k in module.kernels if k.name == "k0")
        meta[label] = {"module": module.name, "kernels": [k.name for k in module.kernels],
                       "k0_params": [[p.llvm_type, p.size, p.arg_index, p.align]
                                     for p in k0.params],
                       "files": files,
                       "sizes": {k: Path(p).stat().st_size for k, p in files.items()}}
    return meta


CHILD = r"""
import json, statistics, sys, time
spec = json.loads(sys.argv[1])
t0 = time.perf_counter()
from nova.runtime.device import ModuleImages
from nova.runtime.selection import get_device
dev = get_device(spec["device"])
dev.mem_info()  # creates the CUDA context now, not inside the first load
t1 = time.perf_counter()
files = spec["files"]
read = lambda k: open(files[k], "rb").read() if k in files else None
kind = spec["kind"]
if kind == "ptx":
    images = ModuleImages(spec["module"], ptx=read("ptx").decode())
elif kind == "cubin":
    images = ModuleImages(spec["module"], cubin=read("cubin"), cubin_arch=dev.arch)
else:
    images = ModuleImages(spec["module"], cpu_object=read("cpuobj"))
t = time.perf_counter()
module = dev.load_module(images)
first = time.perf_counter() - t
t = time.perf_counter()
for name in spec["kernels"]:
    module.get_function(name)
functions = time.perf_counter() - t
t = time.perf_counter()
dev.load_module(images)
cached = time.perf_counter() - t
reloads = []
again = module
for _ in range(spec["reloads"]):
    t = time.perf_counter()
    # bypass the module cache: a new CUmodule / MCJIT engine (its key hashed, as a load does)
    again = dev._load(images, dev._module_key(images))
    for name in spec["kernels"]:
        again.get_function(name)
    reloads.append(time.perf_counter() - t)

import numpy as np
from nova.bundle.format import Kernel, KernelParam
k0 = Kernel("k0", (), tuple(KernelParam(*p) for p in spec["k0_params"]))
def computes_right(loaded):
    # k0 (weight 1.0): y = exp(a * x + y) on 64 elements, against NumPy
    x_host = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    x, y = dev.to_device(x_host), dev.to_device(np.full(64, 0.5, np.float32))
    dev.launch(loaded.get_function("k0", k0), 1, 64, [x, x, 0, 64, 1, y, y, 0, 64, 1, 0.75])
    dev.synchronize()
    want = np.exp(np.float32(0.75) * x_host + np.float32(0.5))
    return bool(np.allclose(y.numpy(), want, rtol=1e-5, atol=0))
print("RESULT " + json.dumps({
    "startup_s": t1 - t0, "first_s": first, "functions_s": functions, "cached_s": cached,
    "reload_s": statistics.median(reloads) if reloads else None,
    "loaded": getattr(module, "image_kind", kind),
    "verified": computes_right(module) and computes_right(again)}))
"""


def run_child(spec: dict, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True,
                          text=True, timeout=600, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {done.returncode}: {tail}"}


def variants(device: str, files: dict[str, str], jit_cache: Path) -> list[tuple[str, str, dict]]:
    """(label, image kind, extra environment) to measure for one module on `device`."""
    if device == "cpu":
        return [("cpuobj", "cpuobj", {})] if "cpuobj" in files else []
    out = []
    lazy = os.environ.get("CUDA_MODULE_LOADING", "LAZY")
    if "cubin" in files:
        out.append(("cubin", "cubin", {}))
        out.append(("cubin, eager", "cubin", {"CUDA_MODULE_LOADING": "EAGER"}))
    if "ptx" in files:
        out.append(("ptx, JIT cache off", "ptx", {"CUDA_CACHE_DISABLE": "1"}))
        out.append(("ptx, cache off, eager", "ptx",
                    {"CUDA_CACHE_DISABLE": "1", "CUDA_MODULE_LOADING": "EAGER"}))
        out.append(("ptx, JIT cache warm", "ptx",
                    {"CUDA_CACHE_DISABLE": "0", "CUDA_CACHE_PATH": str(jit_cache)}))
    return [(name, kind, {"CUDA_MODULE_LOADING": lazy, **env}) for name, kind, env in out]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per variant")
    parser.add_argument("--reloads", type=int, default=5, help="warm reloads per process")
    parser.add_argument("--kernels", type=int, default=50, help="kernels in the large module")
    parser.add_argument("--arch", default=None, help="GPU arch of the cubin (default: config)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from nova import config
    from nova.runtime.selection import cuda_status

    device = args.device
    if device == "auto":
        device = "cuda" if cuda_status().usable else "cpu"
    arch = args.arch or config.get().arch
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="nova-module-load-") as tmp:
        tmpdir = Path(tmp)
        meta = build_images(arch, args.kernels, tmpdir)
        jit_cache = tmpdir / "jit-cache"
        for label, info in meta.items():
            for name, kind, extra in variants(device, info["files"], jit_cache):
                env = {**os.environ, **extra}
                spec = {"device": device, "kind": kind, "module": info["module"],
                        "kernels": info["kernels"], "files": info["files"],
                        "k0_params": info["k0_params"],
                        "reloads": args.reloads}
                if "CUDA_CACHE_PATH" in extra:
                    run_child(spec, env)  # prime the private JIT cache
                runs = [run_child(spec, env) for _ in range(args.runs)]
                ok = [r for r in runs if "error" not in r]
                row = {"module": label, "kernels": len(info["kernels"]), "variant": name,
                       "image_bytes": info["sizes"].get(kind), "runs": runs}
                for key in ("startup_s", "first_s", "functions_s", "reload_s", "cached_s"):
                    row[key] = median([r[key] for r in ok if r.get(key) is not None])
                row["loaded"] = ok[0]["loaded"] if ok else None
                row["error"] = None if ok else runs[0]["error"]
                row["verified"] = bool(ok) and all(r["verified"] for r in runs if "error" not in r)
                what = f"{label} {name}"
                record(f"{what}: {row['error']}", row["error"] is None)
                record(f"{what}: a loaded module's k0 computes a wrong result",
                       row["error"] is not None or row["verified"])
                results.append(row)

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value * 1e3:9.2f}"

    print(f"\nDevice module load on {device} (median of {args.runs} fresh processes; ms)")
    head = (f"{'module':<7} {'kernels':>7} {'variant':<21} {'bytes':>9} {'startup':>9} "
            f"{'first':>9} {'+funcs':>9} {'reload':>9} {'cached':>9}")
    print(head)
    print("-" * len(head))
    for r in results:
        if r["error"] or not r["verified"]:
            why = r["error"] or "k0 of a loaded module computes a wrong result"
            print(f"{r['module']:<7} {r['kernels']:>7} {r['variant']:<21} FAILED: {why}")
            continue
        print(f"{r['module']:<7} {r['kernels']:>7} {r['variant']:<21} {r['image_bytes'] or 0:>9} "
              f"{ms(r['startup_s'])} {ms(r['first_s'])} {ms(r['functions_s'])} "
              f"{ms(r['reload_s'])} {ms(r['cached_s'])}")
    print("first: first load in a fresh process; +funcs: then looking up every kernel; reload: "
          "load + lookups again, bypassing Nova's module cache; cached: Nova's cache hit")
    if finish():
        return 1  # no result file for wrong results

    report = {
        "benchmark": "module_load", "date": date.today().isoformat(), "device": device,
        "arch": arch, "python": platform.python_version(), "machine": platform.machine(),
        "runs": args.runs, "reloads": args.reloads, "results": results,
    }
    if device == "cuda":
        from nova.runtime.selection import get_device

        report["device_name"] = get_device("cuda").properties.name
    path = args.json or ROOT / "bench" / "results" / f"module_load-{device}-{date.today()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

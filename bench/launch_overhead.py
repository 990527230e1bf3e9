"""Launch cost at the hardware limit: Nova's compiled launch path against its peers, in one run.

(a) Per-kernel cost of a compiled entry point launching N (default 1000) tiny kernels (an scf.for
    around `gpu.launch async`, all on one stream), and of the same entry captured as a graph and
    replayed (`mod.capture(...).launch()`), and of the entry's own calls run as an automatic graph
    (cuda: docs/async.md, "Automatic graphs"; the stream rows switch it off). Goals: <= 3.0 us per
    kernel on streams, <= 1.2 us with graph replay.
(b) Python -> compiled-entry call overhead for a one-kernel program on device-resident buffers
    (goal <= 10 us), beside an entry that launches nothing and, on cuda, the native floor: C++
    calling cuLaunchKernel + cuStreamSynchronize per call (bench/peers/launch_loop.cu "sync").
(py) Python kernels (issue 13): host time per launch of a cached `@nova.kernel` launch
    (`add1[1, 32](x)` on a device Buffer; goal <= 5 us) and of a prepared launch
    (`run = add1.prepare(x, grid=1, block=32)`, then `run(x)`; goal <= 3.5 us), each a loop of N
    launches and one synchronize.
Peers (cuda only, same process, same tiny kernel): a cuda.bindings cuLaunchKernel loop from
Python, a CuPy RawKernel loop, a numba-cuda `@cuda.jit` loop, a CUDA graph of N launches captured
with cuda.bindings, and Nova's device-layer `Device.launch` from Python.
(host) Nova's side of a Python-kernel launch without the driver's, on any machine: the cached
    and prepared launches above on a cuda device of tests' fake bindings whose cuLaunchKernel is
    a native no-op that counts launches (tests/runtime/native_fake_driver.py), the prepared
    launch's generated Python call (what its checked builtin falls back to), and the floors
    of the launcher's native call with prebuilt parameters and of a ctypes call (libc getpid).
    `--host-only` runs this section alone (no GPU needed; --host-launches per loop, default 10^5).

Every launch loop (Nova's entries, its Python kernels and the peers, the native C++ loop included)
runs a kernel that adds 1 to each of 32 counters; after timing, the counters must equal the
number of launches the loop made (the entry that launches nothing must leave them at 0), or the
row says WRONG. A Nova row that fails to run says FAILED (a peer that is not installed only
notes its error). Either is a failed check (bench/checks.py): exit 1, no JSON written. Runs
on the cpu device too (smaller defaults; Python kernels only, the peers need cuda), to
debug the script without a GPU:

    python bench/launch_overhead.py [--device cuda|cpu] [--kernels 1000] [--calls 2000]
                                    [--repeats 5] [--json bench/results/launch_overhead-<dev>.json]
                                    [--host-launches 100000] [--host-only]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import textwrap
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/checks.py, also when imported
import native_peer
from checks import finish, record
from native_peer import WrongResult

_BODY = """\
    %v = memref.load %x[%tx] : memref<32xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %x[%tx] : memref<32xf32>
    gpu.terminator"""
"""The tiny kernel body every entry launches (x[tid] += 1, 32 threads)."""


def _launch_loop(name: str, wait: bool) -> str:
    """An entry launching `%count` kernels chained through async tokens on one stream; with
    `wait`, the host waits for the last at the end, else the runtime joins the stream into the
    default stream when the entry returns."""
    body = textwrap.indent(_BODY, "  ")  # one level deeper, inside the scf.for
    tail = "  gpu.wait [%tn]\n" if wait else ""
    return f"""
func.func @{name}(%x: memref<32xf32>, %count: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %t0 = gpu.wait async
  %tn = scf.for %i = %c0 to %count step %c1 iter_args(%t = %t0) -> (!gpu.async.token) {{
    %t1 = gpu.launch async [%t] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
{body}
    }}
    scf.yield %t1 : !gpu.async.token
  }}
{tail}  return
}}
"""


def _one_launch(name: str, is_async: bool) -> str:
    """An entry with one launch: synchronous (the host waits), or async with its token unwaited."""
    head = "%t = gpu.launch async" if is_async else "gpu.launch"
    return f"""
func.func @{name}(%x: memref<32xf32>) {{
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  {head} blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
{_BODY}
  }}
  return
}}
"""


PROGRAM = (_launch_loop("launches", wait=True) + _one_launch("one", is_async=False)
           + _launch_loop("launches_nowait", wait=False) + _one_launch("one_async", is_async=True)
           + """
func.func @noop(%x: memref<32xf32>) {
  return
}
""")

PEER_PTX = """
.version 7.8
.target sm_80
.address_size 64
.visible .entry add1(.param .u64 x) {
  .reg .b32 %r<2>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [x];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
  ret;
}
"""

CUPY_SOURCE = r'''extern "C" __global__ void add1(float* x) { x[threadIdx.x] += 1.0f; }'''


def measure(fn: Callable[[], Any], repeats: int,
            clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Seconds per run of `fn` over `repeats` runs (after one warm-up): min, median."""
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return {"min": min(times), "median": statistics.median(times)}


class Results:
    """Rows of (section, name, us per unit) plus errors, printed as a table and saved."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, section: str, name: str, per_unit: dict[str, float] | None, unit: str,
            goal: float | None = None, note: str = "") -> None:
        row: dict[str, Any] = {"section": section, "name": name, "unit": unit, "goal_us": goal,
                               "note": note}
        if per_unit is not None:
            row["min_us"] = per_unit["min"] * 1e6
            row["median_us"] = per_unit["median"] * 1e6
        self.rows.append(row)

    def run(self, section: str, name: str, unit: str,
            body: Callable[[], tuple[dict[str, float], str]], goal: float | None = None,
            must_run: bool = True) -> None:
        """Time `body` (it returns the per-unit times and the verification's note). A row whose
        launches did not all run fails the benchmark; so does one that raises, unless
        `must_run` is off (a peer that is not installed: its error is only noted)."""
        try:
            times, note = body()
            record(f"{name}: {note}", not note.startswith("WRONG"))
            self.add(section, name, times, unit, goal, note)
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            failed = must_run or isinstance(exc, WrongResult)
            record(f"{name}: {detail}", not failed)
            self.add(section, name, None, unit, goal,
                     note=f"{'FAILED' if failed else 'error'}: {detail}")
            if "--debug" in sys.argv:
                traceback.print_exc()

    def print(self) -> None:
        print(f"{'section':<8} {'measurement':<48} {'min us':>10} {'median us':>10} "
              f"{'goal':>8}  unit / note")
        for r in self.rows:
            lo = f"{r['min_us']:10.2f}" if "min_us" in r else f"{'-':>10}"
            med = f"{r['median_us']:10.2f}" if "median_us" in r else f"{'-':>10}"
            goal = f"{r['goal_us']:8.1f}" if r["goal_us"] is not None else f"{'':>8}"
            tail = r["unit"] + (f"  {r['note']}" if r["note"] else "")
            print(f"{r['section']:<8} {r['name']:<48} {lo} {med} {goal}  {tail}")



def per(n: int, t: dict[str, float]) -> dict[str, float]:
    return {k: v / n for k, v in t.items()}


def counted(run: Callable[[], Any], n: int, repeats: int,
            read: Callable[[], np.ndarray]) -> tuple[dict[str, float], str]:
    """Time `run` (n launches of a kernel adding 1 to 32 counters, then a synchronize) and check
    that the counters read back equal the launches made (warm-up included)."""
    times = per(n, measure(run, repeats))
    return times, verify(read, n * (repeats + 1))


def verify(read: Callable[[], Any], expected: int) -> str:
    """The row's note: the 32 counters read back equal `expected` launches, or WRONG."""
    got = np.asarray(read()).ravel()
    if got.shape == (32,) and np.all(got == expected):
        return f"verified: {expected} launches ran"
    return f"WRONG: counters {got[:3].tolist()}... != {expected} launches"


def _zeros(dev: Any) -> Any:
    return dev.to_device(np.zeros(32, np.float32))


# --- Python kernels (issue 13) -----------------------------------------------------------------
def bench_python_kernels(res: Results, dev: Any, n: int, repeats: int) -> None:
    """A cached `@nova.kernel` launch and a prepared launch, verified like the peers."""
    import nova

    @nova.kernel
    def add1(x):  # type: ignore[no-untyped-def]
        i = nova.thread_id(0)
        x[i] += 1.0

    def cached() -> tuple[dict[str, float], str]:
        x = _zeros(dev)

        def run() -> None:
            for _ in range(n):
                add1[1, 32](x)
            dev.synchronize()
        return counted(run, n, repeats, x.numpy)

    res.run("py", f"nova @kernel cached launch add1[1, 32](x) x{n}", "us/launch", cached,
            goal=5.0)

    def prepared() -> tuple[dict[str, float], str]:
        x = _zeros(dev)
        launch = add1.prepare(x, grid=1, block=32)

        def run() -> None:
            for _ in range(n):
                launch(x)
            dev.synchronize()
        return counted(run, n, repeats, x.numpy)

    res.run("py", f"nova @kernel prepared launch run(x) x{n}", "us/launch", prepared, goal=3.5)


# --- host cost without a GPU (issue 13) --------------------------------------------------------
TESTS_RUNTIME = Path(__file__).resolve().parent.parent / "tests" / "runtime"
"""tests/runtime: the fake cuda bindings and the native fake driver the host section runs on."""


def _fake_cuda_device() -> tuple[Any, Any]:
    """A cuda device on tests' fake bindings whose launch module calls the native fake driver
    (tests/runtime/native_fake_driver.py: every driver function a native no-op, cuLaunchKernel
    counting its calls), and that driver."""
    sys.path.insert(0, str(TESTS_RUNTIME))
    try:
        from fake_cuda import FakeDriver
        from native_fake_driver import NativeFakeDriver
    finally:
        sys.path.remove(str(TESTS_RUNTIME))
    from nova.runtime.cuda import device as cuda_device_module

    class AnyKernel(FakeDriver):  # type: ignore[misc]
        """Finds every kernel of a loaded image."""

        def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple[Any, Any]:
            handle = next(self._ids)
            self.functions[handle] = name.decode()
            return self.CUresult.CUDA_SUCCESS, self.CUfunction(handle)

    real = cuda_device_module.load_bindings
    cuda_device_module.load_bindings = lambda: AnyKernel()
    try:
        dev = cuda_device_module.CudaDevice(0)
    finally:
        cuda_device_module.load_bindings = real
    driver = NativeFakeDriver()
    driver.bind(dev)
    return dev, driver


def bench_host_cost(res: Results, launches: int, repeats: int) -> None:
    """Nova's host time per Python-kernel launch without the driver's: the real launch path
    (guard, packing, the native launch function's context check and parameter array) on a cuda
    device whose cuLaunchKernel is a native no-op (`_fake_cuda_device`), so each row is what Nova
    adds to the driver's own launch cost (the native C++ loop's ~2.7-2.9 us on an H100). The
    floors: the launcher's native call with prebuilt parameters, and libc getpid() through ctypes
    (the fixed cost of any ctypes call). Each row checks the fake driver's launch counter. Timed
    in the thread's CPU time (nothing here waits), so a busy machine's preemptions do not count."""
    import ctypes.util

    import nova
    from nova.lang.api import KernelFunction

    def add1(x):  # type: ignore[no-untyped-def]
        i = nova.thread_id(0)
        x[i] += 1.0

    try:
        dev, driver = _fake_cuda_device()
    except Exception as exc:  # the harness needs tests/ and cuda-bindings: a note, not a failure
        res.add("host", "fake cuda device (tests/runtime)", None, "us/launch",
                note=f"error: {type(exc).__name__}: {exc}".splitlines()[0][:160])
        return
    kern = KernelFunction(add1)
    x = dev.to_device(np.zeros(32, np.float32))
    kern[1, 32](x)
    run = kern.prepare(x, grid=1, block=32)

    def counted_host(body: Callable[[], Any]) -> tuple[dict[str, float], str]:
        before = driver.last()[0]
        times = per(launches, measure(body, repeats, time.thread_time))
        made = driver.last()[0] - before
        expected = launches * (repeats + 1)
        ok = made == expected
        return times, (f"verified: {made} launches reached the driver" if ok else
                       f"WRONG: {made} launches reached the driver, not {expected}")

    def cached() -> None:
        for _ in range(launches):
            kern[1, 32](x)

    def prepared() -> None:
        for _ in range(launches):
            run(x)

    res.run("host", "cached launch add1[1, 32](x)", "us/launch", lambda: counted_host(cached))
    res.run("host", "prepared launch run(x)", "us/launch", lambda: counted_host(prepared))
    python_call = run.python_call  # the generated Python call the checked builtin falls back to

    def prepared_python() -> None:
        for _ in range(launches):
            python_call(x)

    res.run("host", "prepared launch, its Python call run.python_call(x)", "us/launch",
            lambda: counted_host(prepared_python))
    call, call_args = run.launcher.native_call(run.config,
                                               run.launcher.pack(x.ptr, x.ptr, 0, 32, 1))

    def native_call() -> None:
        for _ in range(launches):
            call(*call_args)

    res.run("host", "launcher's native call, parameters prebuilt", "us/launch",
            lambda: counted_host(native_call))
    getpid = ctypes.CDLL(ctypes.util.find_library("c") or None).getpid

    def ctypes_floor() -> tuple[dict[str, float], str]:
        def body() -> None:
            for _ in range(launches):
                getpid()
        times = per(launches, measure(body, repeats, time.thread_time))
        return times, ("verified: getpid() is the pid" if getpid() == os.getpid() else
                       "WRONG: getpid() is not the pid")

    res.run("host", "ctypes call floor: libc getpid()", "us/call", ctypes_floor)


# --- Nova --------------------------------------------------------------------------------------
def bench_nova(res: Results, dev: Any, n: int, calls: int, repeats: int) -> None:
    """Nova's compiled entries. Every row counts on fresh counters of its own and checks after
    timing that they equal the kernels its calls launched (warm-up included)."""
    import nova

    mod = nova.compile(PROGRAM, device=dev)
    launches = mod["launches"]
    # section a's stream rows measure launches made one by one: automatic graphs (which would
    # replay the whole loop as one graph from the third identical call) stay off there, and
    # get a row of their own
    replayable = launches.auto_graphs
    launches.auto_graphs = mod["launches_nowait"].auto_graphs = False

    def total() -> tuple[dict[str, float], str]:
        x = _zeros(dev)
        return counted(lambda: launches(x, n), n, repeats, x.numpy)

    res.run("a", f"nova entry, {n} async launches (total / N)", "us/kernel", total, goal=3.0)

    def automatic() -> tuple[dict[str, float], str]:
        launches.auto_graphs = True
        try:
            return total()
        finally:
            launches.auto_graphs = False

    if replayable:
        res.run("a", f"nova entry, {n} async launches, automatic graph (total / N)",
                "us/kernel", automatic, goal=1.2)

    def marginal() -> tuple[dict[str, float], str]:
        x = _zeros(dev)
        full = measure(lambda: launches(x, n), repeats)
        empty = measure(lambda: launches(x, 0), repeats)
        times = {k: max(full[k] - empty[k], 0.0) / n for k in full}
        return times, verify(x.numpy, n * (repeats + 1))

    res.run("a", f"nova entry, {n} async launches (marginal)", "us/kernel", marginal, goal=3.0)

    def graph() -> tuple[dict[str, float], str]:
        x = _zeros(dev)
        captured = mod.capture("launches", x, n)  # records the launches, runs none of them
        stream = dev.default_stream

        def replay() -> None:
            captured.launch(stream)
            stream.synchronize()

        try:
            times = per(n, measure(replay, repeats))
            counters = captured.buffers[0] or x  # the capture-time buffer the replays update
            return times, verify(counters.numpy, n * (repeats + 1))
        finally:
            captured.close()

    res.run("a", f"nova graph replay of the entry ({n} kernel nodes)", "us/kernel", graph,
            goal=1.2)
    one, noop = mod["one"], mod["noop"]

    def loop_calls(entry: Any, kernels: int) -> Callable[[], tuple[dict[str, float], str]]:
        def body() -> tuple[dict[str, float], str]:
            x = _zeros(dev)

            def run() -> None:
                for _ in range(calls):
                    entry(x)
            times = per(calls, measure(run, repeats))
            return times, verify(x.numpy, kernels * calls * (repeats + 1))
        return body

    res.run("b", "nova entry call, one kernel, device buffers", "us/call", loop_calls(one, 1),
            goal=10.0)
    res.run("b", "nova entry call, no kernel (call overhead only)", "us/call",
            loop_calls(noop, 0))

    def raw_one() -> tuple[dict[str, float], str]:
        """The same call of @one through the bare ctypes call (arguments bound once by a normal
        call): what the Python argument handling adds is the difference to the row above."""
        x = _zeros(dev)
        one(x)
        plan = one._plans[0]
        call, address, args, results = one._call_entry, one.address, plan.args, plan.results

        def run() -> None:
            for _ in range(calls):
                call(address, args, results)
        times = per(calls, measure(run, repeats))
        mod.synchronize()
        return times, verify(x.numpy, 1 + calls * (repeats + 1))

    res.run("b", "nova @one via the raw ctypes call (diagnostic)", "us/call", raw_one)
    one_async = mod["one_async"]

    def stream_ordered() -> tuple[dict[str, float], str]:
        x = _zeros(dev)

        def run() -> None:
            for _ in range(calls):
                one_async(x)
            mod.synchronize()
        times = per(calls, measure(run, repeats))
        return times, verify(x.numpy, calls * (repeats + 1))

    res.run("b", "nova entry call, one async kernel, no wait (stream reused)", "us/call",
            stream_ordered)
    nowait = mod["launches_nowait"]

    def enqueue_only() -> tuple[dict[str, float], str]:
        """Host time of the entry that enqueues the same N launches and returns without waiting
        (the runtime joins its stream into the default stream): the launch loop's host cost."""
        x = _zeros(dev)
        times = []
        nowait(x, n)
        mod.synchronize()
        for _ in range(repeats):
            start = time.perf_counter()
            nowait(x, n)
            times.append(time.perf_counter() - start)
            mod.synchronize()
        return ({"min": min(times) / n, "median": statistics.median(times) / n},
                verify(x.numpy, n * (repeats + 1)))

    res.run("a", f"nova entry, {n} async launches, host enqueue time only", "us/kernel",
            enqueue_only)

    def gpu_span() -> tuple[dict[str, float], str]:
        """GPU time from before the first to after the last of the N kernels (timing events on
        the default stream around a call of the no-wait entry, whose stream forks from and joins
        back into it). Equal to the host enqueue time when the GPU waits for the host's launch
        calls; the graph replay row shows how fast the GPU runs the same kernels when fed."""
        x = _zeros(dev)
        times = []
        for _ in range(repeats + 1):
            start = dev.create_event(timing=True)
            end = dev.create_event(timing=True)
            start.record(dev.default_stream)
            nowait(x, n)
            end.record(dev.default_stream)
            end.synchronize()
            times.append(start.elapsed_ms(end) / 1e3)
            start.close()
            end.close()
        times = times[1:]
        mod.synchronize()
        return ({"min": min(times) / n, "median": statistics.median(times) / n},
                verify(x.numpy, n * (repeats + 1)))

    if dev.kind == "cuda":
        res.run("a", f"nova entry, {n} async launches, GPU time (events)", "us/kernel",
                gpu_span)
    mod.close()


def bench_device_layer(res: Results, dev: Any, n: int, repeats: int) -> None:
    """Nova's Python device layer launching the same kernel (Device.launch per kernel)."""
    from nova.bundle.format import Kernel, KernelParam
    from nova.runtime.device import ModuleImages

    kernel = Kernel("add1", (), (KernelParam("ptr", 8, 0),))
    module = dev.load_module(ModuleImages("bench_peer", ptx=PEER_PTX))
    fn = module.get_function("add1", kernel)
    x = _zeros(dev)
    stream = dev.create_stream()

    def run() -> None:
        for _ in range(n):
            dev.launch(fn, 1, 32, [x], stream=stream)
        stream.synchronize()

    res.run("peer", f"nova Device.launch from Python x{n}", "us/kernel",
            lambda: counted(run, n, repeats, x.numpy))


# --- peers (cuda only) -------------------------------------------------------------------------
def _check(result: Any) -> Any:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {int(err)}")
    rest = result[1:] if isinstance(result, tuple) else ()
    return rest[0] if len(rest) == 1 else rest


def bench_cuda_peers(res: Results, dev: Any, n: int, repeats: int) -> None:
    from cuda.bindings import driver as cu

    from nova.bundle.format import Kernel, KernelParam
    from nova.runtime.device import ModuleImages

    dev.driver.make_current()
    kernel = Kernel("add1", (), (KernelParam("ptr", 8, 0),))
    fn = dev.load_module(ModuleImages("bench_peer", ptx=PEER_PTX)).get_function("add1", kernel)
    x = _zeros(dev)
    arg = ctypes.c_void_p(x.ptr)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
    address = ctypes.addressof(params)
    stream = _check(cu.cuStreamCreate(1))

    def loop() -> None:
        for _ in range(n):
            cu.cuLaunchKernel(fn.cu, 1, 1, 1, 32, 1, 1, 0, stream, address, 0)
        _check(cu.cuStreamSynchronize(stream))

    res.run("peer", f"cuda.bindings cuLaunchKernel loop x{n}", "us/kernel",
            lambda: counted(loop, n, repeats, x.numpy), must_run=False)
    spare = _zeros(dev)  # the rows below count on buffers of their own (kept alive here)
    graph_x = _zeros(dev)
    arg.value = spare.ptr

    def one_call() -> tuple[dict[str, float], str]:
        def run() -> None:
            for _ in range(n):
                cu.cuLaunchKernel(fn.cu, 1, 1, 1, 32, 1, 1, 0, stream, address, 0)
                cu.cuStreamSynchronize(stream)
        return counted(run, n, repeats, spare.numpy)

    res.run("peer", "cuda.bindings launch + sync per call", "us/call", one_call, must_run=False)

    def graph() -> tuple[dict[str, float], str]:
        arg.value = graph_x.ptr  # the launches below copy the parameter when captured
        _check(cu.cuStreamBeginCapture(
            stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
        for _ in range(n):
            _check(cu.cuLaunchKernel(fn.cu, 1, 1, 1, 32, 1, 1, 0, stream, address, 0))
        g = _check(cu.cuStreamEndCapture(stream))
        exe = _check(cu.cuGraphInstantiate(g, 0))

        def replay() -> None:
            cu.cuGraphLaunch(exe, stream)
            _check(cu.cuStreamSynchronize(stream))

        try:
            return counted(replay, n, repeats, graph_x.numpy)
        finally:
            cu.cuGraphExecDestroy(exe)
            cu.cuGraphDestroy(g)

    res.run("peer", f"CUDA graph of {n} launches (cuda.bindings)", "us/kernel", graph,
            must_run=False)

    def cupy_loop() -> tuple[dict[str, float], str]:
        import cupy as cp

        k = cp.RawKernel(CUPY_SOURCE, "add1")
        y = cp.zeros(32, cp.float32)
        s = cp.cuda.Stream(non_blocking=True)

        def run() -> None:
            with s:
                for _ in range(n):
                    k((1,), (32,), (y,))
            s.synchronize()

        return counted(run, n, repeats, y.get)

    res.run("peer", f"CuPy RawKernel loop x{n}", "us/kernel", cupy_loop, must_run=False)

    def numba_loop() -> tuple[dict[str, float], str]:
        if not hasattr(np, "row_stack"):
            # Compatibility shim for this peer alone (Nova never uses it): numba-cuda releases
            # that predate NumPy's removal of np.row_stack call it while importing; it was an
            # alias of np.vstack. Any further incompatibility still shows as this row's error.
            setattr(np, "row_stack", np.vstack)  # noqa: B010
        from numba import cuda

        @cuda.jit
        def add1(x):  # type: ignore[no-untyped-def]
            x[cuda.threadIdx.x] += 1.0

        y = cuda.to_device(np.zeros(32, np.float32))
        s = cuda.stream()

        def run() -> None:
            for _ in range(n):
                add1[1, 32, s](y)
            s.synchronize()

        return counted(run, n, repeats, y.copy_to_host)

    res.run("peer", f"numba-cuda @cuda.jit loop x{n}", "us/kernel", numba_loop, must_run=False)
    cu.cuStreamDestroy(stream)
    spare.free()
    graph_x.free()
    res.run("peer", f"native C++ cuLaunchKernel loop x{n} (nvcc)", "us/kernel",
            lambda: native_loop(n, repeats), must_run=False)
    res.run("peer", f"native C++ loop x{n}, memref-shaped params (5)", "us/kernel",
            lambda: native_loop(n, repeats, memref=True), must_run=False)
    res.run("peer", f"native C++ loop x{n}, memref params, host enqueue time only", "us/kernel",
            lambda: native_loop(n, repeats, memref=True, enqueue=True), must_run=False)


def native_loop(n: int, repeats: int, memref: bool = False, sync: bool = False,
                enqueue: bool = False) -> tuple[dict[str, float], str]:
    """Time bench/peers/launch_loop.cu's cuLaunchKernel loop (built with nvcc by
    bench/native_peer.py); with `sync`, a cuStreamSynchronize after every launch (the native
    floor of goal (b)). The peer checks its own counters (WrongResult when a launch did not
    run)."""
    modes = [*(["memref"] if memref else []), *(["sync"] if sync else []),
             *(["enqueue"] if enqueue else [])]
    seconds = [us * 1e-6 for us in native_peer.run("launch_loop", str(n), str(repeats), *modes)]
    times = {"min": min(seconds), "median": statistics.median(seconds)}
    return times, f"verified by the peer: {100 + n * repeats} launches ran"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="cuda, cpu or auto (default)")
    parser.add_argument("--kernels", type=int, default=None, help="launches per entry call")
    parser.add_argument("--calls", type=int, default=None, help="entry calls for (b)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--host-launches", type=int, default=100_000,
                        help="launches per timed loop of the host section (fake driver)")
    parser.add_argument("--host-only", action="store_true",
                        help="only the host section: Nova's launch cost without a GPU")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failures")
    args = parser.parse_args(argv)
    if args.host_only:
        return host_only(args.host_launches, args.repeats)

    import nova

    dev = nova.get_device(args.device)
    gpu = dev.kind == "cuda"
    n = args.kernels or (1000 if gpu else 200)
    calls = args.calls or (2000 if gpu else 200)
    res = Results()
    bench_python_kernels(res, dev, n, args.repeats)
    bench_nova(res, dev, n, calls, args.repeats)
    if gpu:
        res.run("b", "native C++ launch + sync per call (nvcc)", "us/call",
                lambda: native_loop(calls, args.repeats, sync=True), must_run=False)
        res.run("b", "native C++ launch + sync per call, memref params (5)", "us/call",
                lambda: native_loop(calls, args.repeats, memref=True, sync=True),
                must_run=False)
        bench_device_layer(res, dev, n, args.repeats)
        bench_cuda_peers(res, dev, n, args.repeats)
    bench_host_cost(res, args.host_launches, args.repeats)
    skipped = [] if gpu else ["peers (CuPy, numba-cuda, cuda.bindings, native C++, "
                              "Device.launch of PTX): they need a cuda device"]
    print(f"device: {dev.kind}:{dev.index} {dev.name!r}; {n} kernels per entry, {calls} calls, "
          f"{args.repeats} repeats (min and median of the repeats)")
    res.print()
    for line in skipped:
        print(f"skipped: {line}")
    if finish():
        print("FAILED: the rows above marked WRONG or FAILED did not run all their launches; "
              "no result file written")
        return 1
    path = args.json or (Path(__file__).parent / "results" / f"launch_overhead-{dev.kind}.json")
    record_ = {
        "benchmark": "launch_overhead",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": {"kind": dev.kind, "index": dev.index, "name": dev.name, "arch": dev.arch},
        "host": {"python": platform.python_version(), "machine": platform.machine()},
        "kernels": n, "calls": calls, "repeats": args.repeats,
        "rows": res.rows,
        "skipped": skipped,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record_, indent=1))
    print(f"wrote {path}")
    return 0


def host_only(launches: int, repeats: int) -> int:
    """`--host-only`: the host section alone, printed (no result file)."""
    res = Results()
    bench_host_cost(res, launches, repeats)
    print(f"host section: {launches} launches per loop, {repeats} repeats (min and median)")
    res.print()
    return finish()


if __name__ == "__main__":
    sys.exit(main())

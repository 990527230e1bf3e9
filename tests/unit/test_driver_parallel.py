"""Parallel compilation of a split source (nova.compiler.parallel): the bundle is byte-identical
to a serial compile whatever the number of workers, a module's error comes back as the located
NovaError a serial compile raises, a dead worker or an interrupt does not break the compiler,
and NOVA_COMPILE_JOBS decides how many workers run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from nova import config
from nova.compiler import parallel
from nova.compiler.driver import CompileOptions, compile_source
from nova.compiler.parallel import CompileJobsError, SplitSource, split_text
from nova.errors import NovaError

# Two device modules (the second with two kernels) and a host function launching all three.
PROGRAM = """\
module attributes {gpu.container_module} {
  gpu.module @scale {
    gpu.func @scale(%buf: memref<64xf32>, %factor: f32) kernel {
      %t = gpu.thread_id x
      %v = memref.load %buf[%t] : memref<64xf32>
      %s = arith.mulf %v, %factor : f32
      memref.store %s, %buf[%t] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @pair {
    gpu.func @add_one(%buf: memref<64xf32>) kernel {
      %t = gpu.thread_id x
      %one = arith.constant 1.0 : f32
      %v = memref.load %buf[%t] : memref<64xf32>
      %s = arith.addf %v, %one : f32
      memref.store %s, %buf[%t] : memref<64xf32>
      gpu.return
    }
    gpu.func @square(%buf: memref<64xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %buf[%t] : memref<64xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %buf[%t] : memref<64xf32>
      gpu.return
    }
  }
  func.func @run(%buf: memref<64xf32>, %factor: f32) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @scale::@scale blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%buf : memref<64xf32>, %factor : f32)
    gpu.launch_func @pair::@add_one blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%buf : memref<64xf32>)
    gpu.launch_func @pair::@square blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%buf : memref<64xf32>)
    return
  }
}
"""
SPANS = [("scale", 1, 9), ("pair", 10, 26)]
OPTIONS = CompileOptions(arch="sm_90", ptx=True, cubin=True, cpu_image=True, check_bounds=False)


@pytest.fixture(autouse=True)
def _no_cache() -> Iterator[None]:
    with config.scoped(cache_enabled=False):
        yield
    parallel.shutdown()  # the next test (or process) starts its own workers


def _compile(text: str, jobs: str, monkeypatch: pytest.MonkeyPatch,
             options: CompileOptions = OPTIONS) -> tuple[bytes, dict[str, float]]:
    monkeypatch.setenv("NOVA_COMPILE_JOBS", jobs)
    split = split_text(text, SPANS)
    assert split is not None
    result = compile_source(text, "prog.mlir", options, split=split)
    return result.bundle, result.timings


def _error(text: str, jobs: str, monkeypatch: pytest.MonkeyPatch) -> NovaError:
    with pytest.raises(NovaError) as info:
        _compile(text, jobs, monkeypatch)
    return info.value


def test_split_keeps_every_line_in_place() -> None:
    split = split_text(PROGRAM, SPANS)
    assert split is not None and [m.name for m in split.modules] == ["scale", "pair"]
    whole = PROGRAM.split("\n")
    host = split.host.split("\n")
    assert len(host) == len(whole)
    for line in ("func.func @run", "gpu.launch_func @pair::@square", "gpu.func @square"):
        assert [i for i, t in enumerate(host) if line in t] == \
               [i for i, t in enumerate(whole) if line in t]
    assert "arith.mulf %v, %v" not in split.host  # kernel bodies are the workers'
    for module, (_, first, last) in zip(split.modules, SPANS, strict=True):
        lines = module.text.split("\n")
        assert lines[first:last + 1] == whole[first:last + 1]
        assert not any(lines[1:first]) and lines[0] == whole[0]


def test_split_refuses_layouts_it_cannot_keep() -> None:
    assert split_text("gpu.module @scale {\n}\n", [("scale", 0, 1)]) is None  # no container
    assert split_text(PROGRAM, [("other", 1, 9)]) is None  # not that module's line
    assert split_text(PROGRAM, [("pair", 10, 26), ("scale", 1, 9)]) is None  # out of order
    assert split_text(PROGRAM, [("scale", 1, 9), ("pair", 9, 26)]) is None  # overlapping
    assert split_text(PROGRAM, [("scale", 1, 1)]) is None  # empty
    assert split_text(PROGRAM, [("pair", 10, 99)]) is None  # past the end
    multiline = PROGRAM.replace("%factor: f32) kernel {", "%factor: f32)\n      kernel {", 1)
    assert split_text(multiline, [("scale", 1, 10)]) is None  # signature over two lines


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_parallel_bundle_is_byte_identical_to_serial(jobs: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    serial, serial_timings = _compile(PROGRAM, "1", monkeypatch)
    assert "modules" not in serial_timings
    bundle, timings = _compile(PROGRAM, jobs, monkeypatch)
    assert bundle == serial
    assert timings["modules"] > 0 and timings["parse (workers)"] > 0
    cpu_only = CompileOptions(arch="sm_90", ptx=False, cpu_image=True, check_bounds=False)
    assert _compile(PROGRAM, jobs, monkeypatch, cpu_only)[0] == \
        _compile(PROGRAM, "1", monkeypatch, cpu_only)[0]


@pytest.mark.parametrize(("old", "new"), [
    ("%s = arith.addf %v, %one : f32", "%s = arith.bogus %v, %one : f32"),  # unknown op
    ("%s = arith.mulf %v, %v : f32\n      memref.store %s, %buf[%t]",
     "%s = arith.mulf %v, %v : f32\n      memref.store %s, %buf[%t, %t]"),  # verifier
    ("%s = arith.mulf %v, %factor : f32", "%s = arith.mulf %v, %nope : f32"),  # undefined
])
def test_a_module_error_is_the_serial_located_error(old: str, new: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    text = PROGRAM.replace(old, new)
    assert text != PROGRAM
    serial = _error(text, "1", monkeypatch)
    parallel_error = _error(text, "2", monkeypatch)
    assert type(parallel_error) is type(serial)
    assert str(parallel_error) == str(serial)
    assert "prog.mlir:" in str(serial)


def test_a_host_error_is_located_and_the_pool_survives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = PROGRAM.replace("args(%buf : memref<64xf32>, %factor : f32)",
                           "args(%buf : memref<64xf32>)")
    serial = _error(text, "1", monkeypatch)
    assert str(_error(text, "2", monkeypatch)) == str(serial)
    assert _compile(PROGRAM, "2", monkeypatch)[0] == _compile(PROGRAM, "1", monkeypatch)[0]


def _die(*args: object) -> object:
    os._exit(3)


def test_a_dead_worker_is_compiled_again_here(monkeypatch: pytest.MonkeyPatch) -> None:
    serial = _compile(PROGRAM, "1", monkeypatch)[0]
    parallel.shutdown()
    monkeypatch.setattr(parallel, "_work", _die)  # the workers are forked after this
    assert _compile(PROGRAM, "2", monkeypatch)[0] == serial
    monkeypatch.undo()
    assert _compile(PROGRAM, "2", monkeypatch)[0] == serial  # a new pool works again


def test_no_fork_possible_compiles_serially(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork(workers: int) -> object:
        raise OSError(11, "Resource temporarily unavailable")

    serial = _compile(PROGRAM, "1", monkeypatch)[0]
    parallel.shutdown()
    monkeypatch.setattr(parallel, "_get_pool", no_fork)
    parallel.prestart(1 << 20)  # no error either
    bundle, timings = _compile(PROGRAM, "2", monkeypatch)
    assert bundle == serial and "modules" not in timings


def test_a_pool_broken_between_compiles_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    serial, timings = _compile(PROGRAM, "2", monkeypatch)
    assert "modules" in timings
    pool = parallel._pool
    assert pool is not None
    victim = next(iter(pool._processes.values()))  # type: ignore[attr-defined]
    victim.kill()
    victim.join()
    bundle, timings = _compile(PROGRAM, "2", monkeypatch)
    assert bundle == serial and "modules" in timings
    assert parallel._pool is not pool


def test_an_interrupt_stops_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object) -> object:
        raise KeyboardInterrupt

    _compile(PROGRAM, "2", monkeypatch)
    pool = parallel._pool
    assert pool is not None
    monkeypatch.setattr(parallel, "_result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _compile(PROGRAM, "2", monkeypatch)
    assert parallel._pool is None
    monkeypatch.undo()
    assert _compile(PROGRAM, "2", monkeypatch)[0] == _compile(PROGRAM, "1", monkeypatch)[0]


def test_an_interrupt_while_the_host_part_compiles_stops_the_workers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nova.backends.host import lower

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    _compile(PROGRAM, "2", monkeypatch)
    monkeypatch.setattr(lower, "lower_host", interrupted)  # the host-llvm stage's lowering
    with pytest.raises(KeyboardInterrupt):
        _compile(PROGRAM, "2", monkeypatch)
    assert parallel._pool is None


def test_workers_use_the_configuration_of_the_compiling_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU-device lowering reads NOVA_CPU_ARCH / NOVA_CPU_REGIONS: a worker forked before a
    change compiles with the configuration in force when the task is sent."""
    cpu_only = CompileOptions(arch="sm_90", ptx=False, cpu_image=True, check_bounds=False)
    _compile(PROGRAM, "2", monkeypatch, cpu_only)  # the pool exists from here on
    with config.scoped(cpu_arch="generic"):
        generic = _compile(PROGRAM, "2", monkeypatch, cpu_only)[0]
        assert generic == _compile(PROGRAM, "1", monkeypatch, cpu_only)[0]
    assert generic != _compile(PROGRAM, "2", monkeypatch, cpu_only)[0]


ORPHAN = """\
import os, sys
from nova.compiler import parallel
os.environ["NOVA_COMPILE_JOBS"] = "2"
parallel.prestart(1 << 20)
pool = parallel._pool
print(" ".join(str(p) for p in pool._processes), flush=True)
os.kill(os.getpid(), 9)
"""


def test_workers_end_when_their_process_is_killed(tmp_path: os.PathLike[str]) -> None:
    """A compiling process killed outright leaves no worker behind (nor a pipe held open)."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(src)}, check=False)
    assert done.returncode == -9, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def test_compilations_in_several_threads_share_the_workers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    serial = _compile(PROGRAM, "1", monkeypatch)[0]
    split = split_text(PROGRAM, SPANS)
    monkeypatch.setenv("NOVA_COMPILE_JOBS", "2")

    def compile_once(i: int) -> bytes:
        return compile_source(PROGRAM, "prog.mlir", OPTIONS, split=split).bundle

    with ThreadPoolExecutor(max_workers=3) as threads:
        bundles = list(threads.map(compile_once, range(6)))
    assert bundles == [serial] * 6


def test_jobs_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    split = split_text(PROGRAM, SPANS)
    assert split is not None
    big = SplitSource(split.host, tuple(parallel.ModuleSource(m.name, m.text + " " * (64 << 10))
                                        for m in split.modules))
    for setting, expected in (("1", 1), ("0", None), ("auto", None), ("", None), ("2", 2),
                              ("9", 2)):
        monkeypatch.setenv("NOVA_COMPILE_JOBS", setting)
        if expected is not None:
            assert parallel.jobs(big) == expected
    monkeypatch.setenv("NOVA_COMPILE_JOBS", "auto")
    monkeypatch.setattr(parallel, "cpu_count", lambda: 16)
    assert parallel.jobs(big) == 2 and parallel.jobs(split) == 1  # small: not worth a worker
    monkeypatch.setattr(parallel, "cpu_count", lambda: 2)
    assert parallel.jobs(big) == 1  # two CPUs: the workers' imports cost more than they save
    for bad in ("many", "-2"):
        monkeypatch.setenv("NOVA_COMPILE_JOBS", bad)
        with pytest.raises(CompileJobsError, match="NOVA_COMPILE_JOBS"):
            parallel.jobs(big)


def test_dumps_and_earlier_targets_compile_serially(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: os.PathLike[str]) -> None:
    monkeypatch.setenv("NOVA_COMPILE_JOBS", "2")
    split = split_text(PROGRAM, SPANS)
    with config.scoped(dump_dir=tmp_path):
        result = compile_source(PROGRAM, "prog.mlir", OPTIONS, split=split)
    assert "modules" not in result.timings
    ptx = compile_source(PROGRAM, "prog.mlir", CompileOptions(emit="ptx"), split=split)
    assert "modules" not in ptx.timings and set(ptx.output) == {"scale", "pair"}

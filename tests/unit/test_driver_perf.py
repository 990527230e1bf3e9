"""Driver behaviour that the compile-time work relies on: background ptxas, dumps that do not
change the bundle, and the timings of background stages."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from driver_programs import PROGRAM

from nova import config
from nova.backends.nvptx import ptx as nvptx
from nova.bundle.reader import PayloadKind, read_bundle
from nova.compiler import stages as driver_stages
from nova.compiler.driver import CompileOptions, compile_source
from nova.errors import BackendError


def _compile(**scoped: object) -> bytes:
    with config.scoped(cache_enabled=False, **scoped):
        return compile_source(PROGRAM, "scale.mlir", CompileOptions()).bundle


def test_dumping_every_stage_leaves_the_bundle_unchanged(tmp_path: Path) -> None:
    plain = _compile(dump_dir=None)
    dumped = _compile(dump_dir=tmp_path)
    assert dumped == plain  # the host module printed before embedding used to keep `external`
    assert (tmp_path / "11-nova.nova").read_bytes() == plain
    read_bundle(dumped)  # the descriptor is defined: the bundle validates


@pytest.fixture
def slow_ptxas(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fake ptxas that takes 0.3 s and records the thread it ran on."""
    threads: list[str] = []

    def fake(ptx: str, arch: str = "sm_90", opt_level: int = 3) -> bytes:
        threads.append(threading.current_thread().name)
        time.sleep(0.3)
        return b"CUBIN:" + arch.encode()

    monkeypatch.setattr(nvptx, "assemble_cubin", fake)
    return threads


def test_ptxas_runs_in_the_background_and_reports_its_own_time(slow_ptxas: list[str]) -> None:
    with config.scoped(cache_enabled=False, dump_dir=None):
        result = compile_source(PROGRAM, "scale.mlir", CompileOptions())
    assert slow_ptxas and all(name.startswith("nova-ptxas") for name in slow_ptxas)
    assert result.timings["cubin"] >= 0.3  # the ptxas run's wall time, not the submission's
    bundle = read_bundle(result.bundle)
    assert bundle.payload("scale_kernel", PayloadKind.CUBIN) == b"CUBIN:sm_90"


def test_emit_cubin_waits_for_ptxas(slow_ptxas: list[str]) -> None:
    with config.scoped(cache_enabled=False, dump_dir=None):
        result = compile_source(PROGRAM, "scale.mlir", CompileOptions(emit="cubin"))
    assert result.output == {"scale_kernel": b"CUBIN:sm_90"}


def test_ptxas_errors_still_fail_the_compilation(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(ptx: str, arch: str = "sm_90", opt_level: int = 3) -> bytes:
        raise BackendError("ptxas failed (exit 255): bad ptx")

    monkeypatch.setattr(nvptx, "assemble_cubin", failing)
    with config.scoped(cache_enabled=False, dump_dir=None), \
            pytest.raises(BackendError, match="ptxas failed"):
        compile_source(PROGRAM, "scale.mlir", CompileOptions())


def test_finish_cubins_is_idempotent() -> None:
    c = driver_stages.Compilation("", "x.mlir", CompileOptions())
    assert driver_stages.finish_cubins(c) == {}
    assert c.background_timings == {}


def test_compile_in_a_forked_child_after_a_compile_in_the_parent(tmp_path: Path) -> None:
    import multiprocessing

    _compile(dump_dir=None)  # the parent's ptxas pool exists now
    ctx = multiprocessing.get_context("fork")
    out = tmp_path / "child.nova"
    child = ctx.Process(target=lambda: out.write_bytes(_compile(dump_dir=None)))
    child.start()
    child.join(120)
    assert child.exitcode == 0  # the child's threads are new, not the parent's dead ones
    assert out.read_bytes() == _compile(dump_dir=None)


def test_bundles_are_reproducible_within_a_process() -> None:
    # a shared x86 target machine made later host objects differ from the first one
    first = _compile(dump_dir=None)
    assert all(_compile(dump_dir=None) == first for _ in range(3))

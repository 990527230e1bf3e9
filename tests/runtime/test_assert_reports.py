"""Device assertions report as CUDA does: `FILE:LINE: FUNCTION: block: [x,y,z], thread: [x,y,z]
Assertion `MSG` failed.` on stderr for every failing thread, with FILE/LINE/FUNCTION from the op's
location as upstream MLIR resolves it (nova.ir.locations.assert_site); on the CPU device the
block's other threads run on until they finish or fail; then the run fails as before (a
KernelFault naming the first failure). GPU variants run in child processes (a CUDA assert loses
the context) and skip without a usable GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from assert_programs import LOCATIONS, converged, diverging, with_barrier

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _run(tmp_path: Path, text: str, device: str) -> subprocess.CompletedProcess[str]:
    if device == "cuda":
        from nova.runtime.selection import cuda_status

        if not cuda_status().usable:
            pytest.skip(f"no usable CUDA device: {cuda_status().reason}")
    path = tmp_path / "prog.mlir"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "nova", "run", str(path), "--device", device],
                          capture_output=True, text=True, timeout=300, check=False)


def _reports(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if "Assertion `" in line)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("loc", "site"), LOCATIONS, ids=[s for _, s in LOCATIONS])
def test_every_thread_reports_with_upstreams_site(tmp_path: Path, device: str, loc: str,
                                                   site: str) -> None:
    done = _run(tmp_path, converged(loc), device)
    assert done.returncode == 1, done.stderr
    output = done.stdout + done.stderr
    site = site.replace("PROG", str(tmp_path / "prog.mlir"))
    assert _reports(output) == [
        f"{site}: block: [0,0,0], thread: [{t},0,0] Assertion `both fail` failed." for t in (0, 1)]
    if device == "cpu":  # CUDA flushes device printf at the failing synchronisation, maybe not
        assert sorted(line for line in done.stdout.splitlines() if "print" in line) == [
            f"thread {t}: print before the assertion" for t in (0, 1)]
    assert "after" not in output and "unreachable" not in output
    assert "Traceback" not in done.stderr


def test_cpu_threads_run_on_past_other_threads_failures(tmp_path: Path) -> None:
    done = _run(tmp_path, diverging(), "cpu")
    assert done.returncode == 1
    assert _reports(done.stderr) == [
        f"{tmp_path / 'prog.mlir'}:{line}: (unknown): block: [1,0,0], thread: [{t},0,0] "
        f"Assertion `odd thread` failed." for t, line in ((1, 14), (3, 14))]
    # block 2 may run on another worker thread at the same time as block 1 (as on the GPU)
    assert sorted(line for line in done.stdout.splitlines() if "block 2" not in line) == [
        "block 0 thread 0 done", "block 0 thread 1 done", "block 0 thread 2 done",
        "block 0 thread 3 done", "block 1 thread 0 done", "block 1 thread 2 done"]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("nova-run: error: kernel @main_kernel failed: assertion failed: "
                           "odd thread (")
    assert "in block (1,0,0), thread (1,0,0)" in last


def test_cpu_barrier_after_a_failed_thread_reports_the_assertion(tmp_path: Path) -> None:
    done = _run(tmp_path, with_barrier(), "cpu")
    assert done.returncode == 1
    assert len(_reports(done.stderr)) == 1
    assert "barrier divergence" not in done.stderr
    assert "assertion failed: thread 2 stops" in done.stderr
    assert done.stdout.splitlines() == []
